// Package verbs is the port through which the ByteExpress core reaches an
// RDMA NIC: Go types shaped like libibverbs (ibv_context, ibv_pd, ibv_mr,
// ibv_cq, ibv_qp, ibv_srq, ibv_td, chained ibv_send_wr), without cgo.
//
// Two backends implement it: the simulated RNIC (package rnic, virtual time)
// and real libibverbs (package verbs/ibv, build tag rdma). Both must pass the
// conformance suite in verbs/verbstest. Paper §2.2 describes the verbs model;
// the engine of §5.4 depends on chained posts, selective signalling and
// batched polling, so those are first-class here.
//
// Ownership: work requests are borrowed for the duration of a Post call only;
// a backend copies what it needs, so a caller may reuse a preallocated ring of
// requests (paper §5.4.1) without allocating.
package verbs

import (
	"errors"
	"fmt"
)

// Context is an opened device (ibv_context).
type Context interface {
	Name() string
	Attr() DeviceAttr
	AllocPD() (PD, error)
	// AllocTD allocates a thread domain (ibv_alloc_td): resources created
	// with it are used by one thread only, so the provider may skip locks.
	AllocTD() (TD, error)
	// CreateCQ creates a completion queue of at least depth entries; td may be
	// nil. One CQ may serve the send and receive queues of many QPs.
	CreateCQ(depth int, td TD) (CQ, error)
	Close() error
}

// DeviceAttr is what QueryDevice/QueryPort report that the core relies on.
type DeviceAttr struct {
	MaxQPWR  int   // max outstanding WRs per queue
	MaxSGE   int   // max scatter/gather entries per WR
	MaxCQE   int   // max CQ depth
	MaxMR    int   // max memory regions
	MaxSRQWR int   // max WRs per SRQ
	PortRate int64 // active link rate, bits/s
	PortMTU  MTU   // active path MTU
	GID      GID   // port GID (RoCEv2 address)
}

// PD is a protection domain (ibv_pd).
type PD interface {
	// RegMR registers len bytes at addr. For a real device the memory must
	// stay mapped and must not move (bemalloc allocates it outside the Go
	// heap); backends that copy payloads use the same address space.
	RegMR(addr uintptr, length int, access Access) (MR, error)
	CreateQP(attr QPInitAttr) (QP, error)
	CreateSRQ(attr SRQInitAttr) (SRQ, error)
	CreateAH(attr AHAttr) (AH, error)
	Dealloc() error
}

// Access flags of a memory region or QP (ibv_access_flags).
type Access uint32

// Access flag bits; values match libibverbs.
const (
	AccessLocalWrite      Access = 1 << 0
	AccessRemoteWrite     Access = 1 << 1
	AccessRemoteRead      Access = 1 << 2
	AccessRemoteAtomic    Access = 1 << 3
	AccessRelaxedOrdering Access = 1 << 20 // IBV_ACCESS_RELAXED_ORDERING
)

// MR is a registered memory region (ibv_mr).
type MR interface {
	Addr() uintptr
	Len() int
	LKey() uint32
	RKey() uint32
	Access() Access
	Dereg() error
}

// TD is a thread domain (ibv_td).
type TD interface {
	Dealloc() error
}

// AH is an address handle for UD sends (ibv_ah).
type AH interface {
	Destroy() error
}

// GID is a 128-bit port address (RoCEv2: IPv4-mapped or IPv6).
type GID [16]byte

func (g GID) String() string {
	return fmt.Sprintf("%x:%x:%x:%x:%x:%x:%x:%x",
		uint16(g[0])<<8|uint16(g[1]), uint16(g[2])<<8|uint16(g[3]),
		uint16(g[4])<<8|uint16(g[5]), uint16(g[6])<<8|uint16(g[7]),
		uint16(g[8])<<8|uint16(g[9]), uint16(g[10])<<8|uint16(g[11]),
		uint16(g[12])<<8|uint16(g[13]), uint16(g[14])<<8|uint16(g[15]))
}

