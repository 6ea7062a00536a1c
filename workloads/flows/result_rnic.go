package flows

import (
	"fmt"

	"github.com/besim/besim/fabric"
	"github.com/besim/besim/report"
	"github.com/besim/besim/rnic"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
)

// window is flow f's measured interval: from its start (or outputs.warmup,
// if later) to the end of the run or its last completion.
func (x *Sim) window(f *rdmaFlow) (from, to sim.Time) {
	from = max(f.inst.Start.Time(), x.Scenario.Outputs.Warmup.Time())
	to = min(x.Kernel.Now(), x.Scenario.Duration.Time())
	if f.finished {
		to = min(to, f.finishAt)
	}
	return from, to
}

// goodput is f's delivered payload rate over its window, bits/s.
func (x *Sim) goodput(f *rdmaFlow) float64 {
	from, to := x.window(f)
	if to <= from {
		return 0
	}
	return float64(f.delivered()-f.rx0) * 8 / (to - from).Seconds()
}

// qpTable is one row per rc/ud flow: its QP pair's counters.
func (x *Sim) qpTable() report.Table {
	t := report.Table{Name: "qps", Title: "RDMA flows (one QP pair each; sender counters unless noted)", KeyName: "flow", Columns: []report.Column{
		{Name: "src"}, {Name: "dst"}, {Name: "prio"}, {Name: "posted", Unit: "KB"}, {Name: "delivered", Unit: "KB"},
		{Name: "goodput", Unit: "Gbps"}, {Name: "rate", Unit: "Gbps"}, {Name: "retransmits"}, {Name: "seq NAKs"},
		{Name: "RNR NAKs"}, {Name: "timeouts"}, {Name: "CNPs sent"}, {Name: "CNPs handled"},
		{Name: "cache hits"}, {Name: "cache misses"}, {Name: "errors"},
	}}
	for _, f := range x.rflows {
		a, b := f.sqp.Stats(), f.rqp.Stats()
		t.AddRow(f.name, float64(f.inst.Src), float64(f.inst.Dst), float64(f.inst.Prio),
			float64(f.postedBytes())/1e3, float64(f.delivered())/1e3, x.goodput(f)/1e9, float64(a.Rate)/1e9,
			float64(a.Retransmits), float64(a.SeqNAKs), float64(a.RNRNAKs), float64(a.Timeouts),
			float64(b.CNPsSent), float64(a.CNPsHandled),
			float64(a.CacheHits+b.CacheHits), float64(a.CacheMisses+b.CacheMisses), float64(f.errors))
	}
	return t
}

// nicTable is one row per NIC that sent or received anything.
func (x *Sim) nicTable() report.Table {
	t := report.Table{Name: "nics", Title: "Simulated RNICs (hosts with traffic)", KeyName: "host", Columns: []report.Column{
		{Name: "tx pkts"}, {Name: "rx pkts"}, {Name: "rx payload", Unit: "KB"}, {Name: "retransmits"},
		{Name: "seq NAKs tx"}, {Name: "RNR NAKs tx"}, {Name: "timeouts"}, {Name: "CNPs sent"}, {Name: "CNPs handled"},
		{Name: "ECN marked rx"}, {Name: "cache misses"}, {Name: "rx drops"},
	}}
	for _, h := range x.hosts {
		s := h.nic.Stats()
		if s.TxPackets+s.RxPackets == 0 {
			continue
		}
		t.AddRow(h.nic.Name(), float64(s.TxPackets), float64(s.RxPackets), float64(s.RxPayload)/1e3, float64(s.Retransmits),
			float64(s.SeqNAKsSent), float64(s.RNRNAKsSent), float64(s.Timeouts), float64(s.CNPsSent), float64(s.CNPsHandled),
			float64(s.ECNMarked), float64(s.QPCacheMisses), float64(s.RxBufferDrops+s.UDNoRecvDrops))
	}
	return t
}

