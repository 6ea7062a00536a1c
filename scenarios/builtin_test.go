package scenarios

import (
	"bytes"
	"flag"
	"github.com/besim/besim/units"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/besim/besim/sim"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// wantBuiltins are the scenarios the project promises to ship.
var wantBuiltins = []string{"dcqcn-fairness", "dcqcn-incast", "failover", "fig10", "fig11", "fig13", "fig16", "incast", "incast-lossy", "inference", "line-rate", "pfc-incast", "pfc-storm", "ps-cluster", "table2", "quarantine", "tcp-fallback", "training", "victim-leafspine"}

func TestBuiltinsLoad(t *testing.T) {
	list := List()
	var names []string
	for _, info := range list {
		names = append(names, info.Name)
		if info.Description == "" {
			t.Errorf("%s: no description (or it does not load)", info.Name)
		}
		s, err := Load(info.Name)
		if err != nil {
			t.Errorf("%s: %v", info.Name, err)
			continue
		}
		if s.Name != info.Name {
			t.Errorf("%s: name field is %q; it must match the file name", info.Name, s.Name)
		}
		if err := s.Validate(); err != nil {
			t.Errorf("%s: Validate after Load: %v", info.Name, err)
		}
		if want := "scenarios/builtin/" + info.Name + ".yaml"; s.File() != want {
			t.Errorf("%s: File() = %q, want %q", info.Name, s.File(), want)
		}
		assertRoundTrip(t, s)
	}
	for _, w := range wantBuiltins {
		if !strings.Contains(" "+strings.Join(names, " ")+" ", " "+w+" ") {
			t.Errorf("embedded scenario %q missing (have %v)", w, names)
		}
	}
	if _, err := Load(Default); err != nil {
		t.Errorf("Default %q: %v", Default, err)
	}
}

// assertRoundTrip checks that the normalized form parses back to an equal
// scenario.
func assertRoundTrip(t *testing.T, s *Scenario) {
	t.Helper()
	out, err := s.YAML()
	if err != nil {
		t.Fatalf("%s: YAML: %v", s.Name, err)
	}
	back, err := Parse("normalized.yaml", out)
	if err != nil {
		t.Fatalf("%s: normalized form does not parse: %v\n%s", s.Name, err, out)
	}
	a, b := *s, *back
	a.src, b.src = nil, nil
	if !reflect.DeepEqual(a, b) {
		t.Errorf("%s: round trip changed the scenario\n before: %+v\n  after: %+v", s.Name, a, b)
	}
}

func TestGoldenIncast(t *testing.T) {
	s, err := Load("incast")
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.YAML()
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "incast.normalized.yaml")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./scenarios -run TestGoldenIncast -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("normalized incast differs from %s (rerun with -update if intended):\n%s", golden, got)
	}
}

func TestLoad(t *testing.T) {
	a, err := Load("incast.yaml")
	if err != nil {
		t.Fatalf("by name with .yaml: %v", err)
	}
	// A path wins over an embedded name.
	dir := t.TempDir()
	p := filepath.Join(dir, "mine.yaml")
	data, _ := Builtin("incast")
	data = bytes.Replace(data, []byte("name: incast\n"), []byte("name: mine\n"), 1)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if b.Name != "mine" || b.File() != p || a.Name != "incast" {
		t.Errorf("Load(path) = %q from %q", b.Name, b.File())
	}
	// Errors in a file name the file.
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("name: x\nduration: 1ms\nfabric: {topology: {kind: star, hosts: 2}}\nflows: [{src: 0, dst: 1, rate: 1Gbs}]\n"), 0o644)
	if _, err := Load(bad); err == nil || !strings.HasPrefix(err.Error(), bad+":4: flows[0].rate: ") {
		t.Errorf("Load(bad) = %v", err)
	}
	_, err = Load("no-such-scenario")
	var names []string
	for _, in := range List() {
		names = append(names, in.Name)
	}
	if !slices.Contains(names, "fig11") || !slices.Contains(names, "table2") {
		t.Fatalf("List() = %v", names)
	}
	want := `scenario "no-such-scenario": no such file, and not an embedded scenario (embedded: ` + strings.Join(names, ", ") + `)`
	if err == nil || err.Error() != want {
		t.Errorf("Load(unknown) = %v\nwant %s", err, want)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "not a regular file (a directory)") {
		t.Errorf("Load(dir) = %v", err)
	}
	if _, err := Builtin("../decode.go"); err == nil {
		t.Error("Builtin escapes the embedded directory")
	}
}

