package rnic

import (
	"fmt"
	"github.com/besim/besim/units"

	"github.com/besim/besim/dcqcn"
	"github.com/besim/besim/fabric"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/verbs"
)

// CCKind selects the per-QP congestion controller.
type CCKind string

// Congestion control choices.
const (
	CCNone  CCKind = "none"
	CCDCQCN CCKind = "dcqcn"
)

// Default values. The package documentation gives the source of each one and
// says which are assumptions.
const (
	DefaultPortMTU     = verbs.MTU(4096)
	DefaultTrafficPrio = fabric.DefaultLosslessPrio // RoCE's lossless class
	DefaultCNPPrio     = 6
	DefaultAckReqEvery = 16
	DefaultRxBuffer    = units.Size(512 * units.KiB)

	DefaultWQECost        = 130 * sim.Nanosecond
	DefaultPacketCost     = 5 * sim.Nanosecond
	DefaultUnits          = 16
	DefaultDMABandwidth   = units.Rate(212 * units.Gbps)
	DefaultDMAReadLatency = 500 * sim.Nanosecond
	DefaultDMAWriteLat    = 250 * sim.Nanosecond
	DefaultMMIOLatency    = 150 * sim.Nanosecond
	DefaultCQECost        = 20 * sim.Nanosecond
	DefaultQPCacheEntries = 1024
	DefaultMRCacheWays    = 8
	DefaultMTTPage        = units.Size(4 * units.KiB)

	DefaultPostSendCall   = 40 * sim.Nanosecond
	DefaultPostSendPerWQE = 20 * sim.Nanosecond
	DefaultDoorbellCost   = 150 * sim.Nanosecond
	DefaultPostRecvCall   = 20 * sim.Nanosecond
	DefaultPostRecvPerWQE = 10 * sim.Nanosecond
	DefaultPollCall       = 15 * sim.Nanosecond
	DefaultPollPerCQE     = 10 * sim.Nanosecond
	DefaultLockAcquire    = 10 * sim.Nanosecond
	DefaultLockTransfer   = 150 * sim.Nanosecond
	DefaultDedicatedBF    = 64
	DefaultSharedBF       = 12
	DefaultRegMRBase      = 5 * sim.Microsecond
	DefaultRegMRPerPage   = 250 * sim.Nanosecond
)

