package failoversim

import (
	"fmt"
	"io"

	"github.com/besim/besim/experiment"
	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/workloads/failover"
)

func init() { experiment.Register(string(scenarios.Failover), build) }

func build(s *scenarios.Scenario) (experiment.Runner, error) {
	cfg, err := FromScenario(s)
	if err != nil {
		return nil, err
	}
	return &experiment.Workload{Scenario: s, Fabric: cfg.Cluster.Fabric,
		Summary: func(out io.Writer) error {
			f := &cfg
			_, err := fmt.Fprintf(out, "%s: valid (workload failover: %d shards on replica pairs in two mini-pods, %d clients x %d fetches of %d B through the RPC layer (Tr %v), %d faults; %s simulated after setup)\n",
				s.Name, f.Shards, f.Clients, f.Outstanding, f.Response, f.RPC.RequestTimeout, len(f.Faults), s.Duration)
			return err
		},
		Simulate: func(r *report.Result) (uint64, error) {
			res, err := Run(cfg)
			if err != nil {
				return 0, err
			}
			Reduce(r, &cfg, res)
			experiment.FaultsResult(r, res.Faults, res.Report.Totals)
			return res.Events, nil
		}}, nil
}

// FromScenario translates a workload scenario of kind failover: the
// workload (failover.FromScenario), the cluster it runs on, with the
// scenario's keepalive, and its faults.
func FromScenario(s *scenarios.Scenario) (Config, error) {
	sc, err := experiment.ClusterConfig(s)
	if err != nil {
		return Config{}, err
	}
	w, err := failover.FromScenario(s)
	if err != nil {
		return Config{}, err
	}
	sc.BE.KeepaliveInterval, sc.BE.KeepaliveTimeout = w.KeepaliveInterval, w.KeepaliveTimeout
	return Config{Config: w, Cluster: sc, Faults: experiment.FaultSpecs(s)}, nil
}

// Summary is res as the numbers both runners reduce.
func (res *Result) Summary() failover.Summary {
	return failover.Summary{Started: res.Started, Completed: res.Completed, Failed: res.Failed, Retries: res.Retries,
		Resent: res.Resent, Stranded: res.Stranded, TCPSends: res.TCPSends, ConnFailures: res.ConnFailures,
		ReqFailures: res.ReqFailures, QuarantineTrips: res.QuarantineTrips, QuarantineReleases: res.QuarantineReleases,
		QuarantinedAtEnd: res.QuarantinedAtEnd, PathChanges: res.PathChanges, PathSkips: res.PathSkips,
		DetectedAfter: res.DetectedAfter, RecoveredAfter: res.RecoveredAfter,
		RateRecoveredAfter: res.RateRecoveredAfter, BaseRate: res.BaseRate, Bin: res.Bin}
}

// Reduce adds one failover run's metrics, tables and series to r.
func Reduce(r *report.Result, cfg *Config, res *Result) {
	sum := res.Summary()
	r.Tables = append(r.Tables, failover.Table(r, &sum))
	r.Series = append(r.Series, failover.RateSeries(res.Rate, res.Bin))
	r.Notes = append(r.Notes, fmt.Sprintf("layout: clients are hosts 0..%d; replica A of shard s is host %d+s, replica B host %d+s",
		cfg.Clients-1, cfg.Hosts(), 2*cfg.Hosts()))
	for _, e := range res.Errors {
		r.Notes = append(r.Notes, "error: "+e.Error())
	}
}
