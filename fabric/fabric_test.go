package fabric

import (
	"errors"
	"fmt"
	"github.com/besim/besim/units"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/besim/besim/pfc"
	"github.com/besim/besim/sim"
)

const lossless = DefaultLosslessPrio // priority 3
const lossy = 0

func build(t testing.TB, mod func(*Config)) *Network {
	t.Helper()
	cfg := DefaultConfig()
	if mod != nil {
		mod(&cfg)
	}
	n, err := New(sim.NewKernel(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func addFlow(t testing.TB, n *Network, f Flow) uint32 {
	t.Helper()
	id, err := n.AddFlow(f)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func within(got, want, tol float64) bool { return math.Abs(got/want-1) <= tol }

// One flow through a star switch reaches line rate minus header overhead:
// goodput = rate x payload / (payload + 62 + 20).
func TestLineRateGoodput(t *testing.T) {
	tests := []struct {
		gbps int64
		mtu  units.Size
	}{
		{25, 1024}, {100, 1024}, {100, 4096}, {200, 4096}, {400, 4096}, {25, 4096},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%dG/%dB", tc.gbps, tc.mtu), func(t *testing.T) {
			rate := units.Rate(tc.gbps * units.Gbps)
			n := build(t, func(c *Config) {
				c.Topology = Topology{Kind: Star, Hosts: 2}
				c.HostLink.Rate = rate
				c.MTU = tc.mtu
			})
			id := addFlow(t, n, Flow{Src: 0, Dst: 1, Prio: lossless, Duration: 200 * sim.Microsecond})
			n.Run(300 * sim.Microsecond)
			st := n.Flows()[id]
			want := float64(rate) * float64(tc.mtu) / float64(tc.mtu+RoCEv2Extra+WireGap)
			if got := st.Goodput(); !within(got, want, 0.01) {
				t.Fatalf("goodput %.4g, want %.4g (%d frames)", got, want, st.DeliveredPackets)
			}
			if st.DeliveredBytes != st.SentBytes {
				t.Fatalf("sent %d delivered %d", st.SentBytes, st.DeliveredBytes)
			}
			r := n.Report()
			if r.Totals.PFCFramesTx != 0 || r.Totals.Drops != 0 || r.Totals.ECNMarks != 0 {
				t.Fatalf("an uncongested flow paused, dropped or was marked: %+v", r.Totals)
			}
		})
	}
}

// N-to-1 incast in the lossless class: nothing is dropped, PFC pauses the
// senders, each ingress priority group stays within XOFF + headroom and the
// headroom actually used never exceeds the formula with zero response time,
// the bottleneck stays saturated, and every byte arrives.
func TestIncastLossless(t *testing.T) {
	tests := []struct {
		name    string
		senders int
		static  bool
		reverse bool // receiver also sends to every sender: reverse links busy
	}{
		{"8to1 dynamic", 8, false, false},
		{"16to1 dynamic", 16, false, false},
		{"16to1 static", 16, true, false},
		{"8to1 dynamic reverse traffic", 8, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := build(t, func(c *Config) {
				c.Topology = Topology{Kind: Star, Hosts: tc.senders + 1}
				if tc.static {
					c.Switch.PFC.Alpha = 0
					c.Switch.PFC.XOFF = 100_000
					c.Switch.PFC.XON = 80_000
				}
			})
			rcv := NodeID(tc.senders)
			const size = 2_000_000 // 16 or 32 MB in all: more than the buffer
			ids := make([]uint32, tc.senders)
			for i := range ids {
				ids[i] = addFlow(t, n, Flow{Src: NodeID(i), Dst: rcv, Prio: lossless, Size: size})
				if tc.reverse {
					addFlow(t, n, Flow{Src: rcv, Dst: NodeID(i), Prio: lossless, Size: size / 4})
				}
			}
			// The bottleneck rate while everyone is active.
			n.Run(500 * sim.Microsecond)
			mid := n.Flows()
			var d0 int64
			for _, id := range ids {
				d0 += mid[id].DeliveredBytes
			}
			n.Run(1000 * sim.Microsecond)
			var d1 int64
			for _, id := range ids {
				d1 += n.Flows()[id].DeliveredBytes
			}
			line := float64(25*units.Gbps) * 1024 / 1106
			if !tc.reverse {
				if got := float64(d1-d0) * 8 / (500 * sim.Microsecond).Seconds(); !within(got, line, 0.01) {
					t.Fatalf("bottleneck goodput %.4g, want line rate %.4g", got, line)
				}
			}
			n.Run(20 * sim.Millisecond)
			r := n.Report()
			tt := r.Totals
			if tt.Drops != 0 || tt.HeadroomDrops != 0 || tt.WatchdogDrops != 0 || len(r.Warnings) != 0 {
				t.Fatalf("lossless class dropped: %+v %v", tt, r.Warnings)
			}
			for _, id := range ids {
				if f := r.Flows[id]; f.DeliveredBytes != size || !f.Done {
					t.Fatalf("flow %d delivered %d of %d", id, f.DeliveredBytes, size)
				}
			}
			if tt.PFCFramesTx == 0 || tt.XOFFEvents == 0 {
				t.Fatalf("no PFC in an incast: %+v", tt)
			}
			exact := pfc.Headroom(25*units.Gbps, DefaultLinkDelay, 1024+RoCEv2Extra+WireGap, 0)
			sw := r.Switches[0]
			var sumIngress int64
			for i := 0; i < tc.senders; i++ {
				h := r.Hosts[i]
				if h.PauseRx[lossless] == 0 || h.PausedTime[lossless] == 0 {
					t.Errorf("sender %d never paused: %+v", i, h)
				}
				p := sw.Ports[i].Prio(lossless)
				in := p.Ingress
				if in.MaxBytes > in.MaxXOFF+sw.Ports[i].Headroom.Bytes() {
					t.Errorf("port %d: max ingress %d > XOFF %d + headroom %d", i, in.MaxBytes, in.MaxXOFF, sw.Ports[i].Headroom)
				}
				if in.MaxHeadroom > exact.Bytes() {
					t.Errorf("port %d: headroom used %d > formula %d", i, in.MaxHeadroom, exact)
				}
				if p.XOFFEvents == 0 || p.PauseTx == 0 || p.ResumeTx == 0 {
					t.Errorf("port %d: XOFF %d pause %d resume %d", i, p.XOFFEvents, p.PauseTx, p.ResumeTx)
				}
				sumIngress += in.MaxBytes
			}
			q := sw.Ports[tc.senders].Prio(lossless)
			if q.MaxQueue == 0 || q.MaxQueue > sumIngress || q.MaxQueue > sw.SharedSize+sw.Reserved {
				t.Fatalf("bottleneck queue %d not bounded by the ingress groups (%d)", q.MaxQueue, sumIngress)
			}
			if tt.PoolLive != 0 || tt.QueuedBytes != 0 {
				t.Fatalf("leak after drain: %+v", tt)
			}
		})
	}
}

// The same incast in a lossy class drops and never pauses; the egress queue
// stays within its dynamic threshold alpha/(1+alpha) of the buffer.
func TestIncastLossy(t *testing.T) {
	for _, senders := range []int{8, 16} {
		t.Run(fmt.Sprintf("%dto1", senders), func(t *testing.T) {
			n := build(t, func(c *Config) { c.Topology = Topology{Kind: Star, Hosts: senders + 1} })
			for i := 0; i < senders; i++ {
				addFlow(t, n, Flow{Src: NodeID(i), Dst: NodeID(senders), Prio: lossy, Size: 3 << 20})
			}
			n.Run(30 * sim.Millisecond)
			r := n.Report()
			if r.Totals.Drops == 0 {
				t.Fatal("lossy incast beyond the buffer did not drop")
			}
			if r.Totals.PFCFramesTx != 0 || r.Totals.PFCFramesRx != 0 || r.Totals.HeadroomDrops != 0 {
				t.Fatalf("lossy class used PFC: %+v", r.Totals)
			}
			sw := r.Switches[0]
			q := sw.Ports[senders].Prio(lossy)
			dt := int64(DefaultEgressAlpha/(1+DefaultEgressAlpha)*float64(sw.SharedSize)) + 1086
			if q.MaxQueue > dt || q.MaxQueue < dt/2 {
				t.Fatalf("queue peaked at %d, dynamic threshold %d", q.MaxQueue, dt)
			}
			var sent, got int64
			for _, f := range r.Flows {
				sent += f.SentPackets
				got += f.DeliveredPackets
			}
			if sent != got+r.Totals.Drops {
				t.Fatalf("sent %d != delivered %d + dropped %d", sent, got, r.Totals.Drops)
			}
		})
	}
}

// A victim flow that shares leaf0's uplink with an incast toward leaf1 loses
// bandwidth through pause propagation (leaf1 pauses the spine, the spine
// pauses leaf0's uplink, leaf0 pauses the victim's NIC), although its own
// path (leaf0 -> spine -> leaf2) is uncongested: ByteExpress Figure 14.
func TestVictimPausePropagation(t *testing.T) {
	run := func(incast bool) (float64, *Report) {
		n := build(t, func(c *Config) {
			c.Topology = Topology{Kind: LeafSpine, Leaves: 3, HostsPerLeaf: 3, Spines: 1}
		})
		// leaf0: h0 h1 h2; leaf1: h3 h4 h5; leaf2: h6 h7 h8.
		v := addFlow(t, n, Flow{Src: 2, Dst: 6, Prio: lossless})
		if incast {
			addFlow(t, n, Flow{Src: 0, Dst: 3, Prio: lossless})
			addFlow(t, n, Flow{Src: 1, Dst: 3, Prio: lossless})
		}
		n.Run(10 * sim.Millisecond)
		b0 := n.Flows()[v].DeliveredBytes
		n.Run(20 * sim.Millisecond)
		b1 := n.Flows()[v].DeliveredBytes
		return float64(b1-b0) * 8 / (10 * sim.Millisecond).Seconds(), n.Report()
	}
	alone, _ := run(false)
	line := float64(25*units.Gbps) * 1024 / 1106
	if !within(alone, line, 0.01) {
		t.Fatalf("victim alone %.4g, want line rate %.4g", alone, line)
	}
	hurt, r := run(true)
	t.Logf("victim goodput alone %.2f Gbps, with incast %.2f Gbps", alone/1e9, hurt/1e9)
	if hurt > 0.8*alone {
		t.Fatalf("victim kept %.0f%% of its bandwidth: no pause propagation", 100*hurt/alone)
	}
	if r.Totals.Drops+r.Totals.HeadroomDrops != 0 {
		t.Fatalf("drops in a lossless fabric: %+v", r.Totals)
	}
	// The chain of pauses: leaf0's uplink port (to spine0) was paused, and
	// the victim's NIC was paused by leaf0.
	leaf0 := r.Switches[0]
	up := leaf0.Ports[3] // ports 0-2 are hosts, 3 is the spine uplink
	if up.PeerName != "spine0" || up.Prio(lossless).PauseRx == 0 || up.Prio(lossless).PausedTime == 0 {
		t.Fatalf("leaf0 uplink never paused: %+v", up.Prio(lossless))
	}
	if r.Hosts[2].PausedTime[lossless] == 0 {
		t.Fatal("victim NIC never paused")
	}
	spine := r.Switches[3]
	if spine.Ports[0].Prio(lossless).XOFFEvents == 0 || spine.Ports[1].Prio(lossless).PauseRx == 0 {
		t.Fatalf("spine did not relay the pause: %+v", spine.Ports[:2])
	}
}

func TestECNProbability(t *testing.T) {
	e := ECN{Enabled: true, Kmin: 10_000, Kmax: 110_000, Pmax: 0.2}
	tests := []struct {
		q    int64
		want float64
	}{
		{0, 0}, {10_000, 0}, {10_001, 0.2 * 1 / 100_000}, {60_000, 0.1}, {110_000, 0.2}, {110_001, 1}, {1 << 30, 1},
	}
	for _, tc := range tests {
		if got := e.Probability(tc.q); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("P(%d) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if (ECN{Kmin: 0, Kmax: 1, Pmax: 1}).Probability(100) != 0 {
		t.Error("disabled ECN marks")
	}
	step := ECN{Enabled: true, Kmin: 5000, Kmax: 5000, Pmax: 0.5}
	if step.Probability(5000) != 0 || step.Probability(5001) != 1 {
		t.Error("Kmin == Kmax is a step")
	}
}

// A switch's marking draws follow the RED probability at a held depth.
func TestECNMarkingFractionAtFixedDepth(t *testing.T) {
	n := build(t, nil)
	sw := n.Switches[0]
	e := ECN{Enabled: true, Kmin: 5_000, Kmax: 200_000, Pmax: 0.01}
	for _, depth := range []int64{50_000, 100_000, 150_000, 199_000} {
		p := e.Probability(depth)
		const draws = 400_000
		marks := 0
		for i := 0; i < draws; i++ {
			if sw.mark(&e, depth) {
				marks++
			}
		}
		sigma := math.Sqrt(draws * p * (1 - p))
		if d := math.Abs(float64(marks) - draws*p); d > 4*sigma {
			t.Errorf("depth %d: %d marks, expected %.0f +- %.0f", depth, marks, draws*p, sigma)
		}
	}
}

// End to end: the receiver's NIC pauses the switch so its egress queue only
// grows; every arriving frame sees a known depth (frames ahead of it), so the
// number of CE marks must match the sum of the RED probabilities.
func TestECNMarkingFollowsRED(t *testing.T) {
	e := ECN{Enabled: true, Kmin: 20_000, Kmax: 1_000_000, Pmax: 0.5}
	n := build(t, func(c *Config) {
		c.Topology = Topology{Kind: Star, Hosts: 2}
		c.Switch.PFC.Alpha = 0
		c.Switch.PFC.XOFF = 4 << 20 // the sender is never paused
		c.Switch.PFC.XON = 3 << 20
		c.Switch.ECN[lossless] = e
	})
	n.Hosts[1].SetPause(lossless, true)
	const frames = 1200
	id := addFlow(t, n, Flow{Src: 0, Dst: 1, Prio: lossless, Size: frames * 1024, Start: 5 * sim.Microsecond})
	n.Run(1 * sim.Millisecond)
	r := n.Report()
	q := r.Switches[0].Ports[1].Prio(lossless)
	if q.Queued != frames*1086 || r.Flows[id].DeliveredPackets != 0 {
		t.Fatalf("queue %d B, delivered %d: the pause did not hold the queue", q.Queued, r.Flows[id].DeliveredPackets)
	}
	var mean, vr float64
	for i := int64(0); i < frames; i++ {
		p := e.Probability(i * 1086)
		mean += p
		vr += p * (1 - p)
	}
	sigma := math.Sqrt(vr)
	if d := math.Abs(float64(q.ECNMarks) - mean); d > 4*sigma {
		t.Fatalf("%d marks, RED expects %.1f +- %.1f", q.ECNMarks, mean, sigma)
	}
	// Release the pause: the marked frames arrive CE.
	n.Hosts[1].SetPause(lossless, false)
	n.Run(3 * sim.Millisecond)
	f := n.Flows()[id]
	if f.DeliveredPackets != frames || f.ECNMarked != q.ECNMarks {
		t.Fatalf("delivered %d, CE %d, marked %d", f.DeliveredPackets, f.ECNMarked, q.ECNMarks)
	}
	// Not-ECT frames are never marked.
	n2 := build(t, func(c *Config) {
		c.Topology = Topology{Kind: Star, Hosts: 2}
		c.Switch.ECN[lossless] = ECN{Enabled: true, Kmin: 0, Kmax: 0, Pmax: 1}
	})
	n2.Hosts[1].SetPause(lossless, true)
	addFlow(t, n2, Flow{Src: 0, Dst: 1, Prio: lossless, Size: 100 * 1024, NotECT: true})
	n2.Run(sim.Millisecond)
	if m := n2.Report().Totals.ECNMarks; m != 0 {
		t.Fatalf("%d Not-ECT frames marked", m)
	}
}

func checkConservation(t *testing.T, n *Network) {
	t.Helper()
	r := n.Report()
	tt := r.Totals
	accounted := tt.HostRxBytes + tt.DropBytes + tt.HeadroomDropBytes + tt.WatchdogDropBytes + tt.NoRouteDropBytes + tt.FaultDropBytes + tt.QueuedBytes + tt.InFlightBytes
	if tt.HostTxBytes != accounted {
		t.Fatalf("sent %d B != delivered %d + dropped %d/%d/%d/%d + queued %d + in flight %d (= %d)",
			tt.HostTxBytes, tt.HostRxBytes, tt.DropBytes, tt.HeadroomDropBytes, tt.WatchdogDropBytes, tt.NoRouteDropBytes, tt.QueuedBytes, tt.InFlightBytes, accounted)
	}
	pk := tt.HostRxPackets + tt.Drops + tt.HeadroomDrops + tt.WatchdogDrops + tt.NoRouteDrops + tt.FaultDrops + tt.QueuedPackets + tt.InFlightPackets
	if tt.HostTxPackets != pk {
		t.Fatalf("sent %d frames != %d accounted", tt.HostTxPackets, pk)
	}
	var wire int
	for _, l := range n.Links {
		f, _, _, _ := l.InFlight()
		wire += f
	}
	if live := int64(tt.PoolLive); live != tt.QueuedPackets+int64(wire)+tt.HeldPackets {
		t.Fatalf("pool live %d != queued %d + on wire %d + held %d", live, tt.QueuedPackets, wire, tt.HeldPackets)
	}
	for _, sw := range n.Switches {
		var q int64
		for _, p := range sw.Ports {
			for i := 0; i < NumPrio; i++ {
				q += p.QueueBytes(i)
			}
		}
		if b := sw.Buffer(); b.Used() != q {
			t.Fatalf("%s: buffer accounts %d B, queues hold %d B", sw.Name, b.Used(), q)
		}
	}
}

// Bytes sent = delivered + dropped + queued + in flight, at arbitrary stop
// instants, for lossy and lossless traffic over several topologies.
func TestConservation(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Config)
		prio uint8
	}{
		{"star lossy incast", func(c *Config) { c.Topology = Topology{Kind: Star, Hosts: 9} }, lossy},
		{"star lossless incast", func(c *Config) { c.Topology = Topology{Kind: Star, Hosts: 9} }, lossless},
		{"leaf-spine mixed", func(c *Config) { c.Topology = Topology{Kind: LeafSpine, Leaves: 3, HostsPerLeaf: 3, Spines: 2} }, 255},
		{"fat-tree k4 mixed", func(c *Config) { c.Topology = Topology{Kind: FatTree, K: 4} }, 255},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := build(t, func(c *Config) {
				tc.mod(c)
				c.Switch.Buffer = 2 << 20 // small, so lossy drops early
			})
			nh := n.NumHosts()
			for i := 0; i < nh-1; i++ {
				prio := tc.prio
				if prio == 255 {
					prio = uint8([]int{lossy, lossless}[i%2])
				}
				addFlow(t, n, Flow{Src: NodeID(i), Dst: NodeID(nh - 1), Prio: prio, Size: 1 << 20})
				addFlow(t, n, Flow{Src: NodeID(nh - 1), Dst: NodeID(i), Prio: prio, Size: 64 << 10, Start: 100 * sim.Microsecond})
			}
			for _, at := range []sim.Time{37 * sim.Microsecond, 333 * sim.Microsecond, 1234567 * sim.Picosecond, 30 * sim.Millisecond} {
				n.Run(at)
				checkConservation(t, n)
			}
			if n.Pool.Live != 0 {
				t.Fatalf("%d packets leaked", n.Pool.Live)
			}
		})
	}
}

