package experiment

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
)

type fakeRunner struct {
	s   *scenarios.Scenario
	err error
}

func (f fakeRunner) Explain(w io.Writer) error {
	_, err := io.WriteString(w, f.s.Name+": fake\n")
	return err
}

func (f fakeRunner) Run() (*report.Result, error) {
	r := NewResult(f.s)
	Events(r, 42)
	return r, Failed(r, f.err)
}

// TestRegistry: Build picks the builder by the scenario's kind, its runner
// adds the wall time and passes a run's error on with the note; an unknown
// kind names the field and the registered kinds; a kind registered twice
// is an error, not a silent replacement.
func TestRegistry(t *testing.T) {
	boom := errors.New("boom")
	Register("test-ok", func(s *scenarios.Scenario) (Runner, error) { return fakeRunner{s: s}, nil })
	Register("test-fail", func(s *scenarios.Scenario) (Runner, error) { return fakeRunner{s: s, err: boom}, nil })
	Register("test-dup", func(s *scenarios.Scenario) (Runner, error) { return fakeRunner{s: s}, nil })
	Register("test-dup", func(s *scenarios.Scenario) (Runner, error) { return fakeRunner{s: s}, nil })
	if k := Kinds(); !slices.Contains(k, "test-ok") || !slices.Contains(k, Flows) {
		t.Errorf("kinds %v", k)
	}
	sc := func(kind string) *scenarios.Scenario {
		return &scenarios.Scenario{Name: "n", Workload: &scenarios.Workload{Kind: scenarios.WorkloadKind(kind)}}
	}
	if k := Kind(&scenarios.Scenario{}); k != Flows {
		t.Errorf("kind of a flow scenario %q", k)
	}

	x, err := Build(sc("test-ok"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := x.Explain(&b); err != nil || b.String() != "n: fake\n" {
		t.Errorf("explain %q, %v", b.String(), err)
	}
	r, err := x.Run()
	if err != nil || r.Timing == nil || r.Timing.Events != 42 || r.Timing.WallSeconds < 0 {
		t.Errorf("run: %+v, %v", r.Timing, err)
	}

	x, _ = Build(sc("test-fail"))
	r, err = x.Run()
	if !errors.Is(err, boom) || r == nil || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "workload failed: boom") {
		t.Errorf("failed run: %v, %+v", err, r)
	}

	_, err = Build(sc("no-such"))
	if err == nil || !strings.Contains(err.Error(), "workload.kind") || !strings.Contains(err.Error(), "test-ok") {
		t.Errorf("unknown kind: %v", err)
	}
	if _, err := Build(sc("test-dup")); err == nil || !strings.Contains(err.Error(), "registered twice") {
		t.Errorf("duplicate kind: %v", err)
	}
}

type panicRunner struct{ fakeRunner }

func (panicRunner) Run() (*report.Result, error) {
	var s []int
	_ = s[:5] // a model's slice-bounds bug
	return nil, nil
}

// TestRunPanicIsAnError: a panic inside a model is the run's error, naming
// where it happened, not a crash of besim (or of a whole sweep).
func TestRunPanicIsAnError(t *testing.T) {
	Register("test-panic", func(s *scenarios.Scenario) (Runner, error) { return panicRunner{fakeRunner{s: s}}, nil })
	x, err := Build(&scenarios.Scenario{Name: "p", Workload: &scenarios.Workload{Kind: "test-panic"}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := x.Run()
	if r != nil || err == nil || !strings.Contains(err.Error(), "panicked") || !strings.Contains(err.Error(), "registry_test.go:") {
		t.Errorf("panicking run: %v, %v", r, err)
	}
}
