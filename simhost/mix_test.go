package simhost

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/sim"
)

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// fillPayload writes message k of flow f: position-dependent, so a fragment
// at the wrong offset or a stale buffer is caught.
func fillPayload(b []byte, flow, k uint64) {
	seed := splitmix(flow<<32 ^ k)
	var w [8]byte
	for i := 0; i < len(b); i += 8 {
		binary.LittleEndian.PutUint64(w[:], splitmix(seed^uint64(i)))
		copy(b[i:], w[:])
	}
}

func checkPayload(b []byte, flow, k uint64) error {
	seed := splitmix(flow<<32 ^ k)
	var w [8]byte
	for i := 0; i < len(b); i += 8 {
		binary.LittleEndian.PutUint64(w[:], splitmix(seed^uint64(i)))
		for j := i; j < min(i+8, len(b)); j++ {
			if b[j] != w[j-i] {
				return fmt.Errorf("byte %d of %d is %#x, want %#x", j, len(b), b[j], w[j-i])
			}
		}
	}
	return nil
}

// mixSize is the size of message k of flow f: log-uniform in [1, 1 MiB],
// with the extremes forced on the first messages of every flow.
func mixSize(seed, flow, k uint64) int {
	switch k {
	case 0:
		return 1
	case 1:
		return 1 << 20
	}
	u := float64(splitmix(seed^flow<<40^k)>>11) / (1 << 53)
	return max(1, min(1<<20, int(math.Exp(u*math.Log(1<<20+1)))))
}

type outFlow struct {
	id        uint64
	sent      uint64 // messages handed to Send
	acked     uint64
	ackedNext uint64
}

type inFlow struct {
	id   uint64
	next uint64
}

// mixApp is one host of the randomized mix: it runs flows to every other
// host, receives theirs, checks every message and acknowledges it with an
// 8-byte message carrying its sequence number.
type mixApp struct {
	t        *testing.T
	seed     uint64
	msgs     uint64 // per flow
	window   uint64
	accepted map[byteexpress.Addr]int
	peers    int
	socks    int
	done     *int // flows fully received, cluster-wide
	err      error
}

func (m *mixApp) fail(err error) {
	if m.err == nil {
		m.err = err
	}
}

func flowID(src, dst, k int) uint64 { return uint64(src)<<16 | uint64(dst)<<8 | uint64(k) }

func (m *mixApp) pump(h *Host, s *byteexpress.Socket) {
	f := s.User.(*outFlow)
	for f.sent < m.msgs && f.sent-f.acked < m.window {
		n := mixSize(m.seed, f.id, f.sent)
		buf, err := h.Allocate(n)
		if err != nil {
			m.fail(err)
			return
		}
		fillPayload(buf.Bytes()[:n], f.id, f.sent)
		if err := s.Send(buf, n); err != nil {
			m.fail(err)
			_ = h.Free(buf)
			return
		}
		f.sent++
	}
}

func (m *mixApp) OnEvent(h *Host, ev byteexpress.Event) {
	switch ev.Kind {
	case byteexpress.EvAccepted:
		r := h.Cluster().Lookup(ev.Remote)
		k := m.accepted[ev.Remote]
		m.accepted[ev.Remote] = k + 1
		ev.Socket.User = &inFlow{id: flowID(r.Index(), h.Index(), k)}
	case byteexpress.EvMessage:
		p := ev.Buf.Bytes()[:ev.Len]
		switch f := ev.Socket.User.(type) {
		case *inFlow:
			want := mixSize(m.seed, f.id, f.next)
			if ev.Len != want {
				m.fail(fmt.Errorf("%s: flow %#x message %d: %d bytes, want %d", h.Name(), f.id, f.next, ev.Len, want))
			} else if err := checkPayload(p, f.id, f.next); err != nil {
				m.fail(fmt.Errorf("%s: flow %#x message %d: %v", h.Name(), f.id, f.next, err))
			}
			ack, err := h.Allocate(8)
			if err != nil {
				m.fail(err)
				break
			}
			binary.LittleEndian.PutUint64(ack.Bytes(), f.next)
			if err := ev.Socket.Send(ack, 8); err != nil {
				m.fail(err)
				_ = h.Free(ack)
			}
			f.next++
			if f.next == m.msgs {
				*m.done++
			}
		case *outFlow:
			if ev.Len != 8 {
				m.fail(fmt.Errorf("%s: ack of %d bytes", h.Name(), ev.Len))
			} else if a := binary.LittleEndian.Uint64(p); a != f.ackedNext {
				m.fail(fmt.Errorf("%s: flow %#x: ack %d, want %d", h.Name(), f.id, a, f.ackedNext))
			}
			f.ackedNext++
			f.acked++
			m.pump(h, ev.Socket)
		default:
			m.fail(fmt.Errorf("%s: message on an unknown socket", h.Name()))
		}
		_ = h.Free(ev.Buf)
	case byteexpress.EvConnected:
	case byteexpress.EvSendFailed, byteexpress.EvBufferReturned:
		_ = h.Free(ev.Buf)
		m.fail(fmt.Errorf("%s: unexpected %v: %v", h.Name(), ev.Kind, ev.Err))
	default:
		m.fail(fmt.Errorf("%s: unexpected %v (remote %s): %v", h.Name(), ev.Kind, ev.Remote, ev.Err))
	}
}