// Config is the model of one simulated RNIC and of the host-side provider
// costs charged to the CPUs that call it. Durations are sim.Time
// (picoseconds), rates units.Rate (bits/s), sizes units.Size (bytes).
// DefaultConfig documents every
// default; the package comment gives the sources.
type Config struct {
	// Port and transport.
	PortMTU     verbs.MTU // active port MTU reported by Attr (path MTUs may be smaller)
	TrafficPrio uint8     // 802.1p priority of QPs whose AH has ServiceLevel 0
	CNPPrio     uint8     // priority of CNPs
	// AckReqEvery: the requester sets the ACK-request flag on the last packet
	// of every message and on every AckReqEvery-th packet inside long
	// messages; the responder acknowledges exactly those packets (plus
	// duplicates), and ACKs that wait for the wire are coalesced.
	AckReqEvery int
	// RxBuffer is the NIC's receive packet buffer; arrivals that would queue
	// more than this many bytes' worth of line-rate time in the receive
	// pipeline are dropped (counted in Stats.RxBufferDrops).
	RxBuffer units.Size

	// NIC processing model.
	WQECost    sim.Time // processing unit time per send WQE, receive WQE consumed, or READ served
	PacketCost sim.Time // NIC-wide TX and RX pipeline occupancy per packet (packet-rate limit)
	Units      int      // processing units; a QP is bound to unit QPN mod Units
	// DMABandwidth is the effective PCIe DMA bandwidth per direction; it
	// bounds the gather of payload per packet (TX) and data placement (RX).
	DMABandwidth    units.Rate
	DMAReadLatency  sim.Time // PCIe read round trip (WQE fetch, first payload fetch)
	DMAWriteLatency sim.Time // posted write until visible in host memory
	MMIOLatency     sim.Time // doorbell write from the CPU until the NIC sees it
	CQECost         sim.Time // processing unit time to generate one CQE
	QPCacheEntries  int      // QP context cache (LRU); a miss costs a DMA read round trip
	// Memory translation caches (MPT: per MR; MTT: per page of MTTPage
	// bytes), set-associative with MRCacheWays ways and LRU in a set; a
	// miss costs a DMA read round trip. 0 entries: not modelled (the
	// default; see the package comment).
	MPTCacheEntries int
	MTTCacheEntries int
	MRCacheWays     int
	MTTPage         units.Size
	// RxBacklogLimit overrides the receive backlog bound derived from
	// RxBuffer (0: derived).
	RxBacklogLimit sim.Time

	// Host CPU costs of provider calls, charged to the calling CPU.
	PostSendCall   sim.Time // ibv_post_send fixed part
	PostSendPerWQE sim.Time // building one send WQE
	DoorbellCost   sim.Time // doorbell record + BlueFlame/MMIO write (held under the bfreg lock)
	PostRecvCall   sim.Time
	PostRecvPerWQE sim.Time
	PollCall       sim.Time
	PollPerCQE     sim.Time
	LockAcquire    sim.Time // uncontended spin-lock acquire
	LockTransfer   sim.Time // the lock's cache line moving from another core
	// DedicatedBFRegs lock-free doorbell registers (low-latency bfregs)
	// per context, each given to one QP; later QPs share SharedBFRegs
	// locked ones (mlx5 provider). A QP created with a thread domain uses
	// the TD's own register without a lock.
	DedicatedBFRegs int
	SharedBFRegs    int
	RegMRBase       sim.Time // ibv_reg_mr fixed cost
	RegMRPerPage    sim.Time // per 4 KiB page pinned and translated

	// Congestion control.
	CC          CCKind
	DCQCN       dcqcn.Config // LineRate 0: the port rate (and DefaultConfig values)
	CNPInterval sim.Time     // notification point minimum interval between CNPs per QP

	// SizesOnly moves no payload bytes: MRs are not dereferenced and
	// packets carry lengths only. For large simulations.
	SizesOnly bool
	// RDMAHead, when positive, limits what RDMA WRITE and READ move in
	// payload mode to the first RDMAHead bytes of each message: of a
	// WRITE's data, those before RDMAHead - SendWR.MsgOffset (the WR's
	// place in the message it is a fragment of); of a READ, its first
	// RDMAHead bytes. Later bytes are counted, timed and checked like any others but
	// not copied, so the target keeps what it held. SENDs always move all
	// their bytes. For simulations whose WRITEs carry application payload
	// of which only a header is ever read (ByteExpress's large messages:
	// see simhost.AppHead). 0 moves every byte.
	RDMAHead units.Size
	// RecvView, in payload mode, keeps the bytes of a received SEND in the
	// NIC and hands them to the poller with its completion (verbs.WC.Data,
	// valid until the CQ's next Poll) instead of placing them in the
	// receive WQE's buffers, which stay untouched (RC; UD datagrams are
	// still placed, GRH first). Timing, checks and
	// counters are those of placement. For simulations whose consumer
	// reads WC.Data (the ByteExpress core), so that receive rings and SRQs
	// cost no resident memory.
	RecvView bool
}

// DefaultConfig is a ConnectX-5/6-class 25-200 Gb/s RoCEv2 NIC on PCIe
// Gen4 x16 with the mlx5 provider.
func DefaultConfig() Config {
	return Config{
		PortMTU:     DefaultPortMTU,
		TrafficPrio: DefaultTrafficPrio,
		CNPPrio:     DefaultCNPPrio,
		AckReqEvery: DefaultAckReqEvery,
		RxBuffer:    DefaultRxBuffer,

		WQECost:         DefaultWQECost,
		PacketCost:      DefaultPacketCost,
		Units:           DefaultUnits,
		DMABandwidth:    DefaultDMABandwidth,
		DMAReadLatency:  DefaultDMAReadLatency,
		DMAWriteLatency: DefaultDMAWriteLat,
		MMIOLatency:     DefaultMMIOLatency,
		CQECost:         DefaultCQECost,
		QPCacheEntries:  DefaultQPCacheEntries,
		MRCacheWays:     DefaultMRCacheWays,
		MTTPage:         DefaultMTTPage,

		PostSendCall:    DefaultPostSendCall,
		PostSendPerWQE:  DefaultPostSendPerWQE,
		DoorbellCost:    DefaultDoorbellCost,
		PostRecvCall:    DefaultPostRecvCall,
		PostRecvPerWQE:  DefaultPostRecvPerWQE,
		PollCall:        DefaultPollCall,
		PollPerCQE:      DefaultPollPerCQE,
		LockAcquire:     DefaultLockAcquire,
		LockTransfer:    DefaultLockTransfer,
		DedicatedBFRegs: DefaultDedicatedBF,
		SharedBFRegs:    DefaultSharedBF,
		RegMRBase:       DefaultRegMRBase,
		RegMRPerPage:    DefaultRegMRPerPage,

		CC:          CCNone,
		CNPInterval: dcqcn.DefaultCNPInterval,
	}
}

