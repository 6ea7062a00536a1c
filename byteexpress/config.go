package byteexpress

import (
	"errors"
	"fmt"
	"time"
)

// Config holds the tunables of an Endpoint. The zero value of every field
// means "the default" listed on the field; Defaults returns the filled-in
// configuration.
type Config struct {
	// Threads is the number of I/O threads (§6.2), each with its own CQ and
	// thread domain; engines are assigned to them round-robin. Default 1.
	Threads int
	// NoThreadDomains turns the per-thread thread domains off (§6.2.1, the
	// paper's Figure 11 baseline): CQs, QPs and SRQs are created without a
	// TD, so the provider gives the first QPs of the process lock-free
	// doorbell registers and the later ones shared, locked registers that
	// threads contend for. The zero value keeps one TD per I/O thread (the
	// core's design); the field is negative so that a zero Config keeps it.
	NoThreadDomains bool

	// SQDepth is the send-queue depth and the length of each engine's
	// work-request ring (§5.4.1). Default 32.
	SQDepth int
	// RQDepth is the dedicated receive-queue depth d; it is also the initial
	// credit count advertised to the peer, and receives are re-posted in
	// batches of k = d/2 (§5.4.2). Must be at least 4. Default 32.
	RQDepth int
	// RecvBufSize is the size of each posted receive buffer, hence the
	// largest SEND an engine may post to its peer. Default 8 KiB.
	RecvBufSize int
	// SmallMsgMax is the largest message sent inline in a SEND (copied into
	// and out of receive buffers); larger messages take the zero-copy
	// metadata + WRITE path of §5.3.2. It is capped so a message fits in one
	// SEND of RecvBufSize bytes (and of Cwnd bytes when a window is set).
	// Default 4 KiB.
	SmallMsgMax int
	// FragSize is the fragment size S of large messages (§5.3.2, §6.1):
	// WRITEs of at most S bytes, one fragment per socket turn. Default 4 KiB
	// (the paper's Figure 13 setting; Figure 10 suggests >8 KiB at 100 Gb/s).
	FragSize int
	// Cwnd is the per-engine send window (§6.3): the most bytes posted but
	// not yet completed. 0 disables it, the paper's "no software control"
	// baseline, and is the default. When set, fragments and SENDs are capped
	// at Cwnd bytes so the bound is strict.
	Cwnd int

	// EnginePerSocket gives every dialled socket its own engine (RC QP
	// pair) instead of attaching it to the endpoint's engine for the
	// destination: the no-multiplexing baseline of §6.1 ("sockets to one
	// destination share an engine to reduce QP-cache pressure"). Default
	// false (multiplexed). Only the dialling side decides; a listener
	// always accepts one engine per incoming connect.
	EnginePerSocket bool

	// CQDepth is the depth of each thread's CQ. A thread refuses new engines
	// once their worst-case completions (SQDepth+RQDepth each, plus SRQDepth)
	// would not fit. Default 16384.
	CQDepth int
	// PollBatch is how many completions one CQ poll returns (ibv_poll_cq
	// batch, §6.2.2). Default 32.
	PollBatch int
	// MaxPollRounds bounds the CQ polls per step; a step that hits the bound
	// asks to run again at once (Ready.Next == now). Default 8.
	MaxPollRounds int
	// MetaLookahead is how many large messages per socket may hold a
	// receiver-allocated destination buffer (metadata requested) ahead of
	// being written, pipelining the metadata RTT. Default 4.
	MetaLookahead int

	// UseSRQ gives each I/O thread one shared receive queue (§6.2.2) instead
	// of a dedicated RQ per engine. Receive credits are then not used (the
	// engine advertises 0 credits and its peer sends without waiting); RNR
	// is mitigated by a large queue and the RNR timer/retry below.
	UseSRQ bool
	// SRQDepth is the per-thread SRQ depth; re-posted in batches of half.
	// Default 1024.
	SRQDepth int

	// MinRNRTimer is the IB-encoded minimum RNR NAK timer (verbs.RNRTimerNS).
	// Default 3 (30 us).
	MinRNRTimer uint8
	// RNRRetry is the RNR retry count; 7 means retry forever. Default 7.
	// With dedicated queues and credits, RNR should never happen.
	RNRRetry uint8
	// AckTimeout is the local ACK timeout exponent (4.096 us x 2^t).
	// Default 14 (~67 ms).
	AckTimeout uint8
	// RetryCnt is the transport retry count. Default 7.
	RetryCnt uint8
	// Port is the device port number. Default 1.
	Port uint8
	// GIDIndex is the local GID table index of every QP's address vector
	// (SGIDIndex); it must be the index the verbs context was opened with.
	// On RoCEv2 the IPv4-mapped RoCE v2 GID is usually not index 0.
	// Default 0.
	GIDIndex uint8
	// TrafficClass is the GRH traffic class (the IP ToS byte on RoCEv2:
	// DSCP << 2) and ServiceLevel the 802.1p priority of every QP's
	// packets. A NIC trusting DSCP classifies by the first, one trusting
	// PCP by the second; 0 leaves the device default (simulated RNICs then
	// use their TrafficPrio). Default 0.
	TrafficClass, ServiceLevel uint8

	// KeepaliveInterval is how often an engine sends its peer the next
	// keepalive sequence number (§7.2). Default 100 ms; negative disables
	// keepalive entirely.
	KeepaliveInterval time.Duration
	// KeepaliveTimeout: an engine whose peer's sequence number has not
	// advanced for this long enters the error state. Default 5 intervals.
	KeepaliveTimeout time.Duration
	// ConnectTimeout bounds the out-of-band exchange of a new engine.
	// Default 1 s.
	ConnectTimeout time.Duration

	// Trace, if set, is called synchronously on scheduling decisions; for
	// tests and debugging (it must not call back into the core).
	Trace func(TraceEvent)
}

