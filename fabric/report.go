package fabric

import (
	"fmt"
	"github.com/besim/besim/units"
	"io"
	"slices"
	"strings"

	"github.com/besim/besim/pfc"
	"github.com/besim/besim/sim"
)

// Report is every fabric counter at one instant, gathered in one place.
// It is plain data (safe to keep, compare, serialize).
type Report struct {
	Time     sim.Time
	Flows    []FlowStats
	Hosts    []HostReport
	Switches []SwitchReport
	Totals   Totals
	// Warnings explain anything that means a misconfiguration, first of all
	// lossless headroom overflow drops.
	Warnings []string
}

// Totals sum the per-port counters. Bytes are frame bytes (Ethernet header
// to FCS) of data frames unless a name says otherwise.
type Totals struct {
	HostTxPackets, HostTxBytes int64 // data sent by host uplinks
	HostRxPackets, HostRxBytes int64 // data delivered to hosts

	Drops, DropBytes                 int64 // lossy drops
	HeadroomDrops, HeadroomDropBytes int64 // lossless drops: headroom overflow (misconfiguration)
	WatchdogDrops, WatchdogDropBytes int64 // dropped by the storm watchdog
	NoRouteDrops, NoRouteDropBytes   int64
	FaultDrops, FaultDropBytes       int64 // host frames (data, ACK/NAK, CNP) lost on faulty links (down, drop rate, corruption)
	FaultPFCLost                     int64 // PFC frames lost on faulty links

	QueuedPackets, QueuedBytes     int64 // in switch egress queues now
	InFlightPackets, InFlightBytes int64 // data frames on links now
	HeldPackets, HeldBytes         int64 // returned by a host for a paused priority, not yet sent

	ECNMarks       int64
	PFCFramesTx    int64 // all PFC frames sent (switches and NICs)
	PFCFramesRx    int64
	XOFFEvents     int64 // switch priority groups asserting pause
	StormTrips     int64
	PoolLive       int   // packets taken from the pool and not returned
	PoolAllocated  int   // packets the pool ever created
	SharedUsedMax  int64 // largest shared-buffer use of any switch
	HostPausedTime sim.Time
	// The longest continuous pause the peer of any host uplink, or of any
	// switch egress queue, asked for (a refreshed pause is one interval,
	// watchdog overrides included): how close the fabric came to a
	// storm-watchdog detection.
	LongestHostPause, LongestPortPause sim.Time
}

// HostReport is one host uplink.
type HostReport struct {
	ID              NodeID
	Name            string
	Counters        HostCounters
	PFCFramesTx     int64
	PFCFramesRx     int64
	PauseRx         [NumPrio]int64    // XOFF entries received from the switch
	PausedTime      [NumPrio]sim.Time // how long the switch paused each priority
	LongestPause    [NumPrio]sim.Time // its longest continuous pause
	PauseTx         [NumPrio]int64    // XOFF entries sent (SetPause/SendPause)
	PauseAssertTime [NumPrio]sim.Time
}

// SwitchReport is one switch.
type SwitchReport struct {
	ID                                 NodeID
	Name                               string
	Buffer, SharedSize, Reserved       int64
	SharedUsed, HeadroomUsed           int64
	MaxSharedUsed, MaxHeadroomUsed     int64
	NoRouteDrops, NoRouteDropBytes     int64
	Ports                              []PortReport
	PFCFramesTx, PFCFramesRx           int64
	Drops, HeadroomDrops, ECNMarks     int64
	WatchdogDrops, XOFFEvents, PauseRx int64
}

// PortReport is one switch port.
type PortReport struct {
	Index       int
	Peer        NodeID
	PeerName    string
	Rate        units.Rate
	Headroom    units.Size
	PFCFramesTx int64
	PFCFramesRx int64
	// Prios are the priorities with anything to report here (a frame
	// carried, a PFC frame sent or received, a depth series), ascending;
	// a scenario uses 1-3 of the 8, and eight reports a port came to about
	// 11 MB for a k=16 fat-tree. Prio reads any priority.
	Prios []PrioReport
	// IdleXOFF and IdleXON are the thresholds in force now at each
	// lossless priority (0 at a lossy one), what Prio reports for a
	// priority not in Prios.
	IdleXOFF, IdleXON [NumPrio]int64
}

// Prio is priority i's report: its entry in Prios, or for a priority with
// nothing to report, fresh state (zero counters, the thresholds in force).
func (p *PortReport) Prio(i int) PrioReport {
	for _, q := range p.Prios {
		if q.Prio == i {
			return q
		}
	}
	return PrioReport{Prio: i, XOFF: p.IdleXOFF[i], XON: p.IdleXON[i]}
}