// AHAttr addresses a remote port (ibv_ah_attr with a GRH, as RoCE needs).
type AHAttr struct {
	DGID         GID
	SGIDIndex    uint8
	HopLimit     uint8
	TrafficClass uint8 // DSCP/ECN byte
	ServiceLevel uint8 // maps to the 802.1p priority
	PortNum      uint8
	FlowLabel    uint32
}

// MTU is an IB path MTU in bytes: 256, 512, 1024, 2048 or 4096.
type MTU int

// Valid reports whether m is one of the IB MTUs.
func (m MTU) Valid() bool {
	switch m {
	case 256, 512, 1024, 2048, 4096:
		return true
	}
	return false
}

// QPType is the transport of a QP.
type QPType uint8

// QP transports (Table 1 of the paper); UC is not modelled.
const (
	RC QPType = 2 // IBV_QPT_RC
	UD QPType = 4 // IBV_QPT_UD
)

func (t QPType) String() string {
	switch t {
	case RC:
		return "RC"
	case UD:
		return "UD"
	}
	return fmt.Sprintf("QPType(%d)", uint8(t))
}

// QPInitAttr creates a QP (ibv_qp_init_attr).
type QPInitAttr struct {
	Type      QPType
	SendCQ    CQ
	RecvCQ    CQ
	SRQ       SRQ // nil: a dedicated receive queue
	TD        TD  // nil: resources shared with other threads
	MaxSendWR int
	MaxRecvWR int
	MaxSGE    int
	// SigAll signals every send WR; false means only WRs with FlagSignaled
	// produce a send completion (selective signalling, §5.4.1).
	SigAll bool
}

// SRQInitAttr creates a shared receive queue.
type SRQInitAttr struct {
	MaxWR  int
	MaxSGE int
	TD     TD
}

// QPState is the ibverbs QP state machine.
type QPState uint8

// QP states; values match enum ibv_qp_state.
const (
	StateReset QPState = iota
	StateInit
	StateRTR
	StateRTS
	StateSQD
	StateSQE
	StateErr
)

func (s QPState) String() string {
	switch s {
	case StateReset:
		return "RESET"
	case StateInit:
		return "INIT"
	case StateRTR:
		return "RTR"
	case StateRTS:
		return "RTS"
	case StateSQD:
		return "SQD"
	case StateSQE:
		return "SQE"
	case StateErr:
		return "ERR"
	}
	return fmt.Sprintf("QPState(%d)", uint8(s))
}

// AttrMask says which QPAttr fields a Modify sets (ibv_qp_attr_mask).
type AttrMask uint32

// Attribute mask bits; values match libibverbs.
const (
	AttrState           AttrMask = 1 << 0
	AttrAccessFlags     AttrMask = 1 << 3
	AttrPKeyIndex       AttrMask = 1 << 4
	AttrPort            AttrMask = 1 << 5
	AttrQKey            AttrMask = 1 << 6
	AttrAV              AttrMask = 1 << 7
	AttrPathMTU         AttrMask = 1 << 8
	AttrTimeout         AttrMask = 1 << 9
	AttrRetryCnt        AttrMask = 1 << 10
	AttrRNRRetry        AttrMask = 1 << 11
	AttrRQPSN           AttrMask = 1 << 12
	AttrMaxQPRdAtomic   AttrMask = 1 << 13
	AttrMinRNRTimer     AttrMask = 1 << 15
	AttrSQPSN           AttrMask = 1 << 16
	AttrMaxDestRdAtomic AttrMask = 1 << 17
	AttrDestQPN         AttrMask = 1 << 20
)