func determinismRun(t *testing.T, seed uint64) *Report {
	n := build(t, func(c *Config) {
		c.Seed = seed
		c.Topology = Topology{Kind: LeafSpine, Leaves: 4, HostsPerLeaf: 4, Spines: 2}
		c.Sampling.Interval = 20 * sim.Microsecond
		for i := range c.Switch.ECN {
			c.Switch.ECN[i] = ECN{Enabled: true, Kmin: 5_000, Kmax: 200_000, Pmax: 0.2}
		}
	})
	for i := 0; i < 16; i++ {
		addFlow(t, n, Flow{Src: NodeID(i), Dst: NodeID((i*7 + 3) % 16), Prio: uint8([]int{lossy, lossless}[i%2]), Size: 512 << 10})
		if i%4 != 0 {
			addFlow(t, n, Flow{Src: NodeID(i), Dst: 0, Prio: lossless, Size: 256 << 10, Start: sim.Time(i) * sim.Microsecond})
		}
	}
	n.Run(5 * sim.Millisecond)
	return n.Report()
}

// Same config and seed twice: identical counters, series included.
func TestDeterminism(t *testing.T) {
	a, b := determinismRun(t, 7), determinismRun(t, 7)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two runs with the same seed differ")
	}
	if a.Totals.ECNMarks == 0 || a.Totals.PFCFramesTx == 0 {
		t.Fatalf("scenario too quiet to test determinism: %+v", a.Totals)
	}
	c := determinismRun(t, 8)
	if c.Totals.ECNMarks == a.Totals.ECNMarks && reflect.DeepEqual(a.Flows, c.Flows) {
		t.Fatal("the seed does not reach the ECN draws")
	}
}