// nicTotals sums every NIC's counters.
func (x *Sim) nicTotals() rnic.Stats {
	var t rnic.Stats
	for _, h := range x.hosts {
		s := h.nic.Stats()
		t.TxPackets += s.TxPackets
		t.RxPackets += s.RxPackets
		t.TxPayload += s.TxPayload
		t.RxPayload += s.RxPayload
		t.AcksSent += s.AcksSent
		t.Retransmits += s.Retransmits
		t.SeqNAKsSent += s.SeqNAKsSent
		t.SeqNAKsRcvd += s.SeqNAKsRcvd
		t.RNRNAKsSent += s.RNRNAKsSent
		t.RNRNAKsRcvd += s.RNRNAKsRcvd
		t.Timeouts += s.Timeouts
		t.CNPsSent += s.CNPsSent
		t.CNPsHandled += s.CNPsHandled
		t.ECNMarked += s.ECNMarked
		t.QPCacheHits += s.QPCacheHits
		t.QPCacheMisses += s.QPCacheMisses
		t.RxBufferDrops += s.RxBufferDrops
		t.UDNoRecvDrops += s.UDNoRecvDrops
		t.RxDiscards += s.RxDiscards
		t.CQOverruns += s.CQOverruns
	}
	return t
}

// queuesAfter is the largest sampled depth of any switch queue at or after
// instant from, and the largest mean of one queue's sampled depths there.
func queuesAfter(rep *fabric.Report, from sim.Time) (qmax int64, qmean float64) {
	for _, sw := range rep.Switches {
		for _, p := range sw.Ports {
			for _, q := range p.Prios {
				// A queue's sampled depths, and so their largest value and
				// their mean, are at most its high-water mark: one no
				// deeper than the largest mean so far (so than the largest
				// depth too) changes neither figure.
				if q.Depth == nil || float64(q.MaxQueue) <= qmean {
					continue
				}
				if n, hi, s := q.Depth.Compact().Fold(from); n > 0 {
					qmax = max(qmax, hi)
					qmean = max(qmean, s/float64(n))
				}
			}
		}
	}
	return qmax, qmean
}

