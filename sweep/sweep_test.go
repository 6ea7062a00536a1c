package sweep

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
)

func TestParseAxis(t *testing.T) {
	tests := []struct {
		in   string
		key  string
		vals []string
		err  string
	}{
		{in: "fabric.links.rate=10Gbps,25Gbps", key: "fabric.links.rate", vals: []string{"10Gbps", "25Gbps"}},
		{in: "seed=1..4", key: "seed", vals: []string{"1", "2", "3", "4"}},
		{in: "fabric.switch.buffer=1..3MiB", key: "fabric.switch.buffer", vals: []string{"1MiB", "2MiB", "3MiB"}},
		{in: "flows[0].src#len=2..8:3", key: "flows[0].src#len", vals: []string{"2", "5", "8"}},
		{in: "flows[0].src=[0,1], '0,2' ,0-3", key: "flows[0].src", vals: []string{"[0,1]", "'0,2'", "0-3"}},
		{in: "flows[victim].rate=1Gbps", key: "flows[victim].rate", vals: []string{"1Gbps"}},
		{in: "fabric.priorities[0].ecn.kmin=5KB", key: "fabric.priorities[0].ecn.kmin", vals: []string{"5KB"}},
		{in: "seed", err: "want key=value"},
		{in: "=1", err: "want key=value"},
		{in: "seed=1,,2", err: "empty value"},
		{in: "seed=", err: "empty value"},
		{in: "fabric..rate=1", err: "is not a key path"},
		{in: "flows[0.size=1", err: "bad index syntax"},
		{in: "flows[-1].size=1", err: "negative index"},
		{in: "seed=5..1", err: "ends before it starts"},
		{in: "seed=1..100000", err: "more than 10000 values"},
		{in: "flows[0].src=[0,1", err: "unbalanced"},
		{in: "seed=1,1", err: "value 1 given twice"},
		{in: "seed=1..3,2", err: "value 2 given twice"},
	}
	for _, tc := range tests {
		a, err := ParseAxis(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseAxis(%q) = %v, %v; want error containing %q", tc.in, a, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseAxis(%q): %v", tc.in, err)
			continue
		}
		if a.Key != tc.key || !slices.Equal(a.Values, tc.vals) {
			t.Errorf("ParseAxis(%q) = %q %q; want %q %q", tc.in, a.Key, a.Values, tc.key, tc.vals)
		}
	}
}

func TestPointsOrder(t *testing.T) {
	pts, err := Points([]Axis{{"a", []string{"1", "2"}}, {"b", []string{"x", "y", "z"}}})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for i, p := range pts {
		if p.Index != i {
			t.Errorf("point %d has index %d", i, p.Index)
		}
		keys = append(keys, p.Key())
	}
	want := []string{"a=1,b=x", "a=1,b=y", "a=1,b=z", "a=2,b=x", "a=2,b=y", "a=2,b=z"}
	if !slices.Equal(keys, want) {
		t.Errorf("order %q, want %q", keys, want)
	}
	if pts, _ := Points(nil); len(pts) != 1 || pts[0].Key() != "base" {
		t.Errorf("no axes: %v", pts)
	}
	if _, err := Points([]Axis{{"a", []string{"1"}}, {"a#len", []string{"2"}}}); err == nil {
		t.Errorf("same key twice: no error")
	}
}

func TestParseShard(t *testing.T) {
	for in, ok := range map[string]bool{"0/1": true, "1/2": true, "2/2": false, "-1/2": false, "1": false, "a/b": false, "0/0": false} {
		s, err := ParseShard(in)
		if (err == nil) != ok {
			t.Errorf("ParseShard(%q) = %v, %v", in, s, err)
		}
	}
	s := Shard{1, 3}
	if s.Has(0) || !s.Has(4) || (Shard{}).Has(7) == false {
		t.Errorf("Has is wrong")
	}
}