// Too little headroom is a misconfiguration: lossless frames drop, and the
// report says so loudly. The exact formula (zero response time) suffices
// even with the reverse direction busy.
func TestHeadroomOverflowIsLoud(t *testing.T) {
	run := func(headroom units.Size) *Network {
		n := build(t, func(c *Config) {
			c.Topology = Topology{Kind: Star, Hosts: 9}
			c.Switch.PFC.Headroom = headroom
		})
		for i := 0; i < 8; i++ {
			addFlow(t, n, Flow{Src: NodeID(i), Dst: 8, Prio: lossless, Duration: 3 * sim.Millisecond})
			addFlow(t, n, Flow{Src: 8, Dst: NodeID(i), Prio: lossless, Duration: 3 * sim.Millisecond})
		}
		n.Run(4 * sim.Millisecond)
		return n
	}
	n := run(2000)
	r := n.Report()
	if n.HeadroomOverflows() == 0 || r.Totals.HeadroomDrops == 0 {
		t.Fatal("2000 B headroom at 25G/1us did not overflow")
	}
	if len(r.Warnings) == 0 || !strings.Contains(r.Warnings[0], "HEADROOM OVERFLOW") {
		t.Fatalf("no loud warning: %v", r.Warnings)
	}
	var sb strings.Builder
	r.WriteSummary(&sb)
	if !strings.Contains(sb.String(), "WARNING: HEADROOM OVERFLOW") {
		t.Fatal("summary hides the overflow")
	}
	exact := pfc.Headroom(25*units.Gbps, DefaultLinkDelay, 1024+RoCEv2Extra+WireGap, 0)
	n = run(exact)
	r = n.Report()
	if n.HeadroomOverflows() != 0 {
		t.Fatalf("formula headroom %d overflowed: %v", exact, r.Warnings)
	}
	var used int64
	for _, p := range r.Switches[0].Ports[:8] {
		used = max(used, p.Prio(lossless).Ingress.MaxHeadroom)
	}
	t.Logf("headroom formula %d B, max used %d B", exact, used)
	if used < exact.Bytes()/2 {
		t.Fatalf("headroom used %d of %d: scenario does not exercise it", used, exact)
	}
}