// PrioReport is one (port, priority): the egress queue, and the ingress
// priority group that the port's peer feeds.
type PrioReport struct {
	Prio int // the priority, 0-7
	PrioCounters
	Queued int64 // egress bytes queued now
	// Pauses received from the peer (this egress queue paused).
	PauseRx, ResumeRx int64
	PausedTime        sim.Time
	LongestPause      sim.Time
	StormTrips        int64
	StormRestores     int64
	// Pauses sent to the peer (this ingress priority group full).
	PauseTx, ResumeTx int64
	XOFFEvents        int64
	PauseAssertTime   sim.Time
	Ingress           pfc.IngressStats
	XOFF, XON         int64 // thresholds in force now
	// Depth is the sampled egress queue depth (nil without sampling or if the
	// queue never held a frame), recorded: Depth.Compact() builds its
	// points (Points, Series, Fold).
	Depth *pfc.Recorder
}

// Report gathers all counters now.
func (n *Network) Report() *Report {
	now := n.K.Now()
	// Sized up front: a k=16 fat-tree's 5,120 port reports are about 11 MB,
	// and growing the slices by appending allocated twice that at the end
	// of a run, when the heap is at its largest.
	r := &Report{Time: now, Flows: make([]FlowStats, 0, len(n.flows)),
		Hosts: make([]HostReport, 0, len(n.Hosts)), Switches: make([]SwitchReport, 0, len(n.Switches))}
	t := &r.Totals
	var prios []PrioReport
	var ends []int
	var fresh pfc.Ingress // what an unused priority's ingress group reads as
	for _, f := range n.flows {
		r.Flows = append(r.Flows, *f)
	}
	for _, h := range n.Hosts {
		rxs, txs := h.rx.Stats(), h.tx.Stats()
		hr := HostReport{ID: h.id, Name: n.NodeName(h.id), Counters: h.st,
			PFCFramesTx: txs.Frames, PFCFramesRx: rxs.Frames}
		for i := 0; i < NumPrio; i++ {
			hr.PauseRx[i] = rxs.Pauses[i]
			hr.PausedTime[i] = h.rx.PausedTime(now, i)
			hr.LongestPause[i] = h.rx.LongestPause(now, i)
			t.LongestHostPause = max(t.LongestHostPause, hr.LongestPause[i])
			hr.PauseTx[i] = txs.Pauses[i]
			hr.PauseAssertTime[i] = h.tx.AssertedTime(now, i)
			t.HostTxPackets += h.st.TxPackets[i]
			t.HostTxBytes += h.st.TxBytes[i]
			t.HostRxPackets += h.st.RxPackets[i]
			t.HostRxBytes += h.st.RxBytes[i]
			t.HostPausedTime += hr.PausedTime[i]
		}
		if h.held != nil {
			t.HeldPackets++
			t.HeldBytes += int64(h.held.Size)
		}
		t.PFCFramesTx += hr.PFCFramesTx
		t.PFCFramesRx += hr.PFCFramesRx
		r.Hosts = append(r.Hosts, hr)
	}
	for _, sw := range n.Switches {
		b := &sw.buf
		sr := SwitchReport{ID: sw.ID, Name: sw.Name, Buffer: b.Size, SharedSize: b.SharedSize(), Reserved: b.Reserved,
			SharedUsed: b.SharedUsed, HeadroomUsed: b.HeadroomUsed, MaxSharedUsed: b.MaxSharedUsed, MaxHeadroomUsed: b.MaxHeadroomUsed,
			NoRouteDrops: sw.NoRoute, NoRouteDropBytes: sw.NoRouteBytes, Ports: make([]PortReport, 0, len(sw.Ports))}
		// The switch's priority reports, gathered in prios and then
		// copied into one slice its ports share; port k's end at ends[k].
		prios, ends = prios[:0], ends[:0]
		for _, p := range sw.Ports {
			rxs, txs := p.rx.Stats(), p.tx.Stats()
			pr := PortReport{Index: p.Index, Peer: p.Peer, PeerName: n.NodeName(p.Peer), Rate: p.rate, Headroom: p.headroom,
				PFCFramesTx: txs.Frames, PFCFramesRx: rxs.Frames}
			for i := 0; i < NumPrio; i++ {
				c := p.cls[i]
				q := PrioReport{
					Prio: i, PrioCounters: p.Counters(i),
					PauseRx: rxs.Pauses[i], ResumeRx: rxs.Resumes[i], PausedTime: p.rx.PausedTime(now, i),
					LongestPause: p.rx.LongestPause(now, i),
					StormTrips:   rxs.StormTrips[i], StormRestores: rxs.StormRestores[i],
					PauseTx: txs.Pauses[i], ResumeTx: txs.Resumes[i], XOFFEvents: txs.XOFF[i],
					PauseAssertTime: p.tx.AssertedTime(now, i),
				}
				if c != nil {
					p.syncClass(c)
					q.Queued, q.Ingress, q.Depth = c.q.Bytes, c.in.Stats, c.depth
					if c.in.Thresholds().Lossless {
						q.XOFF, q.XON = c.in.XOFF(), c.in.XON()
					}
				} else if th := n.thresholds(i, p.headroom); th.Lossless {
					// A priority that never carried a frame here reads as
					// a fresh ingress group: zero counters, the thresholds
					// it would have now.
					fresh.Init(th, &sw.buf)
					q.XOFF, q.XON = fresh.XOFF(), fresh.XON()
				}
				if q == (PrioReport{Prio: i, XOFF: q.XOFF, XON: q.XON}) {
					pr.IdleXOFF[i], pr.IdleXON[i] = q.XOFF, q.XON
					continue // nothing else to sum or warn about
				}
				prios = append(prios, q)
				sr.Drops += q.Drops
				sr.HeadroomDrops += q.HeadroomDrops
				sr.ECNMarks += q.ECNMarks
				sr.WatchdogDrops += q.WatchdogDrops
				sr.XOFFEvents += q.XOFFEvents
				sr.PauseRx += q.PauseRx
				t.Drops += q.Drops
				t.DropBytes += q.DropBytes
				t.HeadroomDrops += q.HeadroomDrops
				t.HeadroomDropBytes += q.HeadroomDropBytes
				t.WatchdogDrops += q.WatchdogDrops
				t.WatchdogDropBytes += q.WatchdogDropBytes
				t.ECNMarks += q.ECNMarks
				t.XOFFEvents += q.XOFFEvents
				t.StormTrips += q.StormTrips
				t.LongestPortPause = max(t.LongestPortPause, q.LongestPause)
				if c != nil {
					t.QueuedPackets += int64(c.q.Len)
					t.QueuedBytes += c.q.Bytes
				}
				if q.HeadroomDrops > 0 {
					r.Warnings = append(r.Warnings, fmt.Sprintf(
						"HEADROOM OVERFLOW: %s port %d (from %s) priority %d dropped %d lossless frames (%d B): headroom %d B is too small for this link (max headroom used %d B); lossless classes must never drop",
						sw.Name, p.Index, pr.PeerName, i, q.HeadroomDrops, q.HeadroomDropBytes, p.headroom, q.Ingress.MaxHeadroom))
				}
			}
			sr.PFCFramesTx += pr.PFCFramesTx
			sr.PFCFramesRx += pr.PFCFramesRx
			sr.Ports = append(sr.Ports, pr)
			ends = append(ends, len(prios))
		}
		all, start := slices.Clone(prios), 0
		for k, end := range ends {
			if start < end {
				sr.Ports[k].Prios = all[start:end:end]
			}
			start = end
		}
		t.NoRouteDrops += sw.NoRoute
		t.NoRouteDropBytes += sw.NoRouteBytes
		t.PFCFramesTx += sr.PFCFramesTx
		t.PFCFramesRx += sr.PFCFramesRx
		t.SharedUsedMax = max(t.SharedUsedMax, b.MaxSharedUsed)
		r.Switches = append(r.Switches, sr)
	}
	for _, l := range n.Links {
		_, _, df, db := l.InFlight()
		t.InFlightPackets += int64(df)
		t.InFlightBytes += db
		f := &l.Faults
		t.FaultDrops += f.Lost + f.Corrupted
		t.FaultDropBytes += f.LostBytes + f.CorruptedBytes
		t.FaultPFCLost += f.PFCLost
	}
	t.PoolLive = n.Pool.Live
	t.PoolAllocated = n.Pool.Allocated()
	return r
}