func TestRandomMix(t *testing.T) {
	cases := []struct {
		name  string
		hosts int
		socks int
		msgs  uint64
		srq   bool
		be    byteexpress.Config
	}{
		{name: "defaults", hosts: 4, socks: 2, msgs: 30},
		{name: "threads2-tight-window", hosts: 3, socks: 3, msgs: 30, be: byteexpress.Config{Threads: 2, SQDepth: 8, RQDepth: 8,
			RecvBufSize: 2048, SmallMsgMax: 1024, FragSize: 1024, Cwnd: 4096, MetaLookahead: 2}},
		{name: "tiny-queues", hosts: 3, socks: 2, msgs: 20, be: byteexpress.Config{SQDepth: 4, RQDepth: 4,
			RecvBufSize: 512, SmallMsgMax: 256, FragSize: 3000}},
		{name: "srq-threads3", hosts: 4, socks: 2, msgs: 20, srq: true, be: byteexpress.Config{Threads: 3, UseSRQ: true,
			SRQDepth: 256, FragSize: 16 << 10}},
	}
	if testing.Short() {
		cases = cases[:2]
	}
	for ci, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig(tc.hosts)
			cfg.BE = tc.be
			cfg.CheckInvariants = true
			c, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			done := 0
			apps := make([]*mixApp, tc.hosts)
			for i, h := range c.Hosts() {
				apps[i] = &mixApp{t: t, seed: uint64(ci + 1), msgs: tc.msgs, window: 2, accepted: map[byteexpress.Addr]int{},
					peers: tc.hosts - 1, socks: tc.socks, done: &done}
				h.SetApp(apps[i])
				h.Listen()
			}
			for i, h := range c.Hosts() {
				for j, r := range c.Hosts() {
					if i == j {
						continue
					}
					for k := range tc.socks {
						s, err := h.Dial(r)
						if err != nil {
							t.Fatal(err)
						}
						s.User = &outFlow{id: flowID(i, j, k)}
						apps[i].pump(h, s)
					}
				}
			}
			flows := tc.hosts * (tc.hosts - 1) * tc.socks
			for step := 0; done < flows && step < 2000; step++ {
				c.RunFor(sim.Millisecond)
				for _, a := range apps {
					if a.err != nil {
						t.Fatal(a.err)
					}
				}
				if err := c.Err(); err != nil {
					t.Fatal(err)
				}
			}
			if done != flows {
				t.Fatalf("only %d of %d flows complete at t=%v", done, flows, c.Now())
			}
			c.RunFor(sim.Millisecond) // let the last acks land
			var msgs int
			for _, h := range c.Hosts() {
				st := h.Stats()
				be := &st.Endpoint
				msgs += be.MessagesSent
				if be.MinCredits < 0 {
					t.Errorf("%s: credits went to %d", h.Name(), be.MinCredits)
				}
				if sq := c.Config().BE.Defaults().SQDepth; be.MaxRingOccupancy > sq {
					t.Errorf("%s: ring occupancy %d > SQ depth %d", h.Name(), be.MaxRingOccupancy, sq)
				}
				if w := tc.be.Cwnd; w > 0 && be.MaxInflightBytes > w {
					t.Errorf("%s: %d bytes in flight > Cwnd %d", h.Name(), be.MaxInflightBytes, w)
				}
				if !tc.srq && (st.RNRNAKs != 0 || st.NIC.RNRNAKsSent != 0) {
					t.Errorf("%s: %d RNR NAKs received, %d sent with dedicated receive queues", h.Name(), st.RNRNAKs, st.NIC.RNRNAKsSent)
				}
				if be.EngineErrors != 0 || be.FreeErrors != 0 || be.Dropped != 0 {
					t.Errorf("%s: engine errors %d, free errors %d, dropped %d", h.Name(), be.EngineErrors, be.FreeErrors, be.Dropped)
				}
				t.Logf("%s: polls %d, CPU %.1f%%, msgs sent %d, credit stalls %d, window stalls %d, ring stalls %d, min credits %d, max ring %d, max in flight %d B, RNR %d",
					h.Name(), st.Polls, 100*st.Util, be.MessagesSent, be.CreditStalls, be.WindowStalls, be.RingStalls,
					be.MinCredits, be.MaxRingOccupancy, be.MaxInflightBytes, st.NIC.RNRNAKsSent)
			}
			if want := 2 * flows * int(tc.msgs); msgs != want {
				t.Errorf("%d messages completed, want %d (data + acks)", msgs, want)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			t.Logf("%d flows x %d messages done at t=%v, %d events", flows, tc.msgs, c.Now(), c.Kernel().Events())
		})
	}
}
