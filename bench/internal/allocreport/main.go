// Command allocreport, internal to bench (bench/alloc.sh is what runs it),
// turns the output of bemalloc's Figure 4 benchmark (go test -bench
// BenchmarkAlloc ./byteexpress/bemalloc, paper §5.2 Figure 4) into a besim
// result: result.json with one table per size range (small, large), keyed
// allocator/threads, and each table as CSV and Markdown, so that `besim
// plot --table` can draw it. bench/alloc.sh runs
// the benchmark and this command; see results/fig4/README.md.
//
//	go run ./bench/internal/allocreport -o results/fig4 results/fig4/bench.txt
//
// The numbers are wall-clock measurements of the machine that ran the
// benchmark (its description is in the header lines the script writes,
// "# key: value", and go test's goos/goarch/cpu lines): they are copied,
// not simulated, and differ from run to run. When a benchmark ran more than
// once (-count), the table holds the median of each column and the number
// of runs. Lines that are not benchmark results or header lines are
// ignored; a benchmark line that does not parse is an error naming its
// line number.
package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/besim/besim/report"
)

func main() {
	out := flag.String("o", "", "output `DIR` (result.json, small.csv, large.csv, fig4.md)")
	flag.Parse()
	if flag.NArg() != 1 || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: allocreport -o DIR BENCH_OUTPUT")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *out); err != nil {
		fmt.Fprintln(os.Stderr, "allocreport:", err)
		os.Exit(1)
	}
}

// The columns of each table, with the benchmark unit each is read from.
var columns = []struct {
	col   report.Column
	unit  string  // go test's unit
	scale float64 // value = parsed / scale
}{
	{report.Column{Name: "ops/s", Unit: "Mops/s"}, "ops/s", 1e6},
	{report.Column{Name: "peak memory", Unit: "MiB"}, "peak-MB", 1}, // the benchmark divides by 2^20
	{report.Column{Name: "ns/op"}, "ns/op", 1},
	{report.Column{Name: "allocs/op"}, "allocs/op", 1},
	{report.Column{Name: "B/op"}, "B/op", 1},
	{report.Column{Name: "registrations"}, "regs", 1},
	{report.Column{Name: "runs"}, "", 1},
}

var (
	ranges     = []string{"small", "large"}
	allocators = []string{"bemalloc", "bemalloc-thp", "bemalloc-cache", "syncpool", "gomake"}
	threads    = []string{"1", "2", "4", "8"}
	rangeTitle = map[string]string{
		"small": "small allocations, 16 B-16 KB uniform",
		"large": "large allocations, 64 KB-1 MB exponential",
	}
)

type key struct{ rng, alloc, threads string }

// parsed is what the benchmark output holds: header facts in order, and
// every run of every benchmark.
type parsed struct {
	header [][2]string
	runs   map[key][]map[string]float64
}

func parse(text []byte) (*parsed, error) {
	p := &parsed{runs: map[key][]map[string]float64{}}
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if k, v, ok := strings.Cut(strings.TrimPrefix(s, "# "), ": "); ok && (strings.HasPrefix(s, "# ") ||
			slices.Contains([]string{"goos", "goarch", "pkg", "cpu"}, k)) {
			p.header = append(p.header, [2]string{k, strings.TrimSpace(v)})
			continue
		}
		if !strings.HasPrefix(s, "BenchmarkAlloc/") {
			continue
		}
		f := strings.Fields(s)
		name := f[0]
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			name = name[:i] // the GOMAXPROCS suffix
		}
		parts := strings.Split(strings.TrimPrefix(name, "BenchmarkAlloc/"), "/")
		if len(parts) != 3 || !strings.HasPrefix(parts[2], "threads=") || len(f) < 4 || len(f)%2 != 0 {
			return nil, fmt.Errorf("line %d: %q is not a BenchmarkAlloc/RANGE/ALLOCATOR/threads=N result line", line, s)
		}
		k := key{parts[0], parts[1], strings.TrimPrefix(parts[2], "threads=")}
		vals := map[string]float64{}
		for i := 2; i < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: value %q of %s: %v", line, f[i], f[i+1], err)
			}
			vals[f[i+1]] = v
		}
		p.runs[k] = append(p.runs[k], vals)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(p.runs) == 0 {
		return nil, errors.New("no BenchmarkAlloc result lines")
	}
	return p, nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// build makes the result: one table per range, rows in a fixed order
