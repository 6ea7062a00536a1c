package tcpsim

import (
	"errors"
	"fmt"

	"github.com/besim/besim/fabric"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
)

// CC is a congestion-control algorithm.
type CC string

// Congestion controls.
const (
	DCTCP   CC = "dctcp"   // ECN-based, RFC 8257
	NewReno CC = "newreno" // loss-based, RFC 6582 (no ECN)
)

// Frame overheads of a TCP/IPv4 segment with the timestamp option:
// Ethernet 14 + IPv4 20 + TCP 20 + timestamps 12 + FCS 4.
const (
	SegmentOverhead = fabric.EthHeader + fabric.IPv4Header + 20 + 12 + fabric.FCS // 70
	AckFrame        = SegmentOverhead                                             // a pure ACK carries no payload
)

// Defaults, each with its source.
const (
	// DefaultMSS: a 1500-byte Ethernet MTU less IPv4, TCP and timestamp
	// headers (1500 - 52). The hosts' TCP uses the Ethernet MTU, not the
	// RoCE path MTU of fabric.Config.MTU.
	DefaultMSS = units.Size(1448 * units.Byte)
	// DefaultPrio: TCP on the default, lossy class (the RoCE guides put
	// RDMA alone on the PFC-enabled priority 3).
	DefaultPrio = 0
	// DefaultInitCwnd: RFC 6928, Linux's TCP_INIT_CWND.
	DefaultInitCwnd = 10
	// DefaultMinRTO: Linux TCP_RTO_MIN (HZ/5). Data centers sometimes lower
	// it per route (ip route ... rto_min); the paper does not say.
	DefaultMinRTO = 200 * sim.Millisecond
	// DefaultMaxRTO: Linux TCP_RTO_MAX.
	DefaultMaxRTO = 120 * sim.Second
	// DefaultDelAck: Linux TCP_DELACK_MIN (HZ/25).
	DefaultDelAck = 40 * sim.Millisecond
	// DefaultAckEvery: RFC 1122 / Linux: ACK at least every second full
	// segment.
	DefaultAckEvery = 2
	// DefaultG: DCTCP's alpha gain (RFC 8257, Linux dctcp_shift_g = 4).
	DefaultG = 1.0 / 16
	// DefaultThreads: application cores doing socket I/O, one like
	// ByteExpress's default of one I/O thread, so both transports get the
	// same cores. Connections are spread over them, and receive
	// processing over as many softirq cores (RSS queues).
	DefaultThreads = 1
	// DefaultRxUsecs and DefaultRxFrames: receive interrupt moderation, the
	// values `ethtool -c` shows on a ConnectX port in the Mellanox OFED
	// user manual (rx-usecs 16, rx-frames 88): a receive interrupt, hence
	// softirq processing, comes when 88 frames are pending or 16 us after
	// the first. The driver's adaptive moderation moves them with the
	// packet rate; the model keeps them static. The RDMA path has no such
	// delay: ByteExpress's I/O threads poll their CQs.
	DefaultRxUsecs  = 16 * sim.Microsecond
	DefaultRxFrames = 88
)

// CPUCost is the modelled host CPU time of the kernel TCP path, by class.
// All times are sim.Time; CopyBandwidth is a units.Rate.
type CPUCost struct {
	// System time (process context).
	SendCall      sim.Time   // per send() of one message: syscall, tcp_sendmsg, skb set-up
	RecvCall      sim.Time   // per message received: epoll wake-up, recvmsg, socket lock
	TxSegment     sim.Time   // per data segment transmitted: TCP/IP output and driver (TSO amortized)
	CopyBandwidth units.Rate // copy_from_user / copy_to_user; 0: free
	// Softirq time (NET_RX, on the receive queue's core).
	RxSegment sim.Time // per data frame received: driver, GRO, IP and TCP receive
	RxAck     sim.Time // per ACK received: tcp_ack, retransmit-queue cleaning
	TxAck     sim.Time // per ACK sent from softirq
	Timer     sim.Time // per retransmission or delayed-ACK timer fired
	// User time (the application's own socket handling).
	User sim.Time // per message sent or received: event loop, length-prefix framing
}

// Default CPU costs. They are assumptions of the right order, not
// measurements; the paper gives only the totals of Table 5. Sources for the
// order: Cai et al., "Understanding Host Network Stack Overheads" (SIGCOMM
// 2021) find data copy the largest per-byte cost and per-skb processing the
// rest, with one core sustaining about 40 Gb/s of bulk receive with
// GRO/TSO; a system call round trip plus tcp_sendmsg/recvmsg fixed work is
// about a microsecond (Soares and Stumm, FlexSC, OSDI 2010, measure the
// direct and indirect cost of a syscall at hundreds of ns to microseconds).
// Per-frame costs are GRO/TSO-amortized shares of a per-skb cost of a few
// microseconds over ~20 frames.
const (
	DefaultSendCall      = 1500 * sim.Nanosecond
	DefaultRecvCall      = 2000 * sim.Nanosecond
	DefaultTxSegment     = 150 * sim.Nanosecond
	DefaultCopyBandwidth = units.Rate(8 * 8 * units.GB) // 8 GB/s
	DefaultRxSegment     = 250 * sim.Nanosecond
	DefaultRxAck         = 200 * sim.Nanosecond
	DefaultTxAck         = 150 * sim.Nanosecond
	DefaultTimer         = 300 * sim.Nanosecond
	DefaultUser          = 100 * sim.Nanosecond
)