// A NIC stuck sending pauses (a PFC storm) freezes the switch queue toward
// it, and pause propagation freezes an innocent flow from the same sender.
// The watchdog trips after Detection, unblocks the victim (dropping the
// stormed queue), restores after Restore, and trips again while the storm
// lasts.
func TestWatchdogStorm(t *testing.T) {
	for _, action := range []pfc.WatchdogAction{pfc.ActionDrop, pfc.ActionForward} {
		t.Run(action.String(), func(t *testing.T) {
			n := build(t, func(c *Config) {
				c.Topology = Topology{Kind: Star, Hosts: 3}
				c.Switch.PFC.Watchdog = pfc.Watchdog{Enabled: true, Detection: 2 * sim.Millisecond, Restore: 2 * sim.Millisecond, Action: action}
			})
			n.Hosts[1].SetPause(lossless, true) // h1's NIC storms
			stormed := addFlow(t, n, Flow{Src: 0, Dst: 1, Prio: lossless})
			victim := addFlow(t, n, Flow{Src: 0, Dst: 2, Prio: lossless})
			// The stormed queue fills h0's priority group to XOFF (B/9 with
			// alpha 1/8) in about 0.9 ms; from then on h0 is paused.
			n.Run(1200 * sim.Microsecond)
			before := n.Flows()[victim].DeliveredBytes
			n.Run(1990 * sim.Microsecond)
			frozen := n.Flows()[victim].DeliveredBytes - before
			before += frozen
			n.Run(3900 * sim.Microsecond)
			after := n.Flows()[victim].DeliveredBytes
			n.Run(9 * sim.Millisecond)
			r := n.Report()
			p := r.Switches[0].Ports[1].Prio(lossless)
			if frozen != 0 {
				t.Fatalf("victim moved %d B while the storm held its sender", frozen)
			}
			if after-before < 1<<20 {
				t.Fatalf("victim got only %d B after the watchdog tripped", after-before)
			}
			// Trips at ~2 ms and ~6 ms; restores at ~4 ms and ~8 ms.
			if p.StormTrips != 2 || p.StormRestores != 2 {
				t.Fatalf("trips %d restores %d", p.StormTrips, p.StormRestores)
			}
			if r.Hosts[0].PausedTime[lossless] == 0 {
				t.Fatal("storm did not propagate to the sender")
			}
			got := r.Flows[stormed].DeliveredBytes
			switch action {
			case pfc.ActionDrop:
				if p.WatchdogDrops == 0 || got != 0 {
					t.Fatalf("drop action: %d drops, stormed host got %d B", p.WatchdogDrops, got)
				}
			case pfc.ActionForward:
				if p.WatchdogDrops != 0 || got == 0 {
					t.Fatalf("forward action: %d drops, stormed host got %d B", p.WatchdogDrops, got)
				}
			}
			if r.Totals.HeadroomDrops != 0 {
				t.Fatal("headroom overflow during a storm")
			}
			if l := checkLive(t, n); l.StormTrips != 2 || (action == pfc.ActionDrop) != (l.WatchdogDrops > 0) {
				t.Fatalf("Live %+v: want 2 storm trips, and watchdog drops with the drop action only", l)
			}
			checkConservation(t, n)
		})
	}
}

