package perftest

import (
	"errors"
	"fmt"

	"github.com/besim/besim/sim"
	"github.com/besim/besim/verbs"
)

// Endpoint is one side of the benchmark: the sender (client) or the
// receiver (server). Its life: NewSender or NewReceiver, Open, exchange
// Info with the peer, Connect, (receiver) PostReceives, then Step whenever
// its CQ may hold completions (the simulation: on every CQ notification;
// a real host: in a polling loop), and Close. The runner serializes the
// calls.
type Endpoint struct {
	cfg  Config
	send bool
	ctx  verbs.Context
	pd   verbs.PD
	mr   verbs.MR
	cq   verbs.CQ
	qp   verbs.QP
	ah   verbs.AH
	buf  uintptr
	wrs  []verbs.SendWR
	rwrs []verbs.RecvWR
	wc   [64]verbs.WC

	// Sender.
	posted   uint64 // sends posted
	signaled uint64 // signalled sends posted
	out      int    // sends outstanding (as the CQMod accounting sees them)
	stopped  bool
	flush    bool // Stop's signalled SEND is still to be posted

	// Both: completions polled; the receiver's counts in the interval.
	completions uint64
	from, to    sim.Time
	msgs, bytes uint64
	fail        error
}

// NewSender returns the sending side of cfg (defaults filled in).
func NewSender(cfg Config) *Endpoint { return &Endpoint{cfg: cfg.WithDefaults(), send: true} }

// NewReceiver returns the receiving side of cfg (defaults filled in),
// measuring over [Warmup, Warmup+Duration) of the times given to Step.
func NewReceiver(cfg Config) *Endpoint {
	c := cfg.WithDefaults()
	return &Endpoint{cfg: c, from: c.Warmup, to: c.Warmup + c.Duration}
}

// Config is the endpoint's configuration with defaults filled in.
func (e *Endpoint) Config() Config { return e.cfg }

// CQ is the endpoint's completion queue (nil before Open): a simulation
// driver asks it for notifications.
func (e *Endpoint) CQ() verbs.CQ { return e.cq }

// QP is the endpoint's queue pair (nil before Open).
func (e *Endpoint) QP() verbs.QP { return e.qp }

// Open validates the configuration and creates the endpoint's resources
// on ctx: a PD, buf registered for Config.BufferSize bytes (memory that
// stays mapped and does not move; a sizes-only simulation may pass any
// address), one CQ for sends and receives, and the QP.
func (e *Endpoint) Open(ctx verbs.Context, buf uintptr) error {
	c := e.cfg
	if err := c.Validate(); err != nil {
		return err
	}
	e.ctx, e.buf = ctx, buf
	var err error
	if e.pd, err = ctx.AllocPD(); err != nil {
		return fmt.Errorf("perftest: alloc PD: %w", err)
	}
	if e.mr, err = e.pd.RegMR(buf, c.BufferSize(), verbs.AccessLocalWrite|verbs.AccessRemoteWrite); err != nil {
		return fmt.Errorf("perftest: register %d bytes: %w", c.BufferSize(), err)
	}
	if e.cq, err = ctx.CreateCQ(c.TxDepth+c.RxDepth+16, nil); err != nil {
		return fmt.Errorf("perftest: create CQ of %d: %w", c.TxDepth+c.RxDepth+16, err)
	}
	if e.qp, err = e.pd.CreateQP(verbs.QPInitAttr{Type: c.Transport, SendCQ: e.cq, RecvCQ: e.cq,
		MaxSendWR: c.TxDepth, MaxRecvWR: c.RxDepth, MaxSGE: 1}); err != nil {
		return fmt.Errorf("perftest: create %v QP (%d sends, %d receives): %w", c.Transport, c.TxDepth, c.RxDepth, err)
	}
	return nil
}

// Info is what the peer needs to connect to this endpoint: QP number,
// starting PSN 0, the port GID and the path MTU.
func (e *Endpoint) Info() verbs.QPInfo {
	return verbs.QPInfo{QPN: e.qp.QPN(), GID: e.ctx.Attr().GID, MTU: e.cfg.MTU}
}