// HeadroomOverflows is the number of lossless frames dropped anywhere because
// headroom overflowed. It must be 0 in a correctly configured fabric.
func (n *Network) HeadroomOverflows() int64 {
	var d int64
	for _, sw := range n.Switches {
		for _, p := range sw.Ports {
			if p.drops != nil {
				for i := range p.drops {
					d += p.drops[i].HeadroomDrops
				}
			}
		}
	}
	return d
}

// WriteSummary prints the totals, the warnings and the busiest queues for
// people (scenario runs print machine formats elsewhere).
func (r *Report) WriteSummary(w io.Writer) error {
	var b strings.Builder
	t := &r.Totals
	fmt.Fprintf(&b, "at %v: hosts sent %d frames (%d B), delivered %d (%d B)\n", r.Time, t.HostTxPackets, t.HostTxBytes, t.HostRxPackets, t.HostRxBytes)
	fmt.Fprintf(&b, "drops: lossy %d, headroom overflow %d, watchdog %d, no route %d; ECN marks %d\n", t.Drops, t.HeadroomDrops, t.WatchdogDrops, t.NoRouteDrops, t.ECNMarks)
	fmt.Fprintf(&b, "PFC: %d frames sent, %d received, %d XOFF events, hosts paused %v in total, %d storm trips; longest continuous pause: host %v, switch queue %v\n",
		t.PFCFramesTx, t.PFCFramesRx, t.XOFFEvents, t.HostPausedTime, t.StormTrips, t.LongestHostPause, t.LongestPortPause)
	if t.PFCFramesTx == 0 {
		b.WriteString("PFC never fired: no lossless priority group reached XOFF\n")
	}
	for _, s := range r.Switches {
		for _, p := range s.Ports {
			for _, q := range p.Prios {
				if q.MaxQueue == 0 && q.XOFFEvents == 0 && q.PauseRx == 0 {
					continue
				}
				fmt.Fprintf(&b, "  %s p%d->%s prio %d: tx %d, max queue %d B, drops %d, marks %d, XOFF sent %d, paused by peer %v (%d frames), max ingress %d B (headroom %d/%d B)\n",
					s.Name, p.Index, p.PeerName, q.Prio, q.TxPackets, q.MaxQueue, q.Drops+q.HeadroomDrops+q.WatchdogDrops, q.ECNMarks,
					q.XOFFEvents, q.PausedTime, q.PauseRx, q.Ingress.MaxBytes, q.Ingress.MaxHeadroom, p.Headroom)
			}
		}
	}
	for _, w := range r.Warnings {
		b.WriteString("WARNING: " + w + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteExplain prints the parameters the fabric derived from its config, the
// way `besim validate` should show them: per switch the buffer split, per
// distinct port kind the headroom with its terms, the initial XOFF/XON and
// the link's bandwidth-delay product, so a reader can tell in advance
// whether (and why) PFC will fire.
func (n *Network) WriteExplain(w io.Writer) error {
	var b strings.Builder
	c := &n.cfg
	pc := &c.Switch.PFC
	frame := c.MaxFrame() + WireGap
	fmt.Fprintf(&b, "frames: MTU %d B payload -> %d B frame, %d B on the wire; one line-rate flow's goodput is %.2f%% of the rate\n",
		c.MTU, c.MaxFrame(), frame, 100*float64(c.MTU)/float64(frame))
	fmt.Fprintf(&b, "lossless priorities mask %08b; PFC quanta %d; watchdog %v (detect %v, restore %v, %v)\n",
		pc.LosslessMask(), n.quanta(), pc.Watchdog.Enabled, pc.Watchdog.Detection, pc.Watchdog.Restore, pc.Watchdog.Action)
	for _, sw := range n.Switches {
		bf := &sw.buf
		fmt.Fprintf(&b, "%s: buffer %d B = shared %d B + headroom reserved %d B (%d ports)\n", sw.Name, bf.Size, bf.SharedSize(), bf.Reserved, len(sw.Ports))
		seen := map[[2]int64]bool{}
		for _, p := range sw.Ports {
			key := [2]int64{p.rate.BitsPerSecond(), int64(p.out.Delay)}
			if seen[key] {
				continue
			}
			seen[key] = true
			bdp := pfc.BytesIn(2*p.out.Delay, p.rate)
			fmt.Fprintf(&b, "  ports at %d Gbps, %v cable: RTT BDP %d B; headroom %d B", p.rate/units.Gbps, p.out.Delay, bdp, p.headroom)
			if pc.Headroom == 0 {
				fmt.Fprintf(&b, " = 2x%d frame + %d pause + %d (2x cable) + %d (response %v)",
					frame, pfc.PauseFrameWire, bdp, pfc.BytesIn(pc.Response, p.rate), pc.Response)
			}
			b.WriteString("\n")
			for i := 0; i < NumPrio; i++ {
				g := &pfc.Ingress{}
				if c := p.cls[i]; c != nil {
					g = &c.in
				} else {
					g.Init(n.thresholds(i, p.headroom), &sw.buf)
				}
				if g.Thresholds().Lossless {
					fmt.Fprintf(&b, "    prio %d: XOFF %d B, XON %d B now", i, g.XOFF(), g.XON())
					if pc.Alpha > 0 {
						fmt.Fprintf(&b, " (dynamic: %.4g x free shared; one PG alone pauses at %d B)", pc.Alpha,
							int64(pc.Alpha*float64(bf.SharedSize())/(1+pc.Alpha)))
					}
					b.WriteString("\n")
				}
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (n *Network) quanta() uint16 {
	if q := n.cfg.Switch.PFC.Quanta; q != 0 {
		return q
	}
	return pfc.DefaultQuanta
}