// DefaultCPUCost returns the default costs above.
func DefaultCPUCost() CPUCost {
	return CPUCost{SendCall: DefaultSendCall, RecvCall: DefaultRecvCall, TxSegment: DefaultTxSegment,
		CopyBandwidth: DefaultCopyBandwidth, RxSegment: DefaultRxSegment, RxAck: DefaultRxAck,
		TxAck: DefaultTxAck, Timer: DefaultTimer, User: DefaultUser}
}

func (c *CPUCost) copyTime(n int) sim.Time {
	if c.CopyBandwidth <= 0 || n <= 0 {
		return 0
	}
	return sim.TxTime(int64(n), c.CopyBandwidth)
}

// Config is every host's TCP stack. Zero fields take the defaults above.
type Config struct {
	CC       CC
	MSS      units.Size // segment payload
	Prio     uint8
	InitCwnd int // segments
	MinRTO   sim.Time
	MaxRTO   sim.Time
	DelAck   sim.Time
	AckEvery int
	G        float64 // DCTCP gain
	Threads  int
	// RxUsecs and RxFrames are the receive interrupt moderation; NoRxModeration
	// turns it off (every frame is processed on arrival, as rx-usecs 0).
	RxUsecs        sim.Time
	RxFrames       int
	NoRxModeration bool
	CPU            CPUCost
	// NoCPU charges nothing (a zero CPU is otherwise replaced by defaults).
	NoCPU bool
}

// DefaultConfig is DCTCP at the defaults.
func DefaultConfig() Config {
	c := Config{}
	c.defaults()
	return c
}

func (c *Config) defaults() {
	if c.CC == "" {
		c.CC = DCTCP
	}
	if c.MSS == 0 {
		c.MSS = DefaultMSS
	}
	if c.InitCwnd == 0 {
		c.InitCwnd = DefaultInitCwnd
	}
	if c.MinRTO == 0 {
		c.MinRTO = DefaultMinRTO
	}
	if c.MaxRTO == 0 {
		c.MaxRTO = DefaultMaxRTO
	}
	if c.DelAck == 0 {
		c.DelAck = DefaultDelAck
	}
	if c.AckEvery == 0 {
		c.AckEvery = DefaultAckEvery
	}
	if c.G == 0 {
		c.G = DefaultG
	}
	if c.Threads == 0 {
		c.Threads = DefaultThreads
	}
	if c.NoRxModeration {
		c.RxUsecs, c.RxFrames = 0, 1
	} else {
		if c.RxUsecs == 0 {
			c.RxUsecs = DefaultRxUsecs
		}
		if c.RxFrames == 0 {
			c.RxFrames = DefaultRxFrames
		}
	}
	if c.NoCPU {
		c.CPU = CPUCost{}
	} else if c.CPU == (CPUCost{}) {
		c.CPU = DefaultCPUCost()
	}
}

// Validate reports what is wrong with c (after defaults).
func (c *Config) Validate() error {
	var errs []error
	bad := func(f string, a ...any) { errs = append(errs, fmt.Errorf("tcpsim: "+f, a...)) }
	if c.CC != DCTCP && c.CC != NewReno {
		bad("CC %q: allowed dctcp, newreno", c.CC)
	}
	if c.MSS < 64 || c.MSS > 9000-52 {
		bad("MSS %d: must be in [64, 8948]", c.MSS)
	}
	if c.Prio >= fabric.NumPrio {
		bad("Prio %d: must be in [0, 7]", c.Prio)
	}
	if c.InitCwnd < 1 || c.AckEvery < 1 || c.Threads < 1 || c.Threads > 1024 {
		bad("InitCwnd, AckEvery must be >= 1 and Threads in [1, 1024]")
	}
	if c.MinRTO <= 0 || c.MaxRTO < c.MinRTO || c.DelAck <= 0 {
		bad("MinRTO %v, MaxRTO %v, DelAck %v: need 0 < MinRTO <= MaxRTO and DelAck > 0", c.MinRTO, c.MaxRTO, c.DelAck)
	}
	if c.RxUsecs < 0 || c.RxFrames < 1 {
		bad("RxUsecs %v, RxFrames %d: need >= 0 and >= 1", c.RxUsecs, c.RxFrames)
	}
	if c.G <= 0 || c.G > 1 {
		bad("G %v: must be in (0, 1]", c.G)
	}
	p := &c.CPU
	if p.SendCall < 0 || p.RecvCall < 0 || p.TxSegment < 0 || p.CopyBandwidth < 0 || p.RxSegment < 0 ||
		p.RxAck < 0 || p.TxAck < 0 || p.Timer < 0 || p.User < 0 {
		bad("CPU costs must be >= 0")
	}
	return errors.Join(errs...)
}