// QPAttr holds modifiable QP attributes (ibv_qp_attr).
type QPAttr struct {
	State       QPState
	AccessFlags Access
	PKeyIndex   uint16
	Port        uint8
	QKey        uint32
	AH          AHAttr
	PathMTU     MTU
	// Timeout is the local ACK timeout exponent: 4.096 us * 2^Timeout
	// (0 means infinite).
	Timeout         uint8
	RetryCnt        uint8 // 0..7 transport retries
	RNRRetry        uint8 // 0..6, 7 = infinite
	RQPSN           uint32
	SQPSN           uint32
	MaxRdAtomic     uint8
	MaxDestRdAtomic uint8
	// MinRNRTimer is the IB-encoded RNR NAK timer (1..31, see RNRTimer).
	MinRNRTimer uint8
	DestQPN     uint32
}

// QP is a queue pair (ibv_qp).
type QP interface {
	QPN() uint32
	Type() QPType
	State() QPState
	Modify(attr *QPAttr, mask AttrMask) error
	// PostSend posts a chain of WRs linked by Next with one doorbell. On
	// error it returns the first WR not posted.
	PostSend(wr *SendWR) (bad *SendWR, err error)
	// PostRecv posts a chain of receive WRs (dedicated RQ only).
	PostRecv(wr *RecvWR) (bad *RecvWR, err error)
	Destroy() error
}

// SRQ is a shared receive queue.
type SRQ interface {
	PostRecv(wr *RecvWR) (bad *RecvWR, err error)
	Destroy() error
}

// CQ is a completion queue. Poll fills up to len(wc) completions and returns
// how many (ibv_poll_cq); it never blocks.
type CQ interface {
	Poll(wc []WC) int
	Depth() int
	Destroy() error
}

// Opcode of a send work request (ibv_wr_opcode).
type Opcode uint8

// Send opcodes; values match libibverbs.
const (
	OpWrite    Opcode = 0
	OpWriteImm Opcode = 1
	OpSend     Opcode = 2
	OpSendImm  Opcode = 3
	OpRead     Opcode = 4
)

func (o Opcode) String() string {
	switch o {
	case OpWrite:
		return "WRITE"
	case OpWriteImm:
		return "WRITE_WITH_IMM"
	case OpSend:
		return "SEND"
	case OpSendImm:
		return "SEND_WITH_IMM"
	case OpRead:
		return "READ"
	}
	return fmt.Sprintf("Opcode(%d)", uint8(o))
}

// ConsumesRecv reports whether the opcode consumes a receive WR at the
// responder, which is what receive credits account for (§5.4.2).
func (o Opcode) ConsumesRecv() bool {
	return o == OpSend || o == OpSendImm || o == OpWriteImm
}

// SendFlags of a WR (ibv_send_flags).
type SendFlags uint8

// Send flag bits; values match libibverbs.
const (
	FlagFence     SendFlags = 1 << 0
	FlagSignaled  SendFlags = 1 << 1
	FlagSolicited SendFlags = 1 << 2
	FlagInline    SendFlags = 1 << 3
)

// SGE is a scatter/gather element (ibv_sge).
type SGE struct {
	Addr   uintptr
	Length uint32
	LKey   uint32
}

// SendWR is a send work request (ibv_send_wr). Next chains requests posted
// together with one doorbell.
type SendWR struct {
	ID     uint64
	Next   *SendWR
	SGL    []SGE
	Opcode Opcode
	Flags  SendFlags
	Imm    uint32
	// RDMA operations.
	RemoteAddr uint64
	RKey       uint32
	// UD sends.
	AH         AH
	RemoteQPN  uint32
	RemoteQKey uint32
	// MsgOffset is a hint for a simulated NIC, ignored by devices: the
	// offset of this WR's data in the application message it carries part
	// of (a fragment of a large message), so that a NIC that moves only
	// the first bytes of each message (rnic.Config.RDMAHead) knows which.
	MsgOffset uint64
}

// Len is the total length of the WR's scatter/gather list.
func (wr *SendWR) Len() int64 {
	var n int64
	for _, s := range wr.SGL {
		n += int64(s.Length)
	}
	return n
}