// Strict priority starves the lower class; DWRR shares by weight.
func TestEgressSchedulers(t *testing.T) {
	tests := []struct {
		name     string
		sched    Scheduler
		wHi, wLo int
		wantHi   float64 // share of the bottleneck for priority 5
	}{
		{"strict", StrictPriority, 1, 1, 1},
		{"dwrr 1:1", DWRR, 1, 1, 0.5},
		{"dwrr 3:1", DWRR, 3, 1, 0.75},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := build(t, func(c *Config) {
				c.Topology = Topology{Kind: Star, Hosts: 3}
				c.Switch.Scheduler = tc.sched
				c.Switch.Weights[5], c.Switch.Weights[1] = tc.wHi, tc.wLo
			})
			hi := addFlow(t, n, Flow{Src: 0, Dst: 2, Prio: 5})
			lo := addFlow(t, n, Flow{Src: 1, Dst: 2, Prio: 1})
			n.Run(2 * sim.Millisecond)
			h0, l0 := n.Flows()[hi].DeliveredBytes, n.Flows()[lo].DeliveredBytes
			n.Run(4 * sim.Millisecond)
			h := float64(n.Flows()[hi].DeliveredBytes - h0)
			l := float64(n.Flows()[lo].DeliveredBytes - l0)
			line := float64(25*units.Gbps) * 1024 / 1106 * (2 * sim.Millisecond).Seconds() / 8
			if !within(h+l, line, 0.01) {
				t.Fatalf("bottleneck carried %.0f B, want %.0f", h+l, line)
			}
			if share := h / (h + l); math.Abs(share-tc.wantHi) > 0.01 {
				t.Fatalf("priority 5 got %.3f of the link, want %.3f", share, tc.wantHi)
			}
		})
	}
}

