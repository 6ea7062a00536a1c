package main

import (
	"strings"
	"testing"
)

const sample = `# command: go test -bench ^BenchmarkAlloc$
# cores: 16
goos: linux
cpu: Some CPU
BenchmarkAlloc/large/bemalloc/threads=1-16   100  200.0 ns/op  10000000 ops/s  56.00 peak-MB  2.000 regs  0 B/op  0 allocs/op
BenchmarkAlloc/large/bemalloc/threads=1-16   100  100.0 ns/op  20000000 ops/s  56.00 peak-MB  4.000 regs  0 B/op  0 allocs/op
BenchmarkAlloc/large/bemalloc/threads=1-16   100  150.0 ns/op  12000000 ops/s  58.00 peak-MB  3.000 regs  0 B/op  0 allocs/op
BenchmarkAlloc/large/syncpool/threads=1-16   100   50.0 ns/op  40000000 ops/s  60.00 peak-MB  3 B/op  0 allocs/op
PASS
ok  	github.com/besim/besim/byteexpress/bemalloc	1.0s
`

// The report holds the medians of the runs, in Mops/s, a missing column
// (sync.Pool has no registrations) as NaN, bemalloc's ratio to sync.Pool,
// the header lines as notes, and only ranges with rows.
func TestBuild(t *testing.T) {
	p, err := parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	r := build(p)
	if len(r.Tables) != 1 || r.Tables[0].Name != "large" {
		t.Fatalf("tables %v, want only large", r.Tables)
	}
	tb := &r.Tables[0]
	for _, c := range []struct {
		key, col string
		want     float64
	}{
		{"bemalloc/1", "ops/s", 12}, {"bemalloc/1", "ns/op", 150}, {"bemalloc/1", "peak memory", 56},
		{"bemalloc/1", "registrations", 3}, {"bemalloc/1", "runs", 3}, {"syncpool/1", "ops/s", 40}, {"syncpool/1", "B/op", 3},
	} {
		if v, ok := tb.Value(c.key, c.col); !ok || v != c.want {
			t.Errorf("%s %s = %v (%v), want %v", c.key, c.col, v, ok, c.want)
		}
	}
	if v, ok := tb.Value("syncpool/1", "registrations"); !ok || v == v {
		t.Errorf("sync.Pool registrations %v, want missing (NaN)", v)
	}
	if m, ok := r.Metric("large/bemalloc_vs_syncpool/threads=1"); !ok || m.Value != 0.3 {
		t.Errorf("ratio %v (%v), want 0.3", m.Value, ok)
	}
	notes := strings.Join(r.Notes, "\n")
	for _, want := range []string{"command: go test -bench ^BenchmarkAlloc$", "cores: 16", "cpu: Some CPU"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"PASS\n", "no BenchmarkAlloc result lines"},
		{"BenchmarkAlloc/large/bemalloc-16 100 1.0 ns/op\n", "line 1"},
		{"x\nBenchmarkAlloc/large/bemalloc/threads=1-16 100 abc ns/op\n", "line 2: value \"abc\" of ns/op"},
	} {
		if _, err := parse([]byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("parse(%q): %v, want an error with %q", c.in, err, c.want)
		}
	}
}
