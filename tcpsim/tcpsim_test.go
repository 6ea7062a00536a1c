package tcpsim

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/besim/besim/fabric"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
)

// star is a star fabric of n hosts with prio 0 lossy; ecnK > 0 sets DCTCP
// step marking at K bytes there, 0 disables ECN.
func star(n int, buffer int64, ecnK int64) fabric.Config {
	fc := fabric.DefaultConfig()
	fc.Topology = fabric.Topology{Kind: fabric.Star, Hosts: n}
	fc.Switch.Buffer = units.Size(buffer)
	fc.Switch.ECN[0] = fabric.ECN{Enabled: ecnK > 0, Kmin: units.Size(ecnK), Kmax: units.Size(ecnK), Pmax: 1}
	fc.Switch.PFC.Lossless = [fabric.NumPrio]bool{} // TCP only: no RoCE class to reserve headroom for
	return fc
}

// sink counts delivered messages and checks they arrive in send order.
type sink struct {
	t     *testing.T
	msgs  int
	bytes int
	next  map[*Conn]uint64
}

func (s *sink) OnMessage(h *Host, c *Conn, m Message) {
	if s.next == nil {
		s.next = map[*Conn]uint64{}
	}
	if m.Meta[0] != s.next[c] {
		s.t.Errorf("host %d: message %d arrived, want %d (out of order or lost)", h.Index(), m.Meta[0], s.next[c])
	}
	s.next[c] = m.Meta[0] + 1
	s.msgs++
	s.bytes += m.Size
}