// TraceKind says what a TraceEvent records.
type TraceKind uint8

// Trace kinds.
const (
	// TraceFragment: a socket's turn prepared one WRITE fragment (Bytes).
	TraceFragment TraceKind = iota + 1
	// TraceSmall: a socket's turn put a small message (Bytes) into a SEND.
	TraceSmall
	// TracePost: an engine posted a batch of WRs (WRs) with one doorbell.
	TracePost
)

// TraceEvent is the argument of Config.Trace.
type TraceEvent struct {
	Kind   TraceKind
	Engine uint64
	Socket uint64 // Socket.ID of the socket whose turn it was
	Bytes  int
	WRs    int
}

// Defaults returns c with every zero field replaced by its default.
func (c Config) Defaults() Config {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Threads, 1)
	def(&c.SQDepth, 32)
	def(&c.RQDepth, 32)
	def(&c.RecvBufSize, 8<<10)
	def(&c.SmallMsgMax, 4<<10)
	def(&c.FragSize, 4<<10)
	def(&c.CQDepth, 16384)
	def(&c.PollBatch, 32)
	def(&c.MaxPollRounds, 8)
	def(&c.MetaLookahead, 4)
	def(&c.SRQDepth, 1024)
	if c.MinRNRTimer == 0 {
		c.MinRNRTimer = 3
	}
	if c.RNRRetry == 0 {
		c.RNRRetry = 7
	}
	if c.AckTimeout == 0 {
		c.AckTimeout = 14
	}
	if c.RetryCnt == 0 {
		c.RetryCnt = 7
	}
	if c.Port == 0 {
		c.Port = 1
	}
	if c.KeepaliveInterval == 0 {
		c.KeepaliveInterval = 100 * time.Millisecond
	}
	if c.KeepaliveTimeout == 0 && c.KeepaliveInterval > 0 {
		c.KeepaliveTimeout = 5 * c.KeepaliveInterval
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = time.Second
	}
	return c
}

// Validate reports the first inconsistent field of a defaulted Config.
func (c Config) Validate() error {
	switch {
	case c.Threads < 1:
		return errors.New("byteexpress: Threads must be at least 1")
	case c.SQDepth < 2:
		return errors.New("byteexpress: SQDepth must be at least 2")
	case c.RQDepth < 4:
		return errors.New("byteexpress: RQDepth must be at least 4 (credits are re-posted in batches of RQDepth/2 >= 2)")
	case c.RecvBufSize < minSendCap:
		return fmt.Errorf("byteexpress: RecvBufSize must be at least %d", minSendCap)
	case c.SmallMsgMax < 0 || c.FragSize < 1:
		return errors.New("byteexpress: SmallMsgMax must be >= 0 and FragSize >= 1")
	case c.Cwnd < 0 || (c.Cwnd > 0 && c.Cwnd < minSendCap):
		return fmt.Errorf("byteexpress: Cwnd must be 0 (off) or at least %d bytes", minSendCap)
	case c.PollBatch < 1 || c.MaxPollRounds < 1 || c.MetaLookahead < 1:
		return errors.New("byteexpress: PollBatch, MaxPollRounds and MetaLookahead must be positive")
	case c.UseSRQ && c.SRQDepth < 4:
		return errors.New("byteexpress: SRQDepth must be at least 4")
	case c.RNRRetry > 7 || c.RetryCnt > 7 || c.MinRNRTimer > 31 || c.AckTimeout > 31:
		return errors.New("byteexpress: RNRRetry/RetryCnt at most 7, MinRNRTimer/AckTimeout at most 31")
	case c.KeepaliveInterval > 0 && c.KeepaliveTimeout <= c.KeepaliveInterval:
		return errors.New("byteexpress: KeepaliveTimeout must exceed KeepaliveInterval")
	case c.ConnectTimeout <= 0:
		return errors.New("byteexpress: ConnectTimeout must be positive")
	}
	if need := c.perEngineCQEs(); c.CQDepth < need+c.srqCQEs() {
		return fmt.Errorf("byteexpress: CQDepth %d cannot hold one engine's %d completions", c.CQDepth, need+c.srqCQEs())
	}
	return nil
}

// perEngineCQEs is the most completions one engine can have outstanding in
// its thread's CQ: one per signalled send WR (at most SQDepth) plus one per
// posted dedicated receive.
func (c Config) perEngineCQEs() int {
	if c.UseSRQ {
		return c.SQDepth
	}
	return c.SQDepth + c.RQDepth
}

func (c Config) srqCQEs() int {
	if c.UseSRQ {
		return c.SRQDepth
	}
	return 0
}
