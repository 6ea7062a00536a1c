package experiment

import (
	"fmt"
	"time"

	"github.com/besim/besim/byteexpress/rpc"
	"github.com/besim/besim/fabric"
	"github.com/besim/besim/faults"
	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/workloads"
)

// FaultSpecs translates the scenario's faults section (times relative to
// the measured interval's start).
func FaultSpecs(s *scenarios.Scenario) []faults.Spec {
	var out []faults.Spec
	for _, f := range s.Faults {
		sp := faults.Spec{Kind: faults.Kind(f.Kind), At: f.At.Time(), Switch: -1, Duration: f.Duration.Time(),
			Period: f.Period.Time(), Count: f.Count, Drop: f.Drop.Float64(), Corrupt: f.Corrupt.Float64()}
		if f.Host != nil {
			sp.Host = *f.Host
		}
		if f.Switch != nil && f.Port != nil {
			sp.Switch, sp.Port = *f.Switch, *f.Port
		}
		if f.Prio != nil {
			sp.Prio = *f.Prio
			if f.Kind == scenarios.FaultLoss {
				sp.Prios = 1 << *f.Prio
			}
		}
		out = append(out, sp)
	}
	return out
}

// FaultsResult adds what the injector did and what the faulty links lost.
func FaultsResult(r *report.Result, log []faults.Event, t fabric.Totals) {
	if len(log) == 0 {
		return
	}
	tbl := report.Table{Name: "faults", Title: "Injected faults (paper §7), in time order", KeyName: "fault",
		Columns: []report.Column{{Name: "at", Unit: "ms"}}}
	for _, e := range log {
		tbl.AddRow(e.What, e.At.Seconds()*1e3)
	}
	r.Tables = append(r.Tables, tbl)
	r.Add("faults/steps", float64(len(log)), "")
	r.Add("faults/link_drops", float64(t.FaultDrops), "frames")
	r.Add("faults/pfc_lost", float64(t.FaultPFCLost), "frames")
	r.Add("faults/storm_trips", float64(t.StormTrips), "")
}

// FailoverConfig translates a workload scenario of kind failover.
func FailoverConfig(s *scenarios.Scenario) (workloads.FailoverConfig, error) {
	w := s.Workload
	sc, err := clusterConfig(s)
	if err != nil {
		return workloads.FailoverConfig{}, err
	}
	sc.BE.KeepaliveInterval = simhostDuration(w.Keepalive.Interval.Time())
	sc.BE.KeepaliveTimeout = simhostDuration(w.Keepalive.Timeout.Time())
	if w.Keepalive.Interval == 0 {
		sc.BE.KeepaliveInterval = -1 // the scenario's 0 is "off"; byteexpress reads 0 as its default
	}
	rc := rpc.DefaultConfig()
	rc.ConnTimeout = simhostDuration(w.RPC.ConnectTimeout.Time())
	rc.RequestTimeout = simhostDuration(w.RPC.RequestTimeout.Time())
	rc.RetryProb, rc.MaxAttempts = w.RPC.RetryProb.Float64(), w.RPC.MaxAttempts
	rc.Window, rc.ProbeInterval = simhostDuration(w.RPC.QuarantineWindow.Time()), simhostDuration(w.RPC.ProbeInterval.Time())
	rc.MaxConnFailures, rc.MaxReqFailures = w.RPC.MaxConnFailures, w.RPC.MaxReqFailures
	return workloads.FailoverConfig{Cluster: sc, Shards: w.Shards, Clients: w.Clients, Outstanding: w.Outstanding,
		Response: int(w.Response.Size), Request: int(w.Request), HostsPerLeaf: w.HostsPerLeaf, Warmup: w.Warmup.Time(),
		RPC: rc, Faults: FaultSpecs(s), Run: s.Duration.Time(), Seed: s.Seed, TCPFallback: w.TCPFallback}, nil
}

// FailoverResult adds one failover run's metrics, tables and series.
func FailoverResult(r *report.Result, cfg *workloads.FailoverConfig, res *workloads.FailoverResult) {
	ms := func(t sim.Time) float64 {
		if t < 0 {
			return -1 // never
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
		{"rate_recovered_after", "ms", "rate back to 90% after (ms; 0 never dipped, -1 never back)", ms(res.RateRecoveredAfter)},
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
		cfg.Clients-1, max(cfg.Shards, cfg.Clients, cfg.HostsPerLeaf), 2*max(cfg.Shards, cfg.Clients, cfg.HostsPerLeaf)))
	for _, e := range res.Errors {
		r.Notes = append(r.Notes, "error: "+e.Error())
	}
}

func simhostDuration(t sim.Time) time.Duration { return time.Duration(t / sim.Nanosecond) }
