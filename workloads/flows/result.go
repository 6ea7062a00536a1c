package flows

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/besim/besim/fabric"
	"github.com/besim/besim/pfc"
	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
)

const maxSeries = 4 // queue-depth series kept in a result: the deepest queues

// Result reduces the fabric's counters at the current instant.
func (x *Sim) Result() *report.Result {
	rep := x.Net.Report()
	s := x.Scenario
	r := &report.Result{Tool: "besim", Scenario: s.Name, Seed: s.Seed, Duration: rep.Time.String()}

	flows := report.Table{Name: "flows", Title: "Flows", KeyName: "flow", Columns: []report.Column{
		{Name: "src"}, {Name: "dst"}, {Name: "prio"}, {Name: "sent", Unit: "KB"}, {Name: "delivered", Unit: "KB"},
		{Name: "goodput", Unit: "Gbps"}, {Name: "mean lat", Unit: "us"}, {Name: "max lat", Unit: "us"}, {Name: "ECN marked"},
	}}
	for _, f := range rep.Flows {
		name := fmt.Sprint(f.ID)
		if int(f.ID) < len(x.flows) {
			name = x.flows[f.ID].name
		}
		mean := 0.0
		if f.DeliveredPackets > 0 {
			mean = (f.SumLatency / sim.Time(f.DeliveredPackets)).Seconds() * 1e6
		}
		flows.AddRow(name, float64(f.Flow.Src), float64(f.Flow.Dst), float64(f.Flow.Prio),
			float64(f.SentBytes)/1e3, float64(f.DeliveredBytes)/1e3, f.Goodput()/1e9,
			mean, f.MaxLatency.Seconds()*1e6, float64(f.ECNMarked))
	}

	ports := report.Table{Name: "ports", Title: "Switch ports (rows with drops, marks or pauses)", KeyName: "port/prio", Columns: []report.Column{
		{Name: "tx pkts"}, {Name: "drops"}, {Name: "ECN marks"}, {Name: "pause tx"}, {Name: "pause rx"},
		{Name: "paused", Unit: "us"}, {Name: "max queue", Unit: "KB"}, {Name: "max ingress", Unit: "KB"},
	}}
	// Only the maxSeries deepest queues' series are converted; the others
	// stay recorded as runs (a queue is a candidate from its counters
	// alone).
	// A queue's key is formatted only for a row or a kept series.
	key := fabric.QueueName
	type depth struct {
		sw, peer string
		prio     int
		max      int64
		c        *pfc.Recorder
	}
	var depths []depth
	for _, sw := range rep.Switches {
		for _, p := range sw.Ports {
			for _, q := range p.Prios {
				prio := q.Prio
				if q.Drops+q.ECNMarks+q.PauseTx+q.PauseRx+q.HeadroomDrops > 0 {
					ports.AddRow(key(sw.Name, p.PeerName, prio), float64(q.TxPackets), float64(q.Drops+q.HeadroomDrops+q.WatchdogDrops),
						float64(q.ECNMarks), float64(q.PauseTx), float64(q.PauseRx), q.PausedTime.Seconds()*1e6,
						float64(q.MaxQueue)/1e3, float64(q.Ingress.MaxBytes)/1e3)
				}
				if q.Depth != nil && q.MaxQueue > 0 {
					depths = append(depths, depth{sw.Name, p.PeerName, prio, q.MaxQueue, q.Depth})
				}
			}
		}
	}
	slices.SortStableFunc(depths, func(a, b depth) int { return cmp.Compare(b.max, a.max) })
	o := &x.Scenario.Outputs
	keep := maxSeries
	if o.Series == scenarios.SeriesAll || len(o.Queues) > 0 {
		keep = len(depths)
	}
	if len(o.Queues) > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("switch queues outputs.queues marks, the only ones sampled: %d; of them with a depth series (a frame held): %d",
			x.Net.SampledQueues(), len(depths)))
	}
	for i := 0; i < len(depths) && i < keep; i++ {
		d := depths[i]
		ser := report.Series{Name: "queue/" + key(d.sw, d.peer, d.prio), Unit: "bytes"}
		for t, v := range d.c.Compact().Points() {
			ser.T = append(ser.T, t.Seconds())
			ser.V = append(ser.V, float64(v))
		}
		r.Series = append(r.Series, ser)
	}

	hosts := report.Table{Name: "hosts", Title: "Host uplinks paused by PFC", KeyName: "host", Columns: []report.Column{
		{Name: "pause rx"}, {Name: "paused", Unit: "us"}, {Name: "tx", Unit: "KB"}, {Name: "rx", Unit: "KB"},
	}}
	for _, h := range rep.Hosts {
		var prx int64
		var paused sim.Time
		var tx, rx int64
		for i := 0; i < fabric.NumPrio; i++ {
			prx += h.PauseRx[i]
			paused = max(paused, h.PausedTime[i])
			tx += h.Counters.TxBytes[i]
			rx += h.Counters.RxBytes[i]
		}
		if prx > 0 {
			hosts.AddRow(h.Name, float64(prx), paused.Seconds()*1e6, float64(tx)/1e3, float64(rx)/1e3)
		}
	}
	if len(rep.Flows) > 0 || len(x.rflows) == 0 {
		r.Tables = append(r.Tables, flows)
	}
	if len(x.rflows) > 0 {
		r.Tables = append(r.Tables, x.qpTable(), x.nicTable())
	}
	r.Tables = append(r.Tables, ports)
	if len(hosts.Rows) > 0 {
		r.Tables = append(r.Tables, hosts)
	}

	t := rep.Totals
	var sent, delivered int64
	for _, f := range rep.Flows {
		sent += f.SentBytes
		delivered += f.DeliveredBytes
	}
	for _, f := range x.rflows {
		sent += f.postedBytes()
		delivered += int64(f.delivered())
	}
	r.Add("flows/sent", float64(sent), "bytes")
	r.Add("flows/delivered", float64(delivered), "bytes")
	r.Add("fabric/drops", float64(t.Drops), "packets")
	r.Add("fabric/headroom_drops", float64(t.HeadroomDrops), "packets")
	r.Add("fabric/watchdog_drops", float64(t.WatchdogDrops), "packets")
	r.Add("fabric/ecn_marks", float64(t.ECNMarks), "packets")
	r.Add("pfc/frames_tx", float64(t.PFCFramesTx), "frames")
	r.Add("pfc/xoff_events", float64(t.XOFFEvents), "")
	r.Add("pfc/host_paused", t.HostPausedTime.Seconds()*1e6, "us")
	r.Add("pfc/longest_pause_host", t.LongestHostPause.Seconds()*1e6, "us")
	r.Add("pfc/longest_pause_switch", t.LongestPortPause.Seconds()*1e6, "us")
	r.Add("pfc/storm_trips", float64(t.StormTrips), "")
	r.Add("switch/max_shared_used", float64(t.SharedUsedMax), "bytes")
	r.Add("fabric/queued_at_end", float64(t.QueuedBytes), "bytes")
	r.Add("fabric/in_flight_at_end", float64(t.InFlightBytes+t.HeldBytes), "bytes")
	for _, f := range rep.Flows {
		name := fmt.Sprint(f.ID)
		if int(f.ID) < len(x.flows) {
			name = x.flows[f.ID].name
		}
		r.Add("flow/"+name+"/goodput", f.Goodput()/1e9, "Gbps")
	}
	if len(x.rflows) > 0 {
		x.rnicMetrics(r, rep)
	}
	r.Notes = append(r.Notes, rep.Warnings...)
	r.Notes = append(r.Notes, x.pfcNote(rep))
	if len(x.rflows) > 0 {
		x.rnicNotes(r)
	}
	return r
}