// TestBuiltinShapes pins what each embedded scenario is for, so an edit
// that breaks its point fails here.
func TestBuiltinShapes(t *testing.T) {
	load := func(n string) *Scenario {
		s, err := Load(n)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	in := load("incast")
	fl := in.ExpandFlows()
	if len(fl) != 17 || fl[16].Name != "victim" || !in.Fabric.Priorities[0].Lossless || in.Fabric.Topology.HostCount() != 18 {
		t.Errorf("incast: %d flows, %+v", len(fl), in.Fabric)
	}
	lossy := load("incast-lossy")
	if lossy.Fabric.PFC.On() || lossy.Fabric.Priorities[0].Lossless {
		t.Error("incast-lossy is not lossy")
	}
	ls := load("victim-leafspine")
	if ls.Fabric.Topology.Kind != LeafSpine || ls.Fabric.Links.UplinkRate != 100*units.Gbps {
		t.Errorf("victim-leafspine: %+v", ls.Fabric.Topology)
	}
	if lr := load("line-rate"); len(lr.ExpandFlows()) != 1 || !lr.Flows[0].Rate.Line {
		t.Errorf("line-rate: %+v", lr.Flows)
	}

	// The RNIC scenarios.
	di, pi := load("dcqcn-incast"), load("pfc-incast")
	for _, s := range []*Scenario{di, pi} {
		fl := s.ExpandFlows()
		if s.Hosts.NIC != RNICModel || len(fl) != 8 || fl[0].Transport != RC || fl[0].Dst != 8 || !fl[0].Line || !s.Fabric.Priorities[0].Lossless {
			t.Errorf("%s: %+v %+v", s.Name, s.Hosts, fl)
		}
	}
	if di.RNIC.CC != CCDCQCN || di.DCQCN == nil || pi.RNIC.CC != CCNone || pi.DCQCN != nil {
		t.Errorf("incast congestion control: %v %v", di.RNIC.CC, pi.RNIC.CC)
	}
	df := load("dcqcn-fairness")
	if fl := df.ExpandFlows(); len(fl) != 2 || fl[0].Dst != fl[1].Dst || df.RNIC.CC != CCDCQCN || df.Outputs.Warmup < df.Duration/2 {
		t.Errorf("dcqcn-fairness: %+v", fl)
	}
	t2 := load("table2")
	if runs := t2.Benchmark.PerfRuns(); t2.Benchmark.Kind != Perftest || len(runs) != 8 || runs[3].Transport != UD || runs[3].Message != 1024 || runs[0].Message != 64*KiB {
		t.Errorf("table2: %+v", runs)
	}
	f11 := load("fig11")
	if b := f11.Benchmark; b.Kind != MsgRate || b.Threads != 8 || b.Message != 512 || len(b.ThreadDomains) != 2 || b.QPs[0] != 8 || b.QPs[len(b.QPs)-1] != 512 {
		t.Errorf("fig11: %+v", b)
	}
	f10 := load("fig10")
	if b := f10.Benchmark; b.Kind != Fragsize || len(b.Rates) != 2 || len(b.Fragments) != 8 || b.Message != MiB || f10.Duration != Duration(40*sim.TxTime(int64(MiB), 25*units.Gbps)) || b.Warmup != f10.Duration/2 {
		t.Errorf("fig10: %+v (duration %v)", b, f10.Duration)
	}
	f13 := load("fig13")
	if b := f13.Benchmark; b.Kind != HOL || len(b.LargeFlows) != 5 || b.Message != 512 || b.LargeMessage != MiB || b.Fragment != 4*KiB || b.Depth != 2 {
		t.Errorf("fig13: %+v", b)
	}
}
