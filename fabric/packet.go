package fabric

import "github.com/besim/besim/sim"

// Wire overheads in bytes. A RoCEv2 frame is Ethernet + IPv4 + UDP + BTH +
// payload + ICRC + FCS; on the wire every frame also costs preamble, start
// delimiter and inter-frame gap. Sources: IEEE 802.3 (preamble 7 + SFD 1,
// IFG 12, min frame 64), IBTA RoCEv2 annex A17 (BTH 12, ICRC 4).
const (
	EthHeader   = 14
	FCS         = 4
	WireGap     = 20 // preamble + SFD + inter-frame gap
	IPv4Header  = 20
	UDPHeader   = 8
	BTH         = 12
	ICRC        = 4
	MinFrame    = 64
	RoCEv2Extra = EthHeader + IPv4Header + UDPHeader + BTH + ICRC + FCS // 62
	PauseFrame  = MinFrame                                              // 802.1Qbb PFC frame
)

// Priorities per port (802.1Qbb traffic classes).
const NumPrio = 8

// Kind says what a frame is, independent of the transport opcode.
type Kind uint8

// Frame kinds the fabric distinguishes.
const (
	KindData  Kind = iota // transport payload (RDMA request, raw flow data)
	KindAck               // transport ACK/NAK/CNP-like control from an endpoint
	KindCNP               // RoCEv2 congestion notification packet
	KindPause             // 802.1Qbb PFC frame: hop-by-hop, never routed
)

// ECN codepoints (RFC 3168).
const (
	NotECT uint8 = 0
	ECT1   uint8 = 1 // ECT(1); marked like ECT(0)
	ECT    uint8 = 2 // ECT(0), what RoCEv2 NICs send
	CE     uint8 = 3
)

// IsECT reports whether the frame is ECN-capable (ECT(0) or ECT(1)), i.e. a
// RED queue may mark it CE instead of ignoring it.
func (p *Packet) IsECT() bool { return p.ECN == ECT || p.ECN == ECT1 }

// NodeID names a host or switch in a topology.
type NodeID int32

// Packet is one frame. Packets come from a Pool and go back to it at their
// sink, so the data path allocates nothing; Reset must clear every field a
// previous user might have set.
type Packet struct {
	// The fields every hop reads (link, switch port, switch, host port)
	// come first, in the first 44 bytes, so that a hop touches one cache
	// line of the frame or two, not three (they were spread over 152
	// bytes). The rest is laid out without padding: 136 bytes.
	Kind   Kind
	Prio   uint8 // 802.1p priority / traffic class, 0..7
	ECN    uint8
	Opcode uint8 // transport opcode (BTH-like); meaning belongs to the transport
	// Path pins the frame to a path: at a switch with n equal-cost ports
	// it takes the port Path places after the one its ECMP hash picks
	// ((hash mod n + Path) mod n), so the paths 0..n-1 of one flow use n
	// different ports. It stands for the entropy a RoCEv2 host puts in
	// the UDP source port, chosen so that its fabric's hash spreads the
	// paths (see ECMPHash). 0: the hash alone.
	Path uint8
	// PFC: PauseMask has bit i set when Quanta[i] is meaningful
	// (class-enable vector).
	PauseMask uint8
	Flags     uint16 // transport flags (ack request, solicited, first/last...)

	Src, Dst NodeID
	Flow     uint32 // flow or QP identifier: ECMP hash input and per-flow stats key
	Size     int32  // frame bytes, Ethernet header to FCS (wire adds WireGap)

	next   *Packet  // intrusive FIFO / free-list link
	due    sim.Time // on a link: when its last bit reaches the far end
	inPort int32    // ingress port index at the switch currently holding it

	Payload int32 // payload bytes carried
	SrcQP   uint32
	DstQP   uint32
	PSN     uint32

	// Transport fields carried for the endpoint models (RETH/IMM/AETH-like).
	Imm    uint32
	RKey   uint32
	MsgLen uint32
	Addr   uint64
	Aux    uint64 // free for the transport (e.g. message id, NAK code)

	// PFC: Quanta[i] is the pause time for priority i in 512-bit-time units.
	Quanta [NumPrio]uint16

	SentAt sim.Time // when the source created it (latency accounting)

	// Data optionally carries payload bytes (payload mode in tests).
	Data []byte
}

// Reset clears p for reuse while keeping its Data backing array.
func (p *Packet) Reset() {
	d := p.Data[:0]
	*p = Packet{}
	p.Data = d
}

// WireBytes is what the frame occupies on a link, gaps included.
func (p *Packet) WireBytes() int64 { return int64(p.Size) + WireGap }

// Pool is a free list of packets. Not safe for concurrent use: one simulation
// is single-threaded, so one pool per simulation.
type Pool struct {
	free *Packet
	// Live counts packets taken and not yet returned; a leak shows up here.
	Live int
	news int
	// fresh holds packets allocated in one block and never handed out:
	// one allocation per poolChunk packets rather than one each.
	fresh []Packet
}

// poolChunk is how many packets the pool allocates at once.
const poolChunk = 128

// Get returns a reset packet.
func (pl *Pool) Get() *Packet {
	p := pl.free
	if p == nil {
		pl.news++
		if len(pl.fresh) == 0 {
			pl.fresh = make([]Packet, poolChunk)
		}
		p = &pl.fresh[0]
		pl.fresh = pl.fresh[1:]
	} else {
		pl.free = p.next
		p.next = nil
	}
	pl.Live++
	return p
}

// Put returns p to the pool; p must not be used afterwards.
func (pl *Pool) Put(p *Packet) {
	p.Reset()
	p.next = pl.free
	pl.free = p
	pl.Live--
}

// Allocated is how many packets the pool ever handed out fresh (not
// reused from its free list).
func (pl *Pool) Allocated() int { return pl.news }

// Queue is an intrusive FIFO of packets with a byte count.
type Queue struct {
	head, tail *Packet
	Len        int
	Bytes      int64
}

// Push appends p.
func (q *Queue) Push(p *Packet) {
	p.next = nil
	if q.tail == nil {
		q.head = p
	} else {
		q.tail.next = p
	}
	q.tail = p
	q.Len++
	q.Bytes += int64(p.Size)
}

// Pop removes the head, or returns nil.
func (q *Queue) Pop() *Packet {
	p := q.head
	if p == nil {
		return nil
	}
	q.head = p.next
	if q.head == nil {
		q.tail = nil
	}
	p.next = nil
	q.Len--
	q.Bytes -= int64(p.Size)
	return p
}

// Peek returns the head without removing it.
func (q *Queue) Peek() *Packet { return q.head }