// bulk writes count messages of size on every conn at time 0.
func bulk(t *testing.T, conns []*Conn, count, size int) {
	for _, c := range conns {
		for i := range count {
			if err := c.Send(size, Meta{uint64(i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestLineRateSingleFlow(t *testing.T) {
	for _, cc := range []CC{DCTCP, NewReno} {
		t.Run(string(cc), func(t *testing.T) {
			c, err := New(star(2, 12<<20, 100_000), Config{CC: cc})
			if err != nil {
				t.Fatal(err)
			}
			hs := c.Hosts()
			s := &sink{t: t}
			hs[1].SetApp(s)
			conn, _ := hs[0].Dial(hs[1])
			const n, size = 400, 1 << 20
			bulk(t, []*Conn{conn}, n, size)
			c.Run(50 * sim.Millisecond)
			// Measure between two instants after slow start.
			r0 := conn.Peer().Received()
			c.Run(100 * sim.Millisecond)
			r1 := conn.Peer().Received()
			gbps := float64(r1-r0) * 8 / 0.05 / 1e9
			mss := float64(DefaultMSS)
			want := 25 * mss / (mss + SegmentOverhead + fabric.WireGap)
			if math.Abs(gbps-want)/want > 0.01 {
				t.Errorf("goodput %.3f Gbps, want line rate minus headers %.3f within 1%%", gbps, want)
			}
			c.Run(sim.Second)
			if s.msgs != n || s.bytes != n*size {
				t.Errorf("delivered %d msgs / %d B, want %d / %d", s.msgs, s.bytes, n, n*size)
			}
			if st := hs[0].Stats(); st.Retransmits != 0 || st.Timeouts != 0 {
				t.Errorf("uncongested flow retransmitted: %+v", st)
			}
		})
	}
}

// incast runs senders-to-1 bulk transfers and returns the cluster.
func incast(t *testing.T, senders int, buffer, ecnK int64, cfg Config, count, size int, until sim.Time) (*Cluster, *sink) {
	t.Helper()
	c, err := New(star(senders+1, buffer, ecnK), cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := c.Hosts()
	s := &sink{t: t}
	hs[senders].SetApp(s)
	var conns []*Conn
	for i := range senders {
		cn, err := hs[i].Dial(hs[senders])
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, cn)
	}
	bulk(t, conns, count, size)
	c.Run(until)
	return c, s
}

// conservation: every byte written was delivered exactly once, in order
// (sink checks order), whatever the fabric dropped.
func TestLossyIncastRecoversEveryByte(t *testing.T) {
	cfg := Config{CC: NewReno, MinRTO: sim.Millisecond, DelAck: sim.Millisecond}
	const senders, count, size = 16, 20, 64 << 10
	c, s := incast(t, senders, 256<<10, 0, cfg, count, size, 2*sim.Second)
	rep := c.Network().Report()
	if rep.Totals.Drops == 0 {
		t.Fatalf("a 16:1 incast into 256 KiB of buffer dropped nothing: the test does not exercise loss")
	}
	if s.msgs != senders*count || s.bytes != senders*count*size {
		t.Errorf("delivered %d msgs / %d B, want %d / %d", s.msgs, s.bytes, senders*count, senders*count*size)
	}
	var rtx, to uint64
	for _, h := range c.Hosts()[:senders] {
		st := h.Stats()
		rtx += st.Retransmits
		to += st.Timeouts
		if st.TxPayload != uint64(count*size) {
			t.Errorf("host %d wrote %d B, want %d", h.Index(), st.TxPayload, count*size)
		}
	}
	if rtx == 0 {
		t.Error("drops but no retransmissions")
	}
	if rep.Totals.PFCFramesTx != 0 {
		t.Errorf("TCP class sent %d PFC frames; it is lossy", rep.Totals.PFCFramesTx)
	}
	if rep.Totals.PoolLive != 0 {
		t.Errorf("%d packets leaked", rep.Totals.PoolLive)
	}
	t.Logf("drops %d, retransmits %d, timeouts %d", rep.Totals.Drops, rtx, to)
}

// DCTCP keeps the bottleneck queue near K: the same incast that makes
// NewReno drop runs without loss, at line rate, fairly.
func TestDCTCPIncastNoLossFair(t *testing.T) {
	const senders, size = 8, 1 << 20
	k := int64(100_000)
	fc := star(senders+1, 2<<20, k)
	c, err := New(fc, Config{CC: DCTCP})
	if err != nil {
		t.Fatal(err)
	}
	hs := c.Hosts()
	hs[senders].SetApp(&sink{t: t})
	var conns []*Conn
	for i := range senders {
		cn, _ := hs[i].Dial(hs[senders])
		conns = append(conns, cn)
	}
	bulk(t, conns, 100, size)
	c.Run(20 * sim.Millisecond)
	rx0 := make([]uint64, senders)
	for i, cn := range conns {
		rx0[i] = cn.Peer().Received()
	}
	c.Run(60 * sim.Millisecond)
	var xs []float64
	var sum float64
	for i, cn := range conns {
		xs = append(xs, float64(cn.Peer().Received()-rx0[i]))
		sum += xs[i]
	}
	gbps := sum * 8 / 0.04 / 1e9
	rep := c.Network().Report()
	if rep.Totals.Drops != 0 {
		t.Errorf("DCTCP 8:1 incast dropped %d frames", rep.Totals.Drops)
	}
	if line := 25 * float64(DefaultMSS) / float64(DefaultMSS+SegmentOverhead+fabric.WireGap); gbps < 0.97*line || gbps > line*1.0001 {
		t.Errorf("aggregate goodput %.3f Gbps, want in [97%%, 100%%] of line rate %.3f", gbps, line)
	}
	if j := jain(xs); j < 0.95 {
		t.Errorf("Jain fairness %.3f < 0.95 (bytes %v)", j, xs)
	}
	// Queue bound: K plus one window of reaction; far below the buffer.
	if m := rep.Totals.SharedUsedMax; m > 4*k {
		t.Errorf("peak shared buffer %d B, want <= 4K = %d", m, 4*k)
	}
	if rep.Totals.ECNMarks == 0 {
		t.Error("no ECN marks: DCTCP never saw congestion")
	}
	t.Logf("goodput %.2f Gbps, jain %.4f, peak buffer %d B, marks %d, alpha[0] %.3f", gbps, jain(xs), rep.Totals.SharedUsedMax, rep.Totals.ECNMarks, conns[0].Alpha())
}

func jain(xs []float64) float64 {
	var s, s2 float64
	for _, x := range xs {
		s += x
		s2 += x * x
	}
	return s * s / (float64(len(xs)) * s2)
}

// Slow start doubles the window each RTT from InitCwnd, and the minimum RTO
// holds the timeout above it.
func TestSlowStartAndRTO(t *testing.T) {
	c, _ := New(star(2, 12<<20, 0), Config{CC: NewReno})
	hs := c.Hosts()
	hs[1].SetApp(&sink{t: t})
	cn, _ := hs[0].Dial(hs[1])
	if got, want := cn.Cwnd(), float64(DefaultInitCwnd*DefaultMSS); got != want {
		t.Fatalf("initial cwnd %v, want %v", got, want)
	}
	bulk(t, []*Conn{cn}, 1, int(64*DefaultMSS))
	c.Run(sim.Millisecond)
	// 64 segments acknowledged: cwnd grew by one MSS per MSS acked.
	if got, want := cn.Cwnd(), float64((DefaultInitCwnd+64)*DefaultMSS); got != want {
		t.Errorf("cwnd after 64 segments in slow start = %v, want %v", got, want)
	}
	if cn.RTO() < DefaultMinRTO || cn.RTO() > DefaultMinRTO+sim.Millisecond {
		t.Errorf("RTO %v, want MinRTO %v plus a few RTTs", cn.RTO(), DefaultMinRTO)
	}
}

// Delayed ACKs: one ACK per two segments; an odd last segment waits DelAck.
func TestDelayedAck(t *testing.T) {
	c, _ := New(star(2, 12<<20, 0), Config{NoCPU: true})
	hs := c.Hosts()
	s := &sink{t: t}
	hs[1].SetApp(s)
	cn, _ := hs[0].Dial(hs[1])
	bulk(t, []*Conn{cn}, 1, int(9*DefaultMSS))
	c.Run(sim.Millisecond)
	if got := hs[1].Stats().AcksTx; got != 4 {
		t.Errorf("%d ACKs for 9 segments before the delayed-ACK timer, want 4", got)
	}
	if cn.Unacked() == 0 {
		t.Error("last odd segment acknowledged before DelAck")
	}
	c.Run(DefaultDelAck + 2*sim.Millisecond)
	if got := hs[1].Stats().AcksTx; got != 5 || cn.Unacked() != 0 {
		t.Errorf("after DelAck: %d ACKs, %d B unacked; want 5 and 0", got, cn.Unacked())
	}
	if s.msgs != 1 {
		t.Errorf("message delivered %d times", s.msgs)
	}
}

// CPU accounting adds up from the counters, class by class.
func TestCPUAccounting(t *testing.T) {
	cfg := Config{CC: DCTCP}
	c, s := incast(t, 4, 12<<20, 100_000, cfg, 50, 20_000, 50*sim.Millisecond)
	cost := DefaultCPUCost()
	if s.msgs != 200 {
		t.Fatalf("delivered %d of 200", s.msgs)
	}
	rx := c.Hosts()[4].Stats()
	tx := c.Hosts()[0].Stats()
	copyT := cost.copyTime(20_000)
	wantRxSys := sim.Time(rx.MsgsRx) * (cost.RecvCall + copyT)
	if rx.Sys != wantRxSys {
		t.Errorf("receiver sys %v, want %d x (recv %v + copy %v) = %v", rx.Sys, rx.MsgsRx, cost.RecvCall, copyT, wantRxSys)
	}
	segsIn := uint64(0)
	for _, h := range c.Hosts()[:4] {
		segsIn += h.Stats().TxSegments
	}
	wantIRQ := sim.Time(segsIn)*cost.RxSegment + sim.Time(rx.AcksTx)*cost.TxAck
	if rx.Softirq < wantIRQ || rx.Softirq > wantIRQ+sim.Time(rx.AcksTx+10)*cost.Timer {
		t.Errorf("receiver softirq %v, want %d frames x %v + %d ACKs x %v = %v (+ timers)", rx.Softirq, segsIn, cost.RxSegment, rx.AcksTx, cost.TxAck, wantIRQ)
	}
	wantTxSys := sim.Time(tx.MsgsTx)*(cost.SendCall+copyT) + sim.Time(tx.TxSegments)*cost.TxSegment
	if tx.Sys != wantTxSys {
		t.Errorf("sender sys %v, want %v", tx.Sys, wantTxSys)
	}
	if tx.User != sim.Time(tx.MsgsTx)*cost.User || rx.User != sim.Time(rx.MsgsRx)*cost.User {
		t.Errorf("user time %v / %v, want per-message %v", tx.User, rx.User, cost.User)
	}
}

// Same configuration, same result.
func TestDeterministic(t *testing.T) {
	run := func() []Stats {
		c, _ := incast(t, 8, 256<<10, 30_000, Config{MinRTO: sim.Millisecond}, 10, 100_000, 100*sim.Millisecond)
		var out []Stats
		for _, h := range c.Hosts() {
			out = append(out, h.Stats())
		}
		return out
	}
	if d := cmp.Diff(run(), run()); d != "" {
		t.Errorf("two runs differ:\n%s", d)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []Config{{CC: "bbr"}, {MSS: 10}, {Prio: 9}, {G: 2}, {MinRTO: -1}} {
		if _, err := New(star(2, 1<<20, 0), cfg); err == nil {
			t.Errorf("%+v: accepted", cfg)
		}
	}
	fc := star(2, 1<<20, 0)
	fc.Switch.PFC.Lossless[fabric.DefaultLosslessPrio] = true
	if _, err := New(fc, Config{Prio: fabric.DefaultLosslessPrio}); err == nil {
		t.Error("TCP on the lossless priority accepted")
	}
}

// The packet path allocates nothing in steady state.
func TestSteadyStateAllocs(t *testing.T) {
	c, _ := New(star(3, 12<<20, 100_000), Config{})
	hs := c.Hosts()
	hs[2].SetApp(&sink{t: t})
	a, _ := hs[0].Dial(hs[2])
	b, _ := hs[1].Dial(hs[2])
	bulk(t, []*Conn{a, b}, 2000, 256<<10)
	c.Run(20 * sim.Millisecond)
	step := c.Now()
	allocs := testing.AllocsPerRun(50, func() {
		step += 10 * sim.Microsecond
		c.Run(step)
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per 10 us of two bulk flows, want 0", allocs)
	}
}

// BenchmarkBulk reports simulated data frames per wall second of a 4:1
// DCTCP incast.
func BenchmarkBulk(b *testing.B) {
	c, _ := New(star(5, 12<<20, 100_000), Config{})
	hs := c.Hosts()
	hs[4].SetApp(&sink{})
	for i := range 4 {
		cn, _ := hs[i].Dial(hs[4])
		for j := range 1 << 14 {
			_ = cn.Send(1<<20, Meta{uint64(j)})
		}
	}
	c.Run(5 * sim.Millisecond)
	b.ReportAllocs()
	b.ResetTimer()
	seg0 := hs[4].Stats().AcksTx
	for range b.N {
		c.Run(c.Now() + 10*sim.Microsecond)
	}
	b.ReportMetric(float64(hs[4].Stats().AcksTx-seg0)*2/b.Elapsed().Seconds(), "segments/s")
}

// stamp records when each message arrived.
type stamp struct{ at []sim.Time }

func (s *stamp) OnMessage(h *Host, _ *Conn, _ Message) { s.at = append(s.at, h.Now()) }

// Interrupt moderation holds a lone frame for RxUsecs; a burst of RxFrames
// goes at once.
func TestRxModeration(t *testing.T) {
	arrive := func(cfg Config, size int) sim.Time {
		c, _ := New(star(2, 12<<20, 0), cfg)
		hs := c.Hosts()
		s := &stamp{}
		hs[1].SetApp(s)
		cn, _ := hs[0].Dial(hs[1])
		_ = cn.Send(size, Meta{})
		c.Run(10 * sim.Millisecond)
		if len(s.at) != 1 {
			t.Fatalf("%d deliveries", len(s.at))
		}
		return s.at[0]
	}
	off := arrive(Config{NoCPU: true, NoRxModeration: true}, 100)
	on := arrive(Config{NoCPU: true}, 100)
	if d := on - off; d != DefaultRxUsecs {
		t.Errorf("a lone 100-byte message waited %v for its interrupt, want rx-usecs %v", d, DefaultRxUsecs)
	}
	// 88 full segments arrive back to back (after slow start lets them
	// go): the 88th triggers the interrupt before the timer would.
	n := int(DefaultRxFrames * DefaultMSS)
	burstOff := arrive(Config{NoCPU: true, NoRxModeration: true, InitCwnd: 100}, n)
	burstOn := arrive(Config{NoCPU: true, InitCwnd: 100}, n)
	if d := burstOn - burstOff; d >= DefaultRxUsecs {
		t.Errorf("a burst of rx-frames segments waited %v, want less than rx-usecs", d)
	}
}
