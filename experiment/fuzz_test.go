package experiment_test

import (
	"strings"
	"testing"

	"github.com/besim/besim/experiment"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
)

// fuzzMaxDuration and fuzzMaxMemory keep each fuzzed run short: longer
// scenarios are cut to fuzzMaxDuration (and skipped if that makes them
// invalid), bigger ones skipped. A run of several seconds (10 ms of a
// large scenario on a loaded machine) made the fuzzing engine give up on
// a worker while minimizing ("fuzzing process hung or terminated
// unexpectedly"), so a run is at most 2 ms and 128 MiB estimated.
const (
	fuzzMaxDuration = scenarios.Duration(2 * sim.Millisecond)
	fuzzMaxMemory   = 128 << 20
)

// FuzzScenarioRun: no scenario reaches a panic, from the loader through a
// short run: whatever fails is an error (a panic inside a model would be
// reported by the runner as "simulation panicked"). Seeded with every
// embedded scenario and the inputs that once panicked. CI runs it for a
// bounded time:
//
//	go test -run '^$' -fuzz FuzzScenarioRun -fuzztime 60s ./experiment
func FuzzScenarioRun(f *testing.F) {
	for _, in := range scenarios.List() {
		data, err := scenarios.Builtin(in.Name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	fo, _ := scenarios.Builtin("failover")
	for _, r := range [][2]string{
		{"at: 5ms", "at: 150ms"},                // a fault at the end (validate refuses it)
		{"duration: 150ms", "duration: 2ms"},    // a run that ends before its fault
		{"duration: 150ms", "duration: 5500us"}, // the fault in the last bin
	} {
		f.Add([]byte(strings.Replace(string(fo), r[0], r[1], 1)))
	}
	// The last one again within fuzzMaxDuration: the fault in the last
	// (partial) bin of a 1.5 ms run.
	f.Add([]byte(strings.NewReplacer("duration: 150ms", "duration: 1500us", "at: 5ms", "at: 1ms").Replace(string(fo))))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := scenarios.Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		if s.Duration > fuzzMaxDuration {
			s.Duration = fuzzMaxDuration
			if s.Validate() != nil {
				return
			}
		}
		if experiment.EstimateMemory(s).Bytes > fuzzMaxMemory {
			return
		}
		x, err := experiment.Build(s)
		if err != nil {
			return
		}
		if _, err := x.Run(); err != nil && strings.Contains(err.Error(), "panicked") {
			t.Fatalf("%v\n%s", err, data)
		}
	})
}