// RecvWR is a receive work request (ibv_recv_wr).
type RecvWR struct {
	ID   uint64
	Next *RecvWR
	SGL  []SGE
}

// WCStatus is a completion status (enum ibv_wc_status).
type WCStatus uint8

// Completion statuses; values match libibverbs.
const (
	WCSuccess        WCStatus = 0
	WCLocLenErr      WCStatus = 1
	WCLocQPOpErr     WCStatus = 2
	WCLocProtErr     WCStatus = 4
	WCWRFlushErr     WCStatus = 5
	WCRemInvReqErr   WCStatus = 9
	WCRemAccessErr   WCStatus = 10
	WCRemOpErr       WCStatus = 11
	WCRetryExcErr    WCStatus = 12
	WCRNRRetryExcErr WCStatus = 13
	WCGeneralErr     WCStatus = 21
)

var wcStatusNames = map[WCStatus]string{
	WCSuccess: "success", WCLocLenErr: "local length error",
	WCLocQPOpErr: "local QP operation error", WCLocProtErr: "local protection error",
	WCWRFlushErr: "WR flushed", WCRemInvReqErr: "remote invalid request",
	WCRemAccessErr: "remote access error", WCRemOpErr: "remote operation error",
	WCRetryExcErr:    "transport retry counter exceeded",
	WCRNRRetryExcErr: "RNR retry counter exceeded", WCGeneralErr: "general error",
}

func (s WCStatus) String() string {
	if n, ok := wcStatusNames[s]; ok {
		return n
	}
	return fmt.Sprintf("WCStatus(%d)", uint8(s))
}

// WCOpcode says what completed (enum ibv_wc_opcode).
type WCOpcode uint8

// Completion opcodes; values match libibverbs.
const (
	WCSend        WCOpcode = 0
	WCRDMAWrite   WCOpcode = 1
	WCRDMARead    WCOpcode = 2
	WCRecv        WCOpcode = 128
	WCRecvRDMAImm WCOpcode = 129
)

// WCFlags of a completion.
type WCFlags uint8

// WCWithImm marks a completion carrying immediate data.
const WCWithImm WCFlags = 1 << 1

// WC is a work completion (ibv_wc).
type WC struct {
	WRID      uint64
	Status    WCStatus
	Opcode    WCOpcode
	Flags     WCFlags
	ByteLen   uint32
	Imm       uint32
	QPN       uint32 // local QP, used to dispatch a shared CQ (§6.2.2)
	SrcQP     uint32 // UD: sender's QP
	VendorErr uint32
	// Data, when not nil, holds a receive's bytes (ByteLen of them): the
	// backend kept them instead of writing the receive WQE's buffer, whose
	// contents are then unspecified. Valid until the next Poll of the same
	// CQ. Only a simulated NIC asked to do so sets it (rnic.Config.RecvView:
	// its receive buffers are never touched); a device never does, so a
	// consumer reads Data when present and its buffer otherwise.
	Data []byte
}

// ErrNotSupported is returned by a backend for an operation it does not model.
var ErrNotSupported = errors.New("verbs: operation not supported by this backend")

// RNRTimerNS decodes the IB min_rnr_timer encoding (IBTA vol. 1, table 45)
// into nanoseconds: code 1 is 10 us, code 14 is 1.28 ms, code 0 is 655.36 ms.
func RNRTimerNS(code uint8) int64 {
	// The specification's table in units of 10 us.
	table := [32]int64{65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128,
		192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192,
		12288, 16384, 24576, 32768, 49152}
	return table[code&31] * 10_000
}

// AckTimeoutNS decodes the local ACK timeout exponent: 4.096 us x 2^t, with
// 0 meaning no timeout (returned as -1).
func AckTimeoutNS(t uint8) int64 {
	if t == 0 {
		return -1
	}
	return 4096 << (t & 31)
}