// Connect brings the QP to RTS towards peer (the other endpoint's Info)
// and prepares the work requests: for RC the path to the peer's QP, for
// UD the sender's address handle.
func (e *Endpoint) Connect(peer verbs.QPInfo) error {
	c := e.cfg
	ud := c.Transport == verbs.UD
	ah := verbs.AHAttr{DGID: peer.GID, SGIDIndex: c.GIDIndex, TrafficClass: c.TrafficClass, ServiceLevel: c.ServiceLevel}
	var err error
	if ud {
		err = verbs.ModifyAll(e.qp, []verbs.QPAttr{
			{State: verbs.StateInit, Port: c.Port, QKey: QKey},
			{State: verbs.StateRTR},
			{State: verbs.StateRTS, SQPSN: 0},
		}, []verbs.AttrMask{
			verbs.AttrState | verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrQKey,
			verbs.AttrState,
			verbs.AttrState | verbs.AttrSQPSN,
		})
	} else {
		err = verbs.ModifyAll(e.qp, []verbs.QPAttr{
			{State: verbs.StateInit, Port: c.Port, AccessFlags: verbs.AccessLocalWrite | verbs.AccessRemoteWrite},
			{State: verbs.StateRTR, AH: ah, PathMTU: c.MTU,
				DestQPN: peer.QPN, RQPSN: peer.PSN, MaxDestRdAtomic: 16, MinRNRTimer: 12},
			{State: verbs.StateRTS, Timeout: 14, RetryCnt: 7, RNRRetry: 7, SQPSN: 0, MaxRdAtomic: 16},
		}, []verbs.AttrMask{
			verbs.AttrState | verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrAccessFlags,
			verbs.AttrState | verbs.AttrAV | verbs.AttrPathMTU | verbs.AttrDestQPN | verbs.AttrRQPSN |
				verbs.AttrMaxDestRdAtomic | verbs.AttrMinRNRTimer,
			verbs.AttrState | verbs.AttrTimeout | verbs.AttrRetryCnt | verbs.AttrRNRRetry |
				verbs.AttrSQPSN | verbs.AttrMaxQPRdAtomic,
		})
	}
	if err != nil {
		return fmt.Errorf("perftest: connect %v QP %d to QP %d: %w", c.Transport, e.qp.QPN(), peer.QPN, err)
	}
	if !e.send {
		rsge := []verbs.SGE{{Addr: e.buf, Length: uint32(c.BufferSize()), LKey: e.mr.LKey()}}
		e.rwrs = make([]verbs.RecvWR, c.RxDepth)
		for i := range e.rwrs {
			e.rwrs[i] = verbs.RecvWR{ID: uint64(i), SGL: rsge}
		}
		return nil
	}
	if ud {
		if e.ah, err = e.pd.CreateAH(ah); err != nil {
			return fmt.Errorf("perftest: UD address handle to %v: %w", peer.GID, err)
		}
	}
	sge := []verbs.SGE{{Addr: e.buf, Length: uint32(c.MsgSize), LKey: e.mr.LKey()}}
	e.wrs = make([]verbs.SendWR, c.TxDepth)
	for i := range e.wrs {
		e.wrs[i] = verbs.SendWR{ID: uint64(i), Opcode: verbs.OpSend, SGL: sge,
			AH: e.ah, RemoteQPN: peer.QPN, RemoteQKey: QKey}
	}
	return nil
}

// PostReceives posts the receiver's RxDepth receives; call it after
// Connect and before the sender starts.
func (e *Endpoint) PostReceives() error {
	if e.send || e.rwrs == nil {
		return errors.New("perftest: PostReceives on a sender or before Connect")
	}
	e.postRecvs(len(e.rwrs))
	return e.fail
}

