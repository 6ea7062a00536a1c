package ps

import (
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/workloads/app"
)

// FromScenario translates the workload section of a ps-cluster scenario
// (its size distributions prepared, no defaults applied: the scenario's
// own defaults are already in). besim and berun both use it, so they run
// the same workload.
func FromScenario(s *scenarios.Scenario) (Config, error) {
	w := s.Workload
	cfg := Config{HostsPerLeaf: w.HostsPerLeaf, Spines: w.Spines, Servers: w.Servers, Shards: w.Shards,
		Rankers: w.Rankers, Trainers: w.Trainers, Request: int(w.Request), FanOut: w.FanOut,
		RankerOutstanding: w.Outstanding, RankerRate: w.Rate, FetchResponse: app.Sizes(w.Response),
		TrainerShards: w.TrainerShards, Replicas: w.Replicas, Warmup: w.Warmup.Time(), Measure: s.Duration.Time(), Seed: s.Seed}
	if w.Compute != nil {
		cfg.Compute = max(w.Compute.Time(), 1)
	}
	if w.Push != nil {
		cfg.PushSize = app.Sizes(*w.Push)
	}
	cfg.Transport = string(w.Transport)
	for _, d := range []*app.SizeDist{&cfg.FetchResponse, &cfg.PushSize} {
		if err := d.Prepare(); err != nil {
			return cfg, s.Errorf("workload.response", "%v", err)
		}
	}
	return cfg, nil
}