// Validate reports the first invalid field, naming it.
func (c *Config) Validate() error {
	neg := func(name string, v sim.Time) error {
		if v < 0 {
			return fmt.Errorf("rnic: Config.%s = %v: must be >= 0", name, v)
		}
		return nil
	}
	switch {
	case !c.PortMTU.Valid():
		return fmt.Errorf("rnic: Config.PortMTU = %d: must be 256, 512, 1024, 2048 or 4096", c.PortMTU)
	case c.TrafficPrio > 7:
		return fmt.Errorf("rnic: Config.TrafficPrio = %d: must be 0..7", c.TrafficPrio)
	case c.CNPPrio > 7:
		return fmt.Errorf("rnic: Config.CNPPrio = %d: must be 0..7", c.CNPPrio)
	case c.AckReqEvery < 1:
		return fmt.Errorf("rnic: Config.AckReqEvery = %d: must be >= 1", c.AckReqEvery)
	case c.RxBuffer < 4096:
		return fmt.Errorf("rnic: Config.RxBuffer = %d: must be >= 4096 bytes", c.RxBuffer)
	case c.Units < 1:
		return fmt.Errorf("rnic: Config.Units = %d: must be >= 1", c.Units)
	case c.DMABandwidth <= 0:
		return fmt.Errorf("rnic: Config.DMABandwidth = %d: must be > 0 bits/s", c.DMABandwidth)
	case c.QPCacheEntries < 1:
		return fmt.Errorf("rnic: Config.QPCacheEntries = %d: must be >= 1", c.QPCacheEntries)
	case c.MPTCacheEntries < 0 || c.MTTCacheEntries < 0:
		return fmt.Errorf("rnic: Config.MPTCacheEntries = %d, MTTCacheEntries = %d: must be >= 0 (0: not modelled)", c.MPTCacheEntries, c.MTTCacheEntries)
	case (c.MPTCacheEntries > 0 || c.MTTCacheEntries > 0) && c.MRCacheWays < 1:
		return fmt.Errorf("rnic: Config.MRCacheWays = %d: must be >= 1 with a translation cache", c.MRCacheWays)
	case c.MTTCacheEntries > 0 && (c.MTTPage < 4096 || c.MTTPage&(c.MTTPage-1) != 0):
		return fmt.Errorf("rnic: Config.MTTPage = %d: must be a power of two >= 4096", c.MTTPage)
	case c.DedicatedBFRegs < 0 || c.SharedBFRegs < 1:
		return fmt.Errorf("rnic: Config.DedicatedBFRegs = %d, SharedBFRegs = %d: need >= 0 and >= 1", c.DedicatedBFRegs, c.SharedBFRegs)
	case c.CC != CCNone && c.CC != CCDCQCN:
		return fmt.Errorf("rnic: Config.CC = %q: must be %q or %q", c.CC, CCNone, CCDCQCN)
	}
	for _, f := range []struct {
		n string
		v sim.Time
	}{
		{"WQECost", c.WQECost}, {"PacketCost", c.PacketCost}, {"DMAReadLatency", c.DMAReadLatency},
		{"DMAWriteLatency", c.DMAWriteLatency}, {"MMIOLatency", c.MMIOLatency}, {"CQECost", c.CQECost},
		{"RxBacklogLimit", c.RxBacklogLimit},
		{"PostSendCall", c.PostSendCall}, {"PostSendPerWQE", c.PostSendPerWQE}, {"DoorbellCost", c.DoorbellCost},
		{"PostRecvCall", c.PostRecvCall}, {"PostRecvPerWQE", c.PostRecvPerWQE}, {"PollCall", c.PollCall},
		{"PollPerCQE", c.PollPerCQE}, {"LockAcquire", c.LockAcquire}, {"LockTransfer", c.LockTransfer},
		{"RegMRBase", c.RegMRBase}, {"RegMRPerPage", c.RegMRPerPage}, {"CNPInterval", c.CNPInterval},
	} {
		if err := neg(f.n, f.v); err != nil {
			return err
		}
	}
	return nil
}