// PFC frames are consumed hop by hop: a host-sent pause pauses only the
// switch port facing it, and never reaches another host.
func TestPauseFramesAreNotRouted(t *testing.T) {
	n := build(t, func(c *Config) { c.Topology = Topology{Kind: Star, Hosts: 3} })
	n.Hosts[0].SendPause(1<<lossless, 100)
	n.Hosts[0].SendPause(1<<lossy, 100) // priority without PFC: counted, ignored
	n.Run(10 * sim.Microsecond)
	r := n.Report()
	if r.Totals.PFCFramesRx != 2 || r.Hosts[1].PFCFramesRx+r.Hosts[2].PFCFramesRx != 0 {
		t.Fatalf("pause frames: %+v", r.Totals)
	}
	p := r.Switches[0].Ports[0]
	if p.PFCFramesRx != 2 || p.Prio(lossless).PauseRx != 1 || p.Prio(lossless).PausedTime != pfc.QuantaToTime(100, 25*units.Gbps) {
		t.Fatalf("switch port: %+v", p)
	}
	if n.Switches[0].Ports[0].PauseRx().Stats().Ignored[lossy] != 1 || p.Prio(lossy).PauseRx != 0 {
		t.Fatal("pause for a priority without PFC was honoured")
	}
}

// A host that ignores the paused mask gets its frame held, not sent.
type rudeHost struct {
	up   Uplink
	sent int
}

func (h *rudeHost) Attach(up Uplink)              { h.up = up }
func (h *rudeHost) Receive(_ sim.Time, p *Packet) { h.up.Pool().Put(p) }
func (h *rudeHost) Next(now sim.Time, paused uint8) *Packet {
	if h.sent >= 3 {
		return nil
	}
	h.sent++
	p := h.up.Pool().Get()
	p.Kind, p.Prio, p.Src, p.Dst, p.Size = KindData, lossless, h.up.Node(), 1, 1086
	return p
}

func TestCustomHostAndPauseViolation(t *testing.T) {
	n := build(t, func(c *Config) { c.Topology = Topology{Kind: Star, Hosts: 2} })
	rude := &rudeHost{}
	if err := n.Attach(0, rude); err != nil {
		t.Fatal(err)
	}
	if _, err := n.AddFlow(Flow{Src: 0, Dst: 1}); err == nil {
		t.Fatal("raw flow accepted from a custom host")
	}
	// The switch pauses h0 (fault-inject from the switch side by pausing
	// through its port's Tx), then the host sends anyway.
	sp := n.Switches[0].Ports[0]
	sp.assertPause(0, lossless)
	n.Run(5 * sim.Microsecond)
	n.Hosts[0].Wake()
	n.Run(10 * sim.Microsecond)
	c := n.Hosts[0].Counters()
	if c.PauseViolations != 1 || c.TxPackets[lossless] != 0 {
		t.Fatalf("held frame sent while paused: %+v", c)
	}
	sp.releasePause(n.K.Now(), lossless)
	n.Run(100 * sim.Microsecond)
	c = n.Hosts[0].Counters()
	if c.TxPackets[lossless] != 3 || n.Report().Hosts[1].Counters.RxPackets[lossless] != 3 {
		t.Fatalf("after resume: %+v", c)
	}
	checkConservation(t, n)
}

// A pause held longer than one pause time (0xFFFF quanta = 1.342 ms at 25G)
// is refreshed before expiry: the switch port stays paused without a gap,
// and the refresh count matches the interval (half the pause time).
func TestPauseRefreshHoldsLongPause(t *testing.T) {
	n := build(t, func(c *Config) { c.Topology = Topology{Kind: Star, Hosts: 2} })
	n.Hosts[1].SetPause(lossless, true)
	n.Run(10 * sim.Millisecond)
	p := n.Switches[0].Ports[1]
	rx := p.PauseRx()
	first := sim.TxTime(PauseFrame+WireGap, 25*units.Gbps) + DefaultLinkDelay // first frame's arrival
	if got := rx.PausedTime(n.K.Now(), lossless); got != 10*sim.Millisecond-first {
		t.Fatalf("paused %v of %v: a refresh came late", got, 10*sim.Millisecond-first)
	}
	refresh := pfc.QuantaToTime(pfc.MaxQuanta, 25*units.Gbps) / 2
	if want := int64(10*sim.Millisecond/refresh) + 1; rx.Stats().Pauses[lossless] != want {
		t.Fatalf("%d pause frames, want %d (one per %v)", rx.Stats().Pauses[lossless], want, refresh)
	}
	n.Hosts[1].SetPause(lossless, false)
	n.Run(11 * sim.Millisecond)
	if rx.Paused(n.K.Now()) != 0 || rx.Stats().Resumes[lossless] != 1 {
		t.Fatal("XON did not resume")
	}
	if a := n.Hosts[1].PauseTx().AssertedTime(n.K.Now(), lossless); a != 10*sim.Millisecond {
		t.Fatalf("NIC asserted for %v", a)
	}
}