func mustBase(t *testing.T, name string) *Base {
	t.Helper()
	b, err := Load(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestApplyValues(t *testing.T) {
	incast := mustBase(t, "incast")
	lineRate := mustBase(t, "line-rate")
	tests := []struct {
		base  *Base
		set   []Override
		check func(s *scenarios.Scenario) bool
	}{
		{incast, []Override{{"fabric.links.rate", "40Gbps"}}, func(s *scenarios.Scenario) bool { return s.Fabric.Links.Rate == 40e9 }},
		{incast, []Override{{"fabric.switch.buffer", "1MiB"}, {"seed", "7"}}, func(s *scenarios.Scenario) bool {
			return s.Fabric.Switch.Buffer == 1<<20 && s.Seed == 7
		}},
		{incast, []Override{{"flows[0].size", "64KiB"}}, func(s *scenarios.Scenario) bool { return s.Flows[0].Size == 64<<10 }},
		{incast, []Override{{"flows[victim].rate", "5Gbps"}}, func(s *scenarios.Scenario) bool { return s.Flows[1].Rate.Rate == 5e9 }},
		{incast, []Override{{"flows[0].src#len", "4"}}, func(s *scenarios.Scenario) bool {
			return slices.Equal(s.Flows[0].Src, scenarios.HostSet{0, 1, 2, 3})
		}},
		{incast, []Override{{"flows[0].src", "[0, 2, 4-5]"}}, func(s *scenarios.Scenario) bool {
			return slices.Equal(s.Flows[0].Src, scenarios.HostSet{0, 2, 4, 5})
		}},
		{incast, []Override{{"fabric.priorities[0].ecn.kmax", "100KB"}}, func(s *scenarios.Scenario) bool { return s.Fabric.Priorities[0].ECN.Kmax == 100e3 }},
		// Two values on one line of a flow mapping: spliced from the end.
		{lineRate, []Override{{"fabric.links.rate", "100Gbps"}, {"fabric.links.delay", "2us"}}, func(s *scenarios.Scenario) bool {
			return s.Fabric.Links.Rate == 100e9 && s.Fabric.Links.Delay.Time() == 2_000_000
		}},
		// Keys the file leaves out are created.
		{lineRate, []Override{{"fabric.switch.buffer", "2MiB"}, {"hosts.mtu", "4096"}}, func(s *scenarios.Scenario) bool {
			return s.Fabric.Switch.Buffer == 2<<20 && s.Hosts.MTU == 4096
		}},
	}
	for _, tc := range tests {
		s, err := tc.base.Apply(tc.set)
		if err != nil {
			t.Errorf("%v: %v", tc.set, err)
			continue
		}
		if !tc.check(s) {
			t.Errorf("%v: not applied", tc.set)
		}
	}
}

func TestApplyErrors(t *testing.T) {
	b := mustBase(t, "incast")
	tests := []struct {
		set  []Override
		want string
	}{
		// An error at the overridden key is the override's.
		{[]Override{{"fabric.links.rate", "25Gbs"}}, `--set fabric.links.rate=25Gbs: "25Gbs" is not a rate: unknown unit "Gbs"`},
		{[]Override{{"fabric.links.bogus", "1"}}, `--set fabric.links.bogus=1: unknown key "bogus"`},
		{[]Override{{"fabric.swtich.buffer", "1MiB"}}, `--set fabric.swtich.buffer=1MiB: fabric.swtich: unknown key "swtich", did you mean "switch"?`},
		{[]Override{{"flows[5].size", "1KiB"}}, "--set flows[5].size=1KiB: flows has 2 items (indices 0-1), no [5]"},
		{[]Override{{"flows[nope].size", "1KiB"}}, `flows has no item named "nope" (names: incast, victim)`},
		{[]Override{{"seed.x", "1"}}, `--set seed.x=1: seed is a scalar ("1"), not a mapping`},
		{[]Override{{"flows[0].src#len", "17"}}, "the scenario lists 16 hosts there (0-15); use 1..16"},
		{[]Override{{"flows[0].src#len", "x"}}, "wants a host count"},
		{[]Override{{"seed", "1"}, {"seed", "2"}}, "seed is set twice"},
		{[]Override{{"fabric.switch.buffer", ""}}, "empty value"},
		// An error elsewhere that the override causes keeps the true
		// file:line of the unmodified text.
		{[]Override{{"fabric.switch.buffer", "100KB"}}, "--set fabric.switch.buffer=100KB: scenarios/builtin/incast.yaml:31: fabric.priorities[0].ecn.kmax: 200KB is above the switch buffer 100KB"},
	}
	for _, tc := range tests {
		_, err := b.Apply(tc.set)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v\nwant it to contain %q", tc.set, err, tc.want)
		}
	}
	if _, err := NewBase("bad.yaml", []byte("name: x\nbogus: 1\n")); err == nil || !strings.Contains(err.Error(), "bad.yaml:2") {
		t.Errorf("a bad base file reports its own file:line: %v", err)
	}
}

func sweepAxes(t *testing.T, specs ...string) []Axis {
	t.Helper()
	var axes []Axis
	for _, s := range specs {
		a, err := ParseAxis(s)
		if err != nil {
			t.Fatal(err)
		}
		axes = append(axes, a)
	}
	return axes
}

func jsonBytes(t *testing.T, r *report.Result) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestRunTable(t *testing.T) {
	b := mustBase(t, "incast")
	r, st, err := Run(b, sweepAxes(t, "fabric.switch.buffer=1MiB,4MiB,8MiB"), Options{Metrics: []string{"pfc/frames_tx", "flow/*/goodput"}})
	if err != nil {
		t.Fatal(err)
	}
	if st.Simulations != 3 {
		t.Errorf("%d simulations", st.Simulations)
	}
	tab := r.Tables[0]
	if tab.Name != "sweep" || len(tab.Rows) != 3 || tab.Rows[1].Key != "fabric.switch.buffer=4MiB" {
		t.Fatalf("table %s rows %v", tab.Name, tab.Rows)
	}
	if tab.Columns[0] != (report.Column{Name: "pfc/frames_tx", Unit: "frames"}) || len(tab.Columns) != 18 { // 16 incast flows + victim
		t.Errorf("columns %v", tab.Columns)
	}
	// The 4MiB point is the embedded scenario itself: same numbers as a plain run.
	plain, _, err := Simulate(b.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := plain.Metric("pfc/frames_tx")
	if got, _ := tab.Value("fabric.switch.buffer=4MiB", "pfc/frames_tx"); got != want.Value || got == 0 {
		t.Errorf("4MiB point: %g PFC frames, plain run %g", got, want.Value)
	}
	if got, _ := tab.Value("fabric.switch.buffer=8MiB", "pfc/frames_tx"); got != 0 {
		t.Errorf("an 8MiB buffer still pauses (%g frames)", got)
	}
	if m, _ := r.Metric(MetricPoints); m.Value != 3 {
		t.Errorf("sweep/points = %g", m.Value)
	}
	if _, _, err := Run(b, nil, Options{Metrics: []string{"no/such"}}); err == nil || !strings.Contains(err.Error(), "no such metric") {
		t.Errorf("unknown metric: %v", err)
	}
	if _, _, err := Run(b, sweepAxes(t, "fabric.links.rate=40Gbps,25Gbs"), Options{}); err == nil || !strings.Contains(err.Error(), "--set fabric.links.rate=25Gbs") {
		t.Errorf("bad value: %v", err)
	}
}

// TestParallelIsByteIdentical runs the same sweep on 1 and 4 workers.
func TestParallelIsByteIdentical(t *testing.T) {
	b := mustBase(t, "incast")
	axes := sweepAxes(t, "fabric.switch.buffer=1MiB,2MiB,4MiB", "seed=1,2")
	var first []byte
	for _, jobs := range []int{1, 4, 3} {
		r, _, err := Run(b, axes, Options{Jobs: jobs, Keep: true})
		if err != nil {
			t.Fatal(err)
		}
		got := jsonBytes(t, r)
		if first == nil {
			first = got
			if len(r.Series) == 0 || len(r.Tables) < 7 {
				t.Fatalf("--keep kept %d tables, %d series", len(r.Tables), len(r.Series))
			}
			continue
		}
		if !bytes.Equal(first, got) {
			t.Fatalf("--jobs %d differs from --jobs 1:\n%s", jobs, cmp.Diff(string(first), string(got)))
		}
	}
}

// TestShardsMergeToFullRun: shards 0/2 and 1/2 (and 0..2/3, kept
// results and all) merge into the bytes of the full run.
func TestShardsMergeToFullRun(t *testing.T) {
	b := mustBase(t, "incast-lossy")
	axes := sweepAxes(t, "fabric.switch.buffer=1MiB,2MiB,4MiB", "flows[incast].rate=10Gbps,15Gbps")
	for _, keep := range []bool{false, true} {
		full, _, err := Run(b, axes, Options{Keep: keep})
		if err != nil {
			t.Fatal(err)
		}
		want := jsonBytes(t, full)
		for _, n := range []int{2, 3, 6} {
			var parts []*report.Result
			for i := n - 1; i >= 0; i-- { // any order
				p, _, err := Run(b, axes, Options{Keep: keep, Shard: Shard{i, n}, Jobs: 1 + i%2})
				if err != nil {
					t.Fatal(err)
				}
				// Through the file format, as a batch job would.
				back, err := report.ReadJSON(bytes.NewReader(jsonBytes(t, p)))
				if err != nil {
					t.Fatal(err)
				}
				parts = append(parts, back)
			}
			merged, err := Merge(parts)
			if err != nil {
				t.Fatal(err)
			}
			if got := jsonBytes(t, merged); !bytes.Equal(got, want) {
				t.Fatalf("keep=%v, %d shards: merge differs from the full run:\n%s", keep, n, cmp.Diff(string(want), string(got)))
			}
			if n == 3 {
				if _, err := Merge(parts[:2]); err == nil || !strings.Contains(err.Error(), "missing shard(s) 0/3") {
					t.Errorf("missing shard: %v", err)
				}
				if _, err := Merge([]*report.Result{parts[0], parts[0], parts[1]}); err == nil || !strings.Contains(err.Error(), "given twice") {
					t.Errorf("duplicate shard: %v", err)
				}
			}
		}
	}
	other, _, _ := Run(b, sweepAxes(t, "seed=1,2"), Options{Shard: Shard{0, 2}})
	mine, _, _ := Run(b, axes, Options{Shard: Shard{1, 2}})
	if _, err := Merge([]*report.Result{other, mine}); err == nil || !strings.Contains(err.Error(), "not of the same sweep") {
		t.Errorf("shards of different sweeps: %v", err)
	}
	plain, _, _ := Simulate(b.Scenario)
	if _, err := Merge([]*report.Result{plain}); err == nil || !strings.Contains(err.Error(), "not a besim sweep result") {
		t.Errorf("a plain run: %v", err)
	}
}

func TestParsePredicate(t *testing.T) {
	r := &report.Result{}
	r.Add("pfc/frames_tx", 3, "frames")
	tests := []struct {
		in    string
		holds bool
		err   bool
	}{
		{"pfc/frames_tx>0", true, false},
		{"pfc/frames_tx > 3", false, false},
		{"pfc/frames_tx>=3", true, false},
		{"pfc/frames_tx<3", false, false},
		{"pfc/frames_tx<=3", true, false},
		{"pfc/frames_tx==3", true, false},
		{"pfc/frames_tx!=3", false, false},
		{"pfc/frames_tx>1e1", false, false},
		{"pfc/frames_tx", false, true},
		{">0", false, true},
		{"pfc/frames_tx>x", false, true},
		{"pfc/frames_tx=>1", false, true},
	}
	for _, tc := range tests {
		p, err := ParsePredicate(tc.in)
		if (err != nil) != tc.err {
			t.Errorf("ParsePredicate(%q): %v", tc.in, err)
			continue
		}
		if err != nil {
			continue
		}
		holds, x, err := p.Eval(r)
		if err != nil || holds != tc.holds || x != 3 {
			t.Errorf("%q on 3: %v %g %v", tc.in, holds, x, err)
		}
	}
	p, _ := ParsePredicate("no/such>0")
	if _, _, err := p.Eval(r); err == nil || !strings.Contains(err.Error(), "have: pfc/frames_tx") {
		t.Errorf("missing metric: %v", err)
	}
}

func TestParseSearch(t *testing.T) {
	s, err := ParseSearch("fabric.switch.buffer=64..4096KiB")
	if err != nil || s.Key != "fabric.switch.buffer" || s.Lo != 64 || s.Hi != 4096 || s.value(5) != "5KiB" {
		t.Errorf("%+v %v", s, err)
	}
	for _, bad := range []string{"x=5..1", "x=1-5", "x", "x=a..b", "bad..key=1..2"} {
		if _, err := ParseSearch(bad); err == nil {
			t.Errorf("ParseSearch(%q): no error", bad)
		}
	}
}

func search(t *testing.T, b *Base, key, until string, axes []Axis, opt Options) (*report.Result, Stats) {
	t.Helper()
	s, err := ParseSearch(key)
	if err != nil {
		t.Fatal(err)
	}
	if s.Until, err = ParsePredicate(until); err != nil {
		t.Fatal(err)
	}
	r, st, err := RunSearch(b, s, axes, opt)
	if err != nil {
		t.Fatal(err)
	}
	return r, st
}

// TestSearchSenders finds the largest incast fan-in that does not yet
// trigger PFC, per switch buffer, and checks it against a linear scan.
func TestSearchSenders(t *testing.T) {
	b := mustBase(t, "incast")
	axes := sweepAxes(t, "fabric.switch.buffer=2MiB,4MiB,8MiB")
	r, st := search(t, b, "flows[0].src#len=1..16", "pfc/frames_tx>0", axes, Options{})
	tab := r.Tables[0]
	if tab.Name != "search" || len(tab.Rows) != 3 {
		t.Fatalf("table %s with %d rows", tab.Name, len(tab.Rows))
	}
	bound := 2 + int(math.Ceil(math.Log2(15)))
	// Linear scan of the 4MiB point: the bisection must agree.
	scan, _, err := Run(b, sweepAxes(t, "fabric.switch.buffer=4MiB", "flows[0].src#len=1..16"), Options{Metrics: []string{"pfc/frames_tx"}})
	if err != nil {
		t.Fatal(err)
	}
	wantLargest := 0
	for i, row := range scan.Tables[0].Rows {
		if row.Values[0] > 0 {
			break
		}
		wantLargest = i + 1
	}
	if got, _ := tab.Value("fabric.switch.buffer=4MiB", ColLargest); int(got) != wantLargest || wantLargest == 0 || wantLargest == 16 {
		t.Errorf("largest fan-in without PFC at 4MiB: search %g, scan %d", got, wantLargest)
	}
	for _, row := range tab.Rows {
		if sims := row.Values[4]; sims > float64(bound) {
			t.Errorf("%s took %g simulations, more than %d", row.Key, sims, bound)
		}
	}
	// 8MiB never pauses: no crossing, largest = hi, first true "-".
	if got, _ := tab.Value("fabric.switch.buffer=8MiB", ColLargest); got != 16 {
		t.Errorf("8MiB: largest %g, want 16 (no crossing)", got)
	}
	if got, _ := tab.Value("fabric.switch.buffer=8MiB", ColFirstTrue); !math.IsNaN(got) {
		t.Errorf("8MiB: first true %g, want none", got)
	}
	notes := strings.Join(r.Notes, "\n")
	if !strings.Contains(notes, "[fabric.switch.buffer=8MiB] pfc/frames_tx>0: flows[0].src#len=1 false (0), flows[0].src#len=16 false (0); no crossing in range") {
		t.Errorf("notes lack the no-crossing explanation:\n%s", notes)
	}
	if m, _ := r.Metric(MetricSimulations); int(m.Value) != st.Simulations {
		t.Errorf("sweep/simulations %g, ran %d", m.Value, st.Simulations)
	}
	// Already true at lo.
	r2, _ := search(t, b, "flows[0].src#len=12..16", "pfc/frames_tx>0", nil, Options{})
	if got, _ := r2.Tables[0].Value("base", ColLargest); !math.IsNaN(got) {
		t.Errorf("true at lo: largest %g, want none", got)
	}
	if !strings.Contains(strings.Join(r2.Notes, "\n"), "already holds at flows[0].src#len=12") {
		t.Errorf("notes: %q", r2.Notes)
	}
}

func TestSearchShardsMerge(t *testing.T) {
	b := mustBase(t, "incast")
	axes := sweepAxes(t, "fabric.switch.buffer=2MiB,4MiB,8MiB")
	full, _ := search(t, b, "flows[0].src#len=1..16", "pfc/frames_tx>0", axes, Options{Keep: true, Jobs: 1})
	p0, _ := search(t, b, "flows[0].src#len=1..16", "pfc/frames_tx>0", axes, Options{Keep: true, Shard: Shard{0, 2}})
	p1, _ := search(t, b, "flows[0].src#len=1..16", "pfc/frames_tx>0", axes, Options{Keep: true, Shard: Shard{1, 2}})
	merged, err := Merge([]*report.Result{p1, p0})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := jsonBytes(t, full), jsonBytes(t, merged); !bytes.Equal(a, b) {
		t.Fatalf("merged search differs:\n%s", cmp.Diff(string(a), string(b)))
	}
	if _, _, err := RunSearch(b, Search{Key: "seed", Lo: 1, Hi: 2}, sweepAxes(t, "seed=1,2"), Options{}); err == nil {
		t.Errorf("searching a key that is also swept: no error")
	}
}

// TestShardDefaultColumns: a shard without point 0 still gets point 0's
// metrics as columns (it runs point 0 to learn them), so its rows line up.
func TestShardDefaultColumns(t *testing.T) {
	b := mustBase(t, "incast")
	axes := sweepAxes(t, "flows[0].src#len=2,3")
	full, _, err := Run(b, axes, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p1, st, err := Run(b, axes, Options{Shard: Shard{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	if st.Simulations != 2 {
		t.Errorf("shard 1/2 ran %d simulations, want its point and point 0", st.Simulations)
	}
	if diff := cmp.Diff(full.Tables[0].Columns, p1.Tables[0].Columns); diff != "" {
		t.Errorf("columns differ:\n%s", diff)
	}
	// Point 1 has a third incast flow the first point lacks: not a column.
	if _, ok := p1.Tables[0].Value("flows[0].src#len=3", "flow/incast.2-16/goodput"); ok {
		t.Errorf("a metric of point 1 only became a column")
	}
}

func TestForEachReportsLowestError(t *testing.T) {
	for range 20 {
		_, err := forEach(50, 4, nil, func(i int) error {
			if i == 7 || i == 30 {
				return fmt.Errorf("point %d", i)
			}
			return nil
		}, nil)
		if err == nil || !strings.Contains(err.Error(), "point 7") {
			t.Fatalf("error %v, want point 7's", err)
		}
	}
}