// (allocators, then threads), metrics for bemalloc's rate relative to the
// size-classed sync.Pool.
func build(p *parsed) *report.Result {
	r := &report.Result{Tool: "bench", Scenario: "fig4 (bemalloc BenchmarkAlloc)", Duration: "wall clock"}
	for _, h := range p.header {
		r.Notes = append(r.Notes, "machine: "+h[0]+": "+h[1])
	}
	r.Notes = append(r.Notes, "wall-clock measurements of the machine above (not simulated): they differ from run to run and from machine to machine; ops/s counts allocations plus frees per second over all goroutines; peak memory is bemalloc's peak registered footprint, and for sync.Pool and make the peak Go heap in use above the level before the run; registrations are RegMR calls in the timed phase; columns are medians over the runs")
	for _, rg := range ranges {
		t := report.Table{Name: rg, Title: "Figure 4 (measured): " + rangeTitle[rg] + ", about 10% cross-thread frees", KeyName: "allocator/threads"}
		for _, c := range columns {
			t.Columns = append(t.Columns, c.col)
		}
		for _, a := range allocators {
			for _, th := range threads {
				runs := p.runs[key{rg, a, th}]
				if len(runs) == 0 {
					continue
				}
				var row []float64
				for _, c := range columns {
					if c.unit == "" {
						row = append(row, float64(len(runs)))
						continue
					}
					var xs []float64
					for _, v := range runs {
						if x, ok := v[c.unit]; ok {
							xs = append(xs, x/c.scale)
						}
					}
					if len(xs) == 0 {
						row = append(row, math.NaN())
						continue
					}
					row = append(row, median(xs))
				}
				t.AddRow(a+"/"+th, row...)
			}
		}
		for _, a := range []string{"bemalloc", "bemalloc-thp", "bemalloc-cache"} {
			for _, th := range threads {
				be, ok1 := t.Value(a+"/"+th, "ops/s")
				sp, ok2 := t.Value("syncpool/"+th, "ops/s")
				if ok1 && ok2 && sp > 0 {
					r.Add(fmt.Sprintf("%s/%s_vs_syncpool/threads=%s", rg, a, th), be/sp, "x")
				}
			}
		}
		if len(t.Rows) > 0 {
			r.Tables = append(r.Tables, t)
		}
	}
	return r
}

// provenance fills in a benchmark result's provenance: what a scenario is to
// a simulation, the benchmark's raw output is to this report. Its digest is
// the SHA-256 of that output, and its "resolved scenario" the header facts
// the script recorded (command, code, machine, go), so a committed result
// says what was measured where. Tool version and revision are unknown, as
// in every committed result; the measured code is in the header's "code".
func provenance(r *report.Result, p *parsed, text []byte) error {
	r.Format = report.Format
	r.ToolVersion, r.Revision = "unknown", "unknown"
	sum := sha256.Sum256(text)
	r.ScenarioSHA256 = hex.EncodeToString(sum[:])
	facts := map[string]string{}
	for _, h := range p.header {
		facts[h[0]] = h[1]
	}
	if facts["command"] == "" {
		return errors.New("the benchmark output has no '# command:' header line (bench/alloc.sh writes it)")
	}
	b, err := json.Marshal(facts) // map keys come out sorted: deterministic
	if err != nil {
		return err
	}
	r.ResolvedScenario = b
	return nil
}

func run(in, dir string) error {
	text, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	p, err := parse(text)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	r := build(p)
	if err := provenance(r, p, text); err != nil {
		return err
	}
	files := map[string]func(*bytes.Buffer) error{
		"result.json": func(b *bytes.Buffer) error { return r.WriteJSON(b) },
		"fig4.md": func(b *bytes.Buffer) error {
			for i := range r.Tables {
				fmt.Fprintf(b, "## %s\n\n", r.Tables[i].Title)
				if err := r.Tables[i].WriteMarkdown(b); err != nil {
					return err
				}
				b.WriteString("\n")
			}
			for _, n := range r.Notes {
				fmt.Fprintf(b, "- %s\n", n)
			}
			return nil
		},
	}
	for i := range r.Tables {
		t := &r.Tables[i]
		files[t.Name+".csv"] = func(b *bytes.Buffer) error { return t.WriteCSV(b) }
	}
	for _, name := range []string{"result.json", "fig4.md", "small.csv", "large.csv"} {
		f, ok := files[name]
		if !ok {
			continue
		}
		var b bytes.Buffer
		if err := f(&b); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}
