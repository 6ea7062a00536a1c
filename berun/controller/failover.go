package controller

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/besim/besim/berun/role"
	"github.com/besim/besim/report"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/workloads/failover"
)

// failoverReport reduces failover-client results to besim's failover
// metric names (failover/started ... failover/rate_never_recovered, the
// failover table and the failover/rate series) with the reduction besim
// uses (failover.Table, failover.RateRecovery): counts summed over the
// clients, detection and recovery the earliest any client saw (all
// measure from the same fault_at), completions per bin summed. A crashed
// server is a note.
func failoverReport(r *report.Result, rf *ResultFile) {
	var (
		sum     failover.Summary
		bins    []int
		bin     sim.Time
		faultAt = sim.Time(-1)
		served  []int
		clients int
	)
	first := func(cur, v sim.Time) sim.Time {
		if v > 0 && (cur == 0 || v < cur) {
			return v
		}
		return cur
	}
	for _, h := range rf.Hosts {
		for _, ro := range h.Roles {
			if ro.Role == "failover-server" && ro.Metrics["crashed"] == 1 {
				r.Notes = append(r.Notes, fmt.Sprintf("%s on %s crashed (closed its endpoint) %gs after the start, after %g answers", ro.ID, h.Name, ro.Metrics["crashed_at_s"], ro.Metrics["requests"]))
			}
			if ro.Role != "failover-client" {
				continue
			}
			clients++
			var d role.FailoverDetail
			if len(ro.Detail) == 0 || json.Unmarshal(ro.Detail, &d) != nil || d.BinNs <= 0 {
				r.Notes = append(r.Notes, fmt.Sprintf("%s: no failover detail in its result (%s)", ro.ID, ro.Status))
				continue
			}
			s := d.Summary
			sum.Started += s.Started
			sum.Completed += s.Completed
			sum.Failed += s.Failed
			sum.Retries += s.Retries
			sum.Resent += s.Resent
			sum.Stranded += s.Stranded
			sum.TCPSends += s.TCPSends
			sum.ConnFailures += s.ConnFailures
			sum.ReqFailures += s.ReqFailures
			sum.QuarantineTrips += s.QuarantineTrips
			sum.QuarantineReleases += s.QuarantineReleases
			sum.QuarantinedAtEnd += s.QuarantinedAtEnd
			sum.DetectedAfter = first(sum.DetectedAfter, s.DetectedAfter)
			sum.RecoveredAfter = first(sum.RecoveredAfter, s.RecoveredAfter)
			if b := sim.Time(d.BinNs) * sim.Nanosecond; bin != 0 && b != bin {
				r.Notes = append(r.Notes, fmt.Sprintf("%s: bins of %v, the others' %v: its rate left out", ro.ID, b, bin))
			} else {
				bin = b
				for len(bins) < len(d.Bins) {
					bins = append(bins, 0)
				}
				for i, v := range d.Bins {
					bins[i] += v
				}
			}
			if d.FaultAtNs >= 0 {
				faultAt = sim.Time(d.FaultAtNs) * sim.Nanosecond
			}
			for len(served) < len(d.Served) {
				served = append(served, 0)
			}
			for i, v := range d.Served {
				served[i] += v
			}
			for _, e := range d.Errors {
				r.Notes = append(r.Notes, ro.ID+": error: "+e)
			}
		}
	}
	if clients == 0 {
		return
	}
	sum.Bin = bin
	sum.BaseRate, sum.RateRecoveredAfter = failover.RateRecovery(bins, bin, faultAt)
	r.Tables = append(r.Tables, failover.Table(r, &sum))
	if bin > 0 {
		r.Series = append(r.Series, failover.RateSeries(bins, bin))
	}
	var by []string
	for i, v := range served {
		if v > 0 {
			by = append(by, fmt.Sprintf("%d: %d", i, v))
		}
	}
	r.Notes = append(r.Notes, "fetches answered per host (scenario layout index): "+strings.Join(by, ", "))
}