// A flow paced below line rate gets exactly its rate.
func TestPacedFlow(t *testing.T) {
	for _, rate := range []units.Rate{1 * units.Gbps, 10 * units.Gbps, 24 * units.Gbps} {
		n := build(t, func(c *Config) { c.Topology = Topology{Kind: Star, Hosts: 2} })
		id := addFlow(t, n, Flow{Src: 0, Dst: 1, Prio: lossy, Rate: rate, Start: 3 * sim.Microsecond, Duration: sim.Millisecond})
		n.Run(2 * sim.Millisecond)
		f := n.Flows()[id]
		want := float64(rate) * 1024 / 1106
		if !within(f.Goodput(), want, 0.01) || !f.Done || f.FirstSent != 3*sim.Microsecond {
			t.Fatalf("rate %d: goodput %.4g want %.4g (%+v)", rate, f.Goodput(), want, f)
		}
	}
}

// Link faults lose frames but never bytes from the accounting: every byte a
// host sent is delivered, dropped (by a switch or a faulty link), queued or
// on a wire, with drop and corruption rates on every host link and one
// fabric link taken down and brought back.
func TestConservationWithLinkFaults(t *testing.T) {
	n := build(t, func(c *Config) {
		c.Topology = Topology{Kind: LeafSpine, Leaves: 3, HostsPerLeaf: 3, Spines: 2}
	})
	nh := n.NumHosts()
	for i, l := range n.Links {
		if l.From < NodeID(nh) || l.To < NodeID(nh) {
			l.SetLoss(0.01, 0.005, LossMatch{}, sim.Stream(1, fmt.Sprintf("link%d", i)))
		}
	}
	for i := 0; i < nh-1; i++ {
		addFlow(t, n, Flow{Src: NodeID(i), Dst: NodeID(nh - 1), Prio: uint8([]int{lossy, lossless}[i%2]), Size: 1 << 20})
	}
	var spineLink *Link
	for _, l := range n.Links {
		if l.From >= NodeID(nh) && l.To >= NodeID(nh) {
			spineLink = l
			break
		}
	}
	n.Run(100 * sim.Microsecond)
	checkConservation(t, n)
	spineLink.SetDown(true)
	n.Run(300 * sim.Microsecond)
	checkConservation(t, n)
	spineLink.SetDown(false)
	n.Run(30 * sim.Millisecond)
	checkConservation(t, n)
	tt := n.Report().Totals
	var lost, bad int64
	for _, l := range n.Links {
		lost += l.Faults.Lost
		bad += l.Faults.Corrupted
	}
	if lost == 0 || bad == 0 || spineLink.Faults.Lost == 0 {
		t.Errorf("faults did not bite: %d lost, %d corrupted, %d lost on the downed link", lost, bad, spineLink.Faults.Lost)
	}
	if tt.FaultDrops != lost+bad || n.Pool.Live != 0 {
		t.Errorf("totals: %d fault drops (want %d), %d packets live", tt.FaultDrops, lost+bad, n.Pool.Live)
	}
	// About 1.5% of the frames through a host link are lost there.
	var through int64
	for _, l := range n.Links {
		if l.From < NodeID(nh) || l.To < NodeID(nh) {
			through += l.Delivered + l.Faults.Lost + l.Faults.Corrupted
		}
	}
	if f := float64(lost+bad-spineLink.Faults.Lost) / float64(through); f < 0.01 || f > 0.02 {
		t.Errorf("host links lost %.4f of their frames, want about 0.015", f)
	}
}

// muxEnd is a fake endpoint: it always has frames of one priority to send
// and counts what it receives.
type muxEnd struct {
	up   Uplink
	prio uint8
	sent int
	got  int
	bad  int // received frames of another priority
	dst  NodeID
}

func (e *muxEnd) Attach(up Uplink) { e.up = up }
func (e *muxEnd) Receive(_ sim.Time, p *Packet) {
	e.got++
	if p.Prio != e.prio {
		e.bad++
	}
	e.up.Pool().Put(p)
}
func (e *muxEnd) Next(now sim.Time, _ uint8) *Packet {
	p := e.up.Pool().Get()
	p.Kind, p.Prio, p.Src, p.Dst, p.Size, p.Payload, p.SentAt = KindData, e.prio, e.up.Node(), e.dst, 1000, 938, now
	e.sent++
	return p
}

// Two models behind one port share its transmit opportunities equally and
// each receives only its priorities.
func TestMuxSharesAPort(t *testing.T) {
	n := build(t, func(c *Config) { c.Topology = Topology{Kind: Star, Hosts: 2} })
	a0, b0 := &muxEnd{prio: 3, dst: 1}, &muxEnd{prio: 0, dst: 1}
	a1, b1 := &muxEnd{prio: 3, dst: 0}, &muxEnd{prio: 0, dst: 0}
	for i, m := range []*Mux{{A: a0, B: b0, AMask: 1 << 3}, {A: a1, B: b1, AMask: 1 << 3}} {
		if err := n.Attach(NodeID(i), m); err != nil {
			t.Fatal(err)
		}
	}
	a0.up.Wake()
	a1.up.Wake()
	n.Run(100 * sim.Microsecond)
	if d := a0.sent - b0.sent; d < -1 || d > 1 || a0.sent < 100 {
		t.Errorf("turns: A sent %d, B sent %d; want equal shares", a0.sent, b0.sent)
	}
	if a1.got == 0 || b1.got == 0 || a1.got+b1.got > a0.sent+b0.sent {
		t.Errorf("host 1 got %d on A and %d on B of %d + %d sent", a1.got, b1.got, a0.sent, b0.sent)
	}
	if a1.bad+b1.bad > 0 {
		t.Errorf("%d frames went to the wrong model", a1.bad+b1.bad)
	}
}

