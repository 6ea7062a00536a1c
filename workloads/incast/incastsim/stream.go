package incastsim

import (
	"fmt"
	"unsafe"

	"github.com/besim/besim/rnic"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/simhost"
	"github.com/besim/besim/verbs"
)

// stream is a bandwidth-test flow (the victim, bandwidth flows of Figure
// 14): a perftest ib_write_bw-like RC QP pair opened directly on the two
// hosts' simulated NICs, beside their ByteExpress endpoints and outside
// them, so the engines' send window does not limit it. The sender keeps
// depth WRITEs of msg bytes outstanding, signals every one, and reposts
// from its CQ's notify hook; its provider calls are charged to a CPU of its
// own. One stream value per flow; no closure per message.
type stream struct {
	k     *sim.Kernel
	ctx   *rnic.Context
	cpu   *rnic.CPU
	qp    verbs.QP
	cq    *rnic.CQ
	wrs   []verbs.SendWR
	wc    [32]verbs.WC
	out   int
	depth int
	stop  *bool
	fail  func(error)
	bufs  [][]byte // registered payload memory (kept alive: the NICs address it)
}

func (s *stream) OnEvent(now sim.Time, _ uint64) {
	s.ctx.SetCPU(s.cpu)
	defer s.ctx.SetCPU(nil)
	for {
		n := s.cq.Poll(s.wc[:])
		for _, wc := range s.wc[:n] {
			if wc.Status != verbs.WCSuccess {
				s.fail(fmt.Errorf("bandwidth flow: completion %v on QP %d", wc.Status, wc.QPN))
			}
			s.out--
		}
		if n < len(s.wc) {
			break
		}
	}
	s.fill()
}

func (s *stream) fill() {
	n := s.depth - s.out
	if n <= 0 || *s.stop {
		return
	}
	for i := range n {
		s.wrs[i].Next = nil
		if i+1 < n {
			s.wrs[i].Next = &s.wrs[i+1]
		}
	}
	if _, err := s.qp.PostSend(&s.wrs[0]); err != nil {
		s.fail(err)
		return
	}
	s.out += n
}

// newStream connects src to dst with an RC QP pair and starts streaming.
func newStream(r *incastRun, src, dst *simhost.Host, msg, depth int, name string) (*stream, error) {
	k := r.c.Kernel()
	s := &stream{k: k, ctx: src.Context(), cpu: rnic.NewCPU(k, name), depth: depth, stop: &r.stopped, fail: r.Fail}
	var qps [2]verbs.QP
	var mrs [2]verbs.MR
	var addrs [2]uintptr
	cpus := [2]*rnic.CPU{s.cpu, rnic.NewCPU(k, name+"/rx")}
	for i, h := range []*simhost.Host{src, dst} {
		ctx := h.Context()
		ctx.SetCPU(cpus[i])
		pd, err := ctx.AllocPD()
		if err != nil {
			ctx.SetCPU(nil)
			return nil, err
		}
		b := make([]byte, msg)
		s.bufs = append(s.bufs, b)
		addrs[i] = uintptr(unsafe.Pointer(&b[0]))
		if mrs[i], err = pd.RegMR(addrs[i], msg, verbs.AccessLocalWrite|verbs.AccessRemoteWrite); err != nil {
			ctx.SetCPU(nil)
			return nil, err
		}
		cq, err := ctx.CreateCQ(depth+16, nil)
		if err != nil {
			ctx.SetCPU(nil)
			return nil, err
		}
		if i == 0 {
			s.cq = cq.(*rnic.CQ)
			s.cq.SetNotify(s, 0)
		}
		if qps[i], err = pd.CreateQP(verbs.QPInitAttr{Type: verbs.RC, SendCQ: cq, RecvCQ: cq,
			MaxSendWR: depth, MaxRecvWR: 1, MaxSGE: 1}); err != nil {
			ctx.SetCPU(nil)
			return nil, err
		}
		ctx.SetCPU(nil)
	}
	mtu := verbs.MTU(min(max(r.c.Config().Fabric.MTU, 256), 4096))
	for i, h := range []*simhost.Host{src, dst} {
		peer := []*simhost.Host{dst, src}[i]
		attrs := []verbs.QPAttr{
			{State: verbs.StateInit, Port: 1, AccessFlags: verbs.AccessLocalWrite | verbs.AccessRemoteWrite},
			{State: verbs.StateRTR, AH: verbs.AHAttr{DGID: peer.Context().Attr().GID}, PathMTU: mtu,
				DestQPN: qps[1-i].QPN(), MaxDestRdAtomic: 16, MinRNRTimer: 12},
			{State: verbs.StateRTS, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: 16},
		}
		masks := []verbs.AttrMask{
			verbs.AttrState | verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrAccessFlags,
			verbs.AttrState | verbs.AttrAV | verbs.AttrPathMTU | verbs.AttrDestQPN | verbs.AttrRQPSN |
				verbs.AttrMaxDestRdAtomic | verbs.AttrMinRNRTimer,
			verbs.AttrState | verbs.AttrTimeout | verbs.AttrRetryCnt | verbs.AttrRNRRetry |
				verbs.AttrSQPSN | verbs.AttrMaxQPRdAtomic,
		}
		_ = h
		for j := range attrs {
			if err := qps[i].Modify(&attrs[j], masks[j]); err != nil {
				return nil, err
			}
		}
	}
	s.qp = qps[0]
	sge := []verbs.SGE{{Addr: addrs[0], Length: uint32(msg), LKey: mrs[0].LKey()}}
	s.wrs = make([]verbs.SendWR, depth)
	for i := range s.wrs {
		s.wrs[i] = verbs.SendWR{ID: uint64(i), Opcode: verbs.OpWrite, SGL: sge, Flags: verbs.FlagSignaled,
			RemoteAddr: uint64(addrs[1]), RKey: mrs[1].RKey()}
	}
	return s, nil
}

// start begins streaming (at the current instant).
func (s *stream) start() {
	s.ctx.SetCPU(s.cpu)
	s.fill()
	s.ctx.SetCPU(nil)
}
