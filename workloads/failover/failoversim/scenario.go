package failoversim

import (
	"fmt"
	"io"
	"math"

	"github.com/besim/besim/experiment"
	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
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

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Reduce adds one failover run's metrics, tables and series to r.
func Reduce(r *report.Result, cfg *Config, res *Result) {
	ms := func(t sim.Time) float64 {
		if t < 0 {
			return math.NaN() // never: a missing value (null in JSON)
		}
		return t.Seconds() * 1e3
	}
	// One list feeds both the metrics and the table, in the same order.
	tbl := report.Table{Name: "failover", Title: "Recovery (paper §7.2): fetches through the RPC layer, times after the first fault",
		KeyName: "what", Columns: []report.Column{{Name: "value"}}}
	for _, m := range []struct {
		metric, unit, row string
		v                 float64
	}{
		{"started", "", "fetches started", float64(res.Started)},
		{"completed", "", "completed", float64(res.Completed)},
		{"failed", "", "failed", float64(res.Failed)},
		{"retried", "", "retried (request timeout)", float64(res.Retries)},
		{"resent", "", "re-sent (after a timeout or an engine error)", float64(res.Resent)},
		{"stranded", "", "outstanding at the end", float64(res.Stranded)},
		{"tcp_sends", "", "sent over the TCP fallback", float64(res.TCPSends)},
		{"conn_failures", "", "connection failures (summed over clients)", float64(res.ConnFailures)},
		{"req_failures", "", "request failures", float64(res.ReqFailures)},
		{"quarantine_trips", "", "quarantine trips", float64(res.QuarantineTrips)},
		{"quarantine_releases", "", "quarantine releases", float64(res.QuarantineReleases)},
		{"quarantined_at_end", "", "nodes quarantined at the end", float64(res.QuarantinedAtEnd)},
		{"detected_after", "ms", "detected after (ms)", ms(res.DetectedAfter)},
		{"recovered_after", "ms", "first retried fetch answered after (ms)", ms(res.RecoveredAfter)},
		{"rate_before", "fetches/ms", "rate before the fault (fetches/ms)", res.BaseRate / ms(res.Bin)}, // per ms bin
		{"rate_recovered_after", "ms", "rate back to 90% after (ms; 0 never dipped, missing if never back)", ms(res.RateRecoveredAfter)},
		{"rate_never_recovered", "", "rate never back to 90% (1 yes, 0 no)", b2f(res.RateRecoveredAfter < 0)},
	} {
		r.Add("failover/"+m.metric, m.v, m.unit)
		tbl.AddRow(m.row, m.v)
	}
	ser := report.Series{Name: "failover/rate", Unit: "fetches/ms"}
	for i, v := range res.Rate {
		ser.T = append(ser.T, (sim.Time(i+1) * res.Bin).Seconds())
		ser.V = append(ser.V, float64(v)/ms(res.Bin))
	}
	r.Series = append(r.Series, ser)
	r.Tables = append(r.Tables, tbl)
	r.Notes = append(r.Notes, fmt.Sprintf("layout: clients are hosts 0..%d; replica A of shard s is host %d+s, replica B host %d+s",
		cfg.Clients-1, cfg.Hosts(), 2*cfg.Hosts()))
	for _, e := range res.Errors {
		r.Notes = append(r.Notes, "error: "+e.Error())
	}
}