// A priority a port never carries costs the port no state, and the report
// reads it as a fresh priority group: zero counters and the thresholds the
// switch applies now, the same as those of the lossless priority in use.
func TestUnusedPriorityHasNoState(t *testing.T) {
	const idle = 5
	n := build(t, func(c *Config) {
		c.Topology = Topology{Kind: Star, Hosts: 9}
		c.Switch.PFC.Lossless[idle] = true
		c.Sampling.Interval = 10 * sim.Microsecond
	})
	for i := 0; i < 8; i++ {
		addFlow(t, n, Flow{Src: NodeID(i), Dst: 8, Prio: lossless})
	}
	n.Run(2 * sim.Millisecond)
	r := n.Report()
	if r.Totals.PFCFramesTx == 0 {
		t.Fatal("PFC never fired: the incast does not exercise the lossless class")
	}
	sw := n.Switches[0]
	for pi, p := range sw.Ports {
		for i, c := range p.cls {
			if used := i == lossless; (c != nil) != used {
				t.Errorf("port %d priority %d: state allocated %v, carried traffic %v", pi, i, c != nil, used)
			}
		}
		used, q := r.Switches[0].Ports[pi].Prio(lossless), r.Switches[0].Ports[pi].Prio(idle)
		if q.XOFF <= 0 || q.XOFF != used.XOFF || q.XON != used.XON {
			t.Errorf("port %d: idle lossless priority XOFF/XON %d/%d, priority in use %d/%d", pi, q.XOFF, q.XON, used.XOFF, used.XON)
		}
		if q.PrioCounters != (PrioCounters{}) || q.Ingress != (pfc.IngressStats{}) || q.Depth != nil || q.PauseTx != 0 || q.PauseRx != 0 {
			t.Errorf("port %d: idle priority reports activity: %+v", pi, q)
		}
	}
	for _, p := range r.Switches[0].Ports {
		if got := p.Prio(lossless); p.Peer == 8 && (got.TxPackets == 0 || got.Depth == nil) {
			t.Fatalf("bottleneck port: %d frames sent, depth series %v", got.TxPackets, got.Depth != nil)
		}
		// The report holds the priority in use (frames sent to host 8,
		// pauses sent to the senders) and nothing for the others.
		var prios []int
		for _, q := range p.Prios {
			prios = append(prios, q.Prio)
		}
		if !slices.Equal(prios, []int{lossless}) {
			t.Errorf("port to node %d reports priorities %v, want [%d]", p.Peer, prios, lossless)
		}
	}
}

// Sampling.Queues samples only the queues it marks: each gets the depth
// series an unmarked run records for it, point for point, the others none,
// and the run is the same run; a pattern that matches no queue fails New.
func TestSamplingMarkedQueues(t *testing.T) {
	run := func(marks []string) (*Network, *Report) {
		n := build(t, func(c *Config) {
			c.Topology = Topology{Kind: Star, Hosts: 9}
			c.Sampling.Interval = 10 * sim.Microsecond
			c.Sampling.Queues = marks
		})
		for i := 0; i < 8; i++ {
			addFlow(t, n, Flow{Src: NodeID(i), Dst: 8, Prio: lossless})
		}
		addFlow(t, n, Flow{Src: 8, Dst: 0, Prio: lossless}) // a second queue that holds frames
		n.Run(2 * sim.Millisecond)
		return n, n.Report()
	}
	_, all := run(nil)
	sw := all.Switches[0]
	var toH0, toH8 PortReport
	for _, p := range sw.Ports {
		switch p.Peer {
		case 0:
			toH0 = p
		case 8:
			toH8 = p
		}
	}
	if toH0.Prio(lossless).Depth == nil || toH8.Prio(lossless).Depth == nil {
		t.Fatal("the unmarked run has no depth series of the two queues that held frames")
	}
	// A pattern, and a name marking a priority that carries nothing.
	n, marked := run([]string{QueueName(sw.Name, toH0.PeerName, lossless), QueueName(sw.Name, "*", 6)})
	if got, want := n.SampledQueues(), 1+len(sw.Ports); got != want {
		t.Errorf("SampledQueues %d, want %d", got, want)
	}
	if marked.Totals != all.Totals {
		t.Errorf("marking changed the run:\n%+v\n%+v", marked.Totals, all.Totals)
	}
	for pi, p := range marked.Switches[0].Ports {
		for _, q := range p.Prios {
			if q.Depth != nil && (p.Peer != 0 || q.Prio != lossless) {
				t.Errorf("port %d prio %d: unmarked queue sampled", pi, q.Prio)
			}
		}
	}
	gotR, want := marked.Switches[0].Ports[toH0.Index].Prio(lossless).Depth, toH0.Prio(lossless).Depth.Compact()
	if gotR == nil {
		t.Fatal("the marked queue has no series")
	}
	if got := gotR.Compact(); got.Len() < 100 || !slices.Equal(got.Series().V, want.Series().V) || !slices.Equal(got.Series().T, want.Series().T) {
		t.Fatalf("marked queue's series differs from the unmarked run's")
	}

	cfg := DefaultConfig()
	cfg.Topology = Topology{Kind: Star, Hosts: 3}
	cfg.Sampling.Interval = 10 * sim.Microsecond
	cfg.Sampling.Queues = []string{"*", "nope->*/3"}
	var qe *QueuePatternError
	if _, err := New(sim.NewKernel(), cfg); !errors.As(err, &qe) || qe.Index != 1 || qe.Pattern != "nope->*/3" {
		t.Fatalf("a pattern matching no queue: %v", err)
	}
}
