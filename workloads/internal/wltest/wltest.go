// Package wltest sits under the workload packages' tests: it parses a
// scenario, builds it through the experiment registry and runs it, failing
// the test on any error. The package under test registers its own kind.
package wltest

import (
	"bytes"
	"testing"

	"github.com/besim/besim/experiment"
	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
)

// Parse parses text as scenario file name.yaml.
func Parse(t testing.TB, name, text string) *scenarios.Scenario {
	t.Helper()
	s, err := scenarios.Parse(name+".yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Run builds and runs s.
func Run(t testing.TB, s *scenarios.Scenario) *report.Result {
	t.Helper()
	x, err := experiment.Build(s)
	if err != nil {
		t.Fatal(err)
	}
	r, err := x.Run()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Builtin runs the embedded scenario name.
func Builtin(t testing.TB, name string) *report.Result {
	t.Helper()
	s, err := scenarios.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	return Run(t, s)
}

// Metrics maps r's metric names to values.
func Metrics(r *report.Result) map[string]float64 {
	m := map[string]float64{}
	for _, v := range r.Metrics {
		m[v.Name] = v.Value
	}
	return m
}

// JSON is r's JSON without its wall-clock Timing.
func JSON(t testing.TB, r *report.Result) []byte {
	t.Helper()
	r.Timing = nil
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