// rnicMetrics adds the NIC totals, per-flow goodput and DCQCN rate, the
// queue depth after warmup, fairness, and the per-flow time series.
func (x *Sim) rnicMetrics(r *report.Result, rep *fabric.Report) {
	t := x.nicTotals()
	for _, m := range []struct {
		name string
		v    uint64
		unit string
	}{
		{"tx_packets", t.TxPackets, "packets"}, {"rx_packets", t.RxPackets, "packets"},
		{"tx_payload", t.TxPayload, "bytes"}, {"rx_payload", t.RxPayload, "bytes"},
		{"acks_sent", t.AcksSent, "packets"}, {"retransmits", t.Retransmits, "packets"},
		{"seq_naks_sent", t.SeqNAKsSent, "packets"}, {"seq_naks_rcvd", t.SeqNAKsRcvd, "packets"},
		{"rnr_naks_sent", t.RNRNAKsSent, "packets"}, {"rnr_naks_rcvd", t.RNRNAKsRcvd, "packets"},
		{"timeouts", t.Timeouts, ""}, {"cnps_sent", t.CNPsSent, "packets"}, {"cnps_handled", t.CNPsHandled, "packets"},
		{"ecn_marked_rx", t.ECNMarked, "packets"}, {"qp_cache_hits", t.QPCacheHits, ""}, {"qp_cache_misses", t.QPCacheMisses, ""},
		{"rx_buffer_drops", t.RxBufferDrops, "packets"}, {"ud_no_recv_drops", t.UDNoRecvDrops, "packets"},
		{"rx_discards", t.RxDiscards, "packets"}, {"cq_overruns", t.CQOverruns, ""},
	} {
		r.Add("nic/"+m.name, float64(m.v), m.unit)
	}
	var sum, sq float64
	for _, f := range x.rflows {
		g := x.goodput(f)
		sum += g
		sq += g * g
		r.Add("flow/"+f.name+"/goodput", g/1e9, "Gbps")
		r.Add("flow/"+f.name+"/rate", float64(f.sqp.Rate())/1e9, "Gbps")
	}
	r.Add("flows/goodput", sum/1e9, "Gbps")
	if n := len(x.rflows); n > 1 && sq > 0 {
		r.Add("flows/jain_fairness", sum*sum/(float64(n)*sq), "")
	}

	// The switch queues after warmup, from the sampled depth series.
	qmax, qmean := queuesAfter(rep, x.Scenario.Outputs.Warmup.Time())
	if x.Scenario.Outputs.Series != scenarios.SeriesNone { // no series, no figure (not a zero)
		r.Add("queue/max_after_warmup", float64(qmax), "bytes")
		r.Add("queue/mean_after_warmup", qmean, "bytes")
		if len(x.Scenario.Outputs.Queues) > 0 {
			r.Notes = append(r.Notes, "queue/max_after_warmup and queue/mean_after_warmup are over the queues outputs.queues marks")
		}
	}

	for _, f := range x.sampled {
		fs := f.series
		if fs.rate != nil { // DCQCN on
			ser := report.Series{Name: "flow/" + f.name + "/rate", Unit: "Gbps"}
			for i, at := range fs.rate.T {
				ser.T = append(ser.T, at.Seconds())
				ser.V = append(ser.V, float64(fs.rate.V[i])/1e9)
			}
			r.Series = append(r.Series, ser)
		}
		ser := report.Series{Name: "flow/" + f.name + "/goodput", Unit: "Gbps"}
		for i := 1; i < len(fs.rx.T); i++ {
			dt := (fs.rx.T[i] - fs.rx.T[i-1]).Seconds()
			ser.T = append(ser.T, fs.rx.T[i].Seconds())
			ser.V = append(ser.V, float64(fs.rx.V[i]-fs.rx.V[i-1])*8/dt/1e9)
		}
		r.Series = append(r.Series, ser)
	}
}

// rnicNotes explain the RDMA part of a run.
func (x *Sim) rnicNotes(r *report.Result) {
	s := x.Scenario
	t := x.nicTotals()
	w := "from each flow's start"
	if s.Outputs.Warmup > 0 {
		w = fmt.Sprintf("from outputs.warmup (%s) or the flow's start, whichever is later,", s.Outputs.Warmup)
	}
	r.Notes = append(r.Notes, fmt.Sprintf("rc/ud goodput is the destination QP's in-order payload measured %s to the end of the run or the flow's last completion; rate is the sender QP's current DCQCN rate (the line rate without DCQCN)", w))
	if x.hosts[0].nic.Config().CC == rnic.CCDCQCN {
		r.Notes = append(r.Notes, fmt.Sprintf("DCQCN: %d CE-marked packets received, %d CNPs sent by notification points, %d handled by reaction points",
			t.ECNMarked, t.CNPsSent, t.CNPsHandled))
	} else {
		r.Notes = append(r.Notes, "no congestion control (rnic.cc: none): every QP sends at line rate, so congestion is held back by PFC (lossless classes) or drops (lossy)")
	}
	if s.Outputs.Series == scenarios.SeriesNone {
		// no series, nothing kept
	} else if len(s.Outputs.Flows) > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("time series kept for the %d of %d rc/ud flows outputs.flows marks", len(x.sampled), len(x.rflows)))
	} else if len(x.rflows) > maxFlowSeries {
		r.Notes = append(r.Notes, fmt.Sprintf("time series kept for the first %d of %d rc/ud flows", maxFlowSeries, len(x.rflows)))
	}
	for _, f := range x.rflows {
		if f.fail != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("flow %s stopped: %v", f.name, f.fail))
		}
	}
}