// Step polls the CQ until it is empty at now: the receiver reposts one
// receive per completion and counts completions at times in its measured
// interval; the sender refills its send queue to TxDepth outstanding
// (until Stop). It returns the first error seen (a failed completion or
// post), and keeps returning it.
func (e *Endpoint) Step(now sim.Time) error {
	for {
		k := e.cq.Poll(e.wc[:])
		for _, wc := range e.wc[:k] {
			e.completions++
			if wc.Status != verbs.WCSuccess && e.fail == nil {
				e.fail = fmt.Errorf("perftest: completion %v on QP %d", wc.Status, wc.QPN)
			}
			if e.send {
				e.out -= e.cfg.CQMod
			} else if now >= e.from && now < e.to {
				e.msgs++
				if wc.Status == verbs.WCSuccess {
					n := uint64(wc.ByteLen)
					if e.cfg.Transport == verbs.UD {
						n -= min(n, GRHBytes)
					}
					e.bytes += n
				}
			}
		}
		if !e.send && k > 0 {
			e.postRecvs(k)
		}
		if k < len(e.wc) {
			break
		}
	}
	switch {
	case e.send && !e.stopped:
		e.fill()
	case e.flush:
		e.postFlush()
	}
	return e.fail
}

func (e *Endpoint) fill() {
	n := e.cfg.TxDepth - e.out
	if n <= 0 {
		return
	}
	for i := 0; i < n; i++ {
		w := &e.wrs[i]
		e.posted++
		w.Flags = 0
		if e.posted%uint64(e.cfg.CQMod) == 0 {
			w.Flags = verbs.FlagSignaled
			e.signaled++
		}
		w.Next = nil
		if i+1 < n {
			w.Next = &e.wrs[i+1]
		}
	}
	if _, err := e.qp.PostSend(&e.wrs[0]); err != nil && e.fail == nil {
		e.fail = err
	}
	e.out += n
}

func (e *Endpoint) postRecvs(n int) {
	for i := 0; i < n; i++ {
		e.rwrs[i].Next = nil
		if i+1 < n {
			e.rwrs[i].Next = &e.rwrs[i+1]
		}
	}
	if _, err := e.qp.PostRecv(&e.rwrs[0]); err != nil && e.fail == nil {
		e.fail = err
	}
}

// Stop ends the sender's load: Step posts no more SENDs. If sends are
// outstanding that no signalled one follows, Step posts one more SEND,
// signalled, once the send queue has room, so that Drained can tell when
// every SEND has completed.
func (e *Endpoint) Stop() {
	if e.send && !e.stopped {
		e.stopped = true
		e.flush = e.wrs != nil && e.posted%uint64(e.cfg.CQMod) != 0
	}
}

// postFlush posts the signalled SEND Stop asked for.
func (e *Endpoint) postFlush() {
	if e.out >= e.cfg.TxDepth {
		return // no room until the next signalled completion
	}
	e.flush = false
	w := &e.wrs[0]
	w.Flags, w.Next = verbs.FlagSignaled, nil
	e.posted++
	e.signaled++
	e.out++
	if _, err := e.qp.PostSend(w); err != nil && e.fail == nil {
		e.fail = err
	}
}

// Drained reports whether a stopped sender has every signalled SEND's
// completion, so that every SEND it posted has completed.
func (e *Endpoint) Drained() bool {
	return e.send && e.stopped && !e.flush && e.completions >= e.signaled
}

// Stats is what an endpoint counted.
type Stats struct {
	Posted      uint64 // sender: SENDs posted
	Completions uint64 // completions polled
	// Receiver: messages completed at times in the measured interval, and
	// their payload bytes (UD: without the GRH).
	Msgs, Bytes uint64
}

// Stats returns the endpoint's counts.
func (e *Endpoint) Stats() Stats {
	return Stats{Posted: e.posted, Completions: e.completions, Msgs: e.msgs, Bytes: e.bytes}
}

// Err is the first error Step or PostReceives saw.
func (e *Endpoint) Err() error { return e.fail }

// Close destroys the endpoint's resources, the QP first.
func (e *Endpoint) Close() error {
	var errs []error
	if e.qp != nil {
		errs = append(errs, e.qp.Destroy())
	}
	if e.ah != nil {
		errs = append(errs, e.ah.Destroy())
	}
	if e.cq != nil {
		errs = append(errs, e.cq.Destroy())
	}
	if e.mr != nil {
		errs = append(errs, e.mr.Dereg())
	}
	if e.pd != nil {
		errs = append(errs, e.pd.Dealloc())
	}
	e.qp, e.ah, e.cq, e.mr, e.pd = nil, nil, nil, nil, nil
	return errors.Join(errs...)
}