// pfcNote says in words why PFC did or did not fire, the question users of
// other simulators most often cannot answer from their output.
func (x *Sim) pfcNote(rep *fabric.Report) string {
	cfg := x.Net.Config()
	if cfg.Switch.PFC.LosslessMask() == 0 {
		return "PFC did not fire: no priority is lossless (PFC disabled or no lossless class), so congested queues drop instead"
	}
	if rep.Totals.XOFFEvents > 0 {
		var where []string
		for _, sw := range rep.Switches {
			for _, p := range sw.Ports {
				for _, q := range p.Prios {
					if q.XOFFEvents > 0 && len(where) < 3 {
						where = append(where, fmt.Sprintf("%s ingress from %s prio %d (held at most %d B, %d B of it in headroom of %d B)",
							sw.Name, p.PeerName, q.Prio, q.Ingress.MaxBytes, q.Ingress.MaxHeadroom, p.Headroom))
					}
				}
			}
		}
		return fmt.Sprintf("PFC fired: %d XOFF events, %d PFC frames; the dynamic XOFF threshold shrinks as the shared buffer fills; paused ingress groups include %s",
			rep.Totals.XOFFEvents, rep.Totals.PFCFramesTx, strings.Join(where, "; "))
	}
	var maxHeld, xoff int64
	var at string
	for _, sw := range rep.Switches {
		for _, p := range sw.Ports {
			for _, q := range p.Prios {
				if q.Ingress.MaxXOFF > 0 && q.Ingress.MaxBytes >= maxHeld {
					maxHeld, xoff = q.Ingress.MaxBytes, q.Ingress.MaxXOFF
					at = fmt.Sprintf("%s ingress from %s prio %d", sw.Name, p.PeerName, q.Prio)
				}
			}
		}
	}
	return fmt.Sprintf("PFC did not fire: the fullest lossless ingress group (%s) held at most %d B, below its XOFF threshold (at most %d B)", at, maxHeld, xoff)
}
