package scenarios

import (
	"gopkg.in/yaml.v3"
)

// This file holds the schema of the simulated RNIC (hosts.nic: rnic), its
// congestion control (dcqcn), the verbs transports of flows, and the
// benchmark section. The runners (package experiment and the benchmark
// packages under workloads/) map them onto rnic.Config, dcqcn.Config and
// the perftest, msgrate, fragsize and hol configurations. This package does
// not import the models: the rnic and dcqcn knobs' defaults are theirs,
// overlaid through ModelDefaults (knobs.go), not repeated here.

// NICModel is the endpoint model attached to every host.
type NICModel string

// NIC models.
const (
	// RawNIC is the fabric's raw paced sender and sink: flows are constant
	// rate streams of frames without a transport (transport: raw).
	RawNIC NICModel = "raw"
	// RNICModel is the simulated RDMA NIC (package rnic) on every host:
	// flows are RC or UD queue pairs driven by a small verbs application.
	RNICModel NICModel = "rnic"
)

var nicModels = []string{string(RawNIC), string(RNICModel)}

// UnmarshalYAML accepts one of raw, rnic.
func (m *NICModel) UnmarshalYAML(n *yaml.Node) error {
	return parseEnum(n, (*string)(m), "NIC model", nicModels)
}

// Transport is how a flow moves its bytes.
type Transport string

// Transports.
const (
	RawTransport Transport = "raw" // paced frames from a raw host (hosts.nic: raw)
	RC           Transport = "rc"  // one reliable-connected QP pair (hosts.nic: rnic)
	UD           Transport = "ud"  // one unreliable-datagram QP per end (hosts.nic: rnic)
)

var transports = []string{string(RawTransport), string(RC), string(UD)}

// UnmarshalYAML accepts one of raw, rc, ud.
func (t *Transport) UnmarshalYAML(n *yaml.Node) error {
	return parseEnum(n, (*string)(t), "transport", transports)
}

// Op is the verb an RC flow streams with.
type Op string

// RC operations.
const (
	OpWrite Op = "write" // RDMA WRITE: no receive consumed at the destination
	OpSend  Op = "send"  // SEND: the destination keeps receives posted
)

var ops = []string{string(OpWrite), string(OpSend)}

// UnmarshalYAML accepts one of write, send.
func (o *Op) UnmarshalYAML(n *yaml.Node) error {
	return parseEnum(n, (*string)(o), "supported operation", ops)
}

// CCKind is the RNIC's per-QP congestion control.
type CCKind string

// Congestion control choices.
const (
	CCNone  CCKind = "none"  // every QP sends at line rate; PFC is the only brake
	CCDCQCN CCKind = "dcqcn" // DCQCN reaction and notification points (section dcqcn)
)

var ccKinds = []string{string(CCNone), string(CCDCQCN)}

// UnmarshalYAML accepts one of none, dcqcn.
func (c *CCKind) UnmarshalYAML(n *yaml.Node) error {
	return parseEnum(n, (*string)(c), "congestion control", ccKinds)
}

// DCQCNProfile is a set of DCQCN defaults (dcqcn.profile).
type DCQCNProfile string

// DCQCN profiles.
const (
	// ProfilePaper: the DCQCN paper's values where it fixes them
	// (dcqcn.DefaultConfig), its per-CNP alpha update.
	ProfilePaper DCQCNProfile = "dcqcn-paper"
	// ProfileConnectX: the ConnectX firmware defaults (dcqcn.ConnectXConfig,
	// sources there): the periodic alpha estimator, decrease period,
	// byte and time reset, target clamping.
	ProfileConnectX DCQCNProfile = "connectx"
)

var dcqcnProfiles = []string{string(ProfilePaper), string(ProfileConnectX)}

// UnmarshalYAML accepts one of dcqcn-paper, connectx.
func (p *DCQCNProfile) UnmarshalYAML(n *yaml.Node) error {
	return parseEnum(n, (*string)(p), "DCQCN profile", dcqcnProfiles)
}

// AlphaUpdate is dcqcn.alpha_update: how alpha follows the CNPs.
type AlphaUpdate string

// Alpha estimators.
const (
	AlphaOnCNP     AlphaUpdate = "on-cnp"     // the paper: alpha rises on each decrease, decays per quiet alpha_timer
	AlphaPerPeriod AlphaUpdate = "per-period" // ConnectX: once per alpha_timer, up if a CNP arrived in it, else down
)

var alphaUpdates = []string{string(AlphaOnCNP), string(AlphaPerPeriod)}

// UnmarshalYAML accepts one of on-cnp, per-period.
func (a *AlphaUpdate) UnmarshalYAML(n *yaml.Node) error {
	return parseEnum(n, (*string)(a), "alpha update", alphaUpdates)
}

// TargetClamp is dcqcn.target_clamp: when a decrease resets the target
// rate to the current rate.
type TargetClamp string

// Target clamping choices.
const (
	ClampAlways     TargetClamp = "always"      // the paper (ConnectX clamp_tgt_rate 1)
	ClampAfterTimer TargetClamp = "after-timer" // only after a timer increase (ConnectX default)
	ClampNever      TargetClamp = "never"
)

var targetClamps = []string{string(ClampAlways), string(ClampAfterTimer), string(ClampNever)}

// UnmarshalYAML accepts one of always, after-timer, never.
func (c *TargetClamp) UnmarshalYAML(n *yaml.Node) error {
	return parseEnum(n, (*string)(c), "target clamp", targetClamps)
}

// PayloadMode says whether the simulated NIC moves payload bytes.
type PayloadMode string

// Payload modes.
const (
	SizesOnly    PayloadMode = "sizes-only" // packets carry lengths only (fast; the default)
	PayloadBytes PayloadMode = "bytes"      // bytes really move between registered buffers
)

var payloadModes = []string{string(SizesOnly), string(PayloadBytes)}

// UnmarshalYAML accepts one of sizes-only, bytes.
func (p *PayloadMode) UnmarshalYAML(n *yaml.Node) error {
	return parseEnum(n, (*string)(p), "payload mode", payloadModes)
}

// SeriesMode is outputs.series: which time series a run records.
type SeriesMode string

// Series modes; the empty value is SeriesAuto.
const (
	SeriesAuto SeriesMode = "auto" // the deepest queues and the first flows (the default)
	SeriesAll  SeriesMode = "all"  // every switch queue that held a frame
	SeriesNone SeriesMode = "none" // nothing sampled
)

var seriesModes = []string{string(SeriesAuto), string(SeriesAll), string(SeriesNone)}

// UnmarshalYAML accepts one of auto, all, none.
func (m *SeriesMode) UnmarshalYAML(n *yaml.Node) error {
	return parseEnum(n, (*string)(m), "series mode", seriesModes)
}

// RNIC is the model of the simulated RDMA NIC on every host, and of the
// host-side provider costs its I/O threads pay (rnic.Config). Every key is
// optional; the defaults are rnic.DefaultConfig's, a ConnectX-5/6-class
// NIC on PCIe Gen4 x16 with the mlx5 provider (rnic's package doc gives the
// source of each). Pointer fields are those whose zero is meaningful
// ("free", "none"); they are nil only before defaults are applied.
type RNIC struct {
	CC      CCKind      `yaml:"cc"`      // none | dcqcn
	Payload PayloadMode `yaml:"payload"` // sizes-only | bytes

	// NIC processing model.
	WQECost        *Duration `yaml:"wqe_cost,omitempty"`         // processing-unit time per send WQE, receive WQE consumed or READ served
	PacketCost     *Duration `yaml:"packet_cost,omitempty"`      // NIC-wide TX and RX pipeline time per packet (the packet-rate limit)
	Units          int       `yaml:"units,omitempty"`            // processing units; QP n runs on unit n mod units
	CQECost        *Duration `yaml:"cqe_cost,omitempty"`         // processing-unit time per CQE written
	QPCacheEntries int       `yaml:"qp_cache_entries,omitempty"` // QP context cache entries (LRU); a miss costs one pcie.read_latency
	RxBuffer       Size      `yaml:"rx_buffer,omitempty"`        // receive packet buffer; arrivals beyond it drop
	AckReqEvery    int       `yaml:"ack_req_every,omitempty"`    // ACK requested every N packets of long messages (and on each last one)
	CNPPrio        *int      `yaml:"cnp_prio,omitempty"`         // 802.1p priority of CNPs

	PCIe      PCIe      `yaml:"pcie,omitempty"`      // the host interface of the NIC
	Doorbells Doorbells `yaml:"doorbells,omitempty"` // the doorbell registers per verbs context
	CPU       RNICCPU   `yaml:"cpu,omitempty"`       // CPU costs of provider calls, charged to the calling I/O thread
	QP        QPAttrs   `yaml:"qp,omitempty"`        // rc/ud flows only (benchmarks set their own)
	// MRCache turns on the NIC's memory translation caches (rnic
	// Config.MPTCacheEntries and MTTCacheEntries); absent, they are not
	// modelled (the default: their sizes are unpublished).
	MRCache *MRCache `yaml:"mr_cache,omitempty"`
}

// MRCache is the NIC's memory translation caches: MPT (one entry per
// memory region) and MTT (one per translated page), set-associative with
// Ways ways and LRU in a set; a miss costs a PCIe read round trip
// (pcie.read_latency). 0 entries leaves that cache out. No key has a
// default filled in: ways 0 means 8, page 0 means 4KiB.
type MRCache struct {
	MPTEntries int  `yaml:"mpt_entries,omitempty"` // MPT cache entries, one per memory region (0: not modelled)
	MTTEntries int  `yaml:"mtt_entries,omitempty"` // MTT cache entries, one per translated page (0: not modelled)
	Ways       int  `yaml:"ways,omitempty"`        // associativity of both caches (0: 8)
	Page       Size `yaml:"page,omitempty"`        // translation page size, a power of two 4KiB..1GiB (0: 4KiB)
}

// PCIe is the host interface of the NIC.
type PCIe struct {
	Bandwidth Rate `yaml:"bandwidth,omitempty"` // effective DMA bandwidth per direction
	// ReadLatency is a DMA read round trip: WQE and first payload fetch of
	// an idle QP, and the penalty of a QP context cache miss.
	ReadLatency  *Duration `yaml:"read_latency,omitempty"`
	WriteLatency *Duration `yaml:"write_latency,omitempty"` // posted write until visible in host memory
	MMIOLatency  *Duration `yaml:"mmio_latency,omitempty"`  // doorbell write from the CPU until the NIC sees it
}

// Doorbells are the provider's doorbell registers per verbs context (mlx5
// bfregs): the first LockFree QPs each get a dedicated register rung
// without a lock; later QPs share Shared registers under a spin lock,
// across threads, unless they were created in a thread domain.
type Doorbells struct {
	LockFree *int `yaml:"lock_free,omitempty"` // dedicated doorbell registers: the first N QPs get one each, rung without a lock
	Shared   int  `yaml:"shared,omitempty"`    // shared doorbell registers the later QPs share under a spin lock
}

// RNICCPU are the CPU costs of provider calls, charged to the I/O thread
// that makes them.
type RNICCPU struct {
	PostSend       *Duration `yaml:"post_send,omitempty"`         // ibv_post_send fixed part
	PostSendPerWQE *Duration `yaml:"post_send_per_wqe,omitempty"` // building one send WQE
	Doorbell       *Duration `yaml:"doorbell,omitempty"`          // doorbell record + BlueFlame write (under the bfreg lock)
	PostRecv       *Duration `yaml:"post_recv,omitempty"`         // ibv_post_recv fixed part
	PostRecvPerWQE *Duration `yaml:"post_recv_per_wqe,omitempty"` // one receive WQE
	Poll           *Duration `yaml:"poll,omitempty"`              // ibv_poll_cq fixed part
	PollPerCQE     *Duration `yaml:"poll_per_cqe,omitempty"`      // reading one CQE
	LockAcquire    *Duration `yaml:"lock_acquire,omitempty"`      // uncontended spin-lock acquire
	LockTransfer   *Duration `yaml:"lock_transfer,omitempty"`     // the lock's cache line moving from another core
	RegMR          *Duration `yaml:"reg_mr,omitempty"`            // ibv_reg_mr fixed cost
	RegMRPerPage   *Duration `yaml:"reg_mr_per_page,omitempty"`   // ibv_reg_mr cost per 4 KiB page
}

// QPAttrs are the RC QP attributes the runner's application sets (ibverbs
// ibv_modify_qp values).
type QPAttrs struct {
	Timeout     *int `yaml:"timeout"`       // local ACK timeout 4.096 us x 2^timeout; 0 = none
	RetryCnt    *int `yaml:"retry_cnt"`     // retransmission retries before the QP errors
	RNRRetry    *int `yaml:"rnr_retry"`     // RNR retries; 7 = forever
	MinRNRTimer *int `yaml:"min_rnr_timer"` // responder's RNR NAK timer code
}

// DCQCN is the reaction-point parameters (dcqcn.Config, Zhu et al.
// SIGCOMM 2015) of every QP and the notification point's CNP interval.
// Used only with rnic.cc: dcqcn; every key is optional. Profile picks the
// defaults of the others (the paper's or ConnectX firmware's); a key set
// explicitly overrides its profile value.
type DCQCN struct {
	// Profile: the set of defaults for the keys left unset, dcqcn-paper
	// (the DCQCN paper's parameters; default) or connectx (ConnectX firmware
	// defaults, sources in package dcqcn).
	Profile      DCQCNProfile `yaml:"profile,omitempty"`
	G            Ratio        `yaml:"g,omitempty"`             // alpha gain g
	InitialAlpha Ratio        `yaml:"initial_alpha,omitempty"` // alpha before the first CNP
	AlphaTimer   Duration     `yaml:"alpha_timer,omitempty"`   // K: alpha decays after each K without a CNP
	RateTimer    Duration     `yaml:"rate_timer,omitempty"`    // T: rate-increase timer
	ByteCounter  Size         `yaml:"byte_counter,omitempty"`  // B: rate increase every B bytes sent
	FastRecovery *int         `yaml:"fast_recovery,omitempty"` // F: fast-recovery stages before additive increase
	AIRate       Rate         `yaml:"ai_rate,omitempty"`       // R_AI: additive-increase step
	HAIRate      Rate         `yaml:"hai_rate,omitempty"`      // R_HAI: hyper-increase step
	MinRate      Rate         `yaml:"min_rate,omitempty"`      // floor of the current rate
	CNPInterval  *Duration    `yaml:"cnp_interval,omitempty"`  // N: at most one CNP per QP per interval (0: every marked packet)
	// DecreasePeriod: at most one rate decrease per period (0: every CNP,
	// the paper; ConnectX: rate_reduce_monitor_period 4us).
	DecreasePeriod *Duration `yaml:"decrease_period,omitempty"`
	// AlphaUpdate: how alpha follows the CNPs: on-cnp (the paper) or
	// per-period (ConnectX dce_tcp_rtt).
	AlphaUpdate AlphaUpdate `yaml:"alpha_update,omitempty"`
	// TargetClamp: when a rate cut resets the target rate: always (the paper) or after-timer/never (ConnectX
	// clamp_tgt_rate, clamp_tgt_rate_after_time_inc).
	TargetClamp TargetClamp `yaml:"target_clamp,omitempty"`
}

// BenchmarkKind selects a benchmark.
type BenchmarkKind string

// Benchmarks.
const (
	// Perftest is ib_send_bw between two NICs back to back (paper §5.1,
	// Table 2): one QP, SENDs with tx_depth outstanding, per point.
	Perftest BenchmarkKind = "perftest"
	// MsgRate is the QP-count message-rate benchmark (paper §6.2.1,
	// Figure 11): I/O threads posting small WRITEs on many QPs.
	MsgRate BenchmarkKind = "msgrate"
	// Fragsize is the fragment-size experiment (paper §6.1, Figure 10):
	// one engine between two hosts on one switch sends large messages while
	// the fragment size varies.
	Fragsize BenchmarkKind = "fragsize"
	// HOL is the head-of-line experiment (paper §6.1, Figure 13): a small
	// flow's latency on an engine shared with large flows, with and without
	// fragmentation.
	HOL BenchmarkKind = "hol"
	// PingPong is ByteExpress latency with one message outstanding (paper
	// §5.5, Figure 8): one socket between two hosts on one switch, a
	// message of each size answered with a response, the next sent when
	// the answer arrives.
	PingPong BenchmarkKind = "pingpong"
	// Peak is ByteExpress peak throughput beside RC and UD perftest at
	// each link-rate/MTU point (paper §5.5, Figure 9): one engine sending
	// large messages, each answered with 32 bytes, and ib_send_bw.
	Peak BenchmarkKind = "peak"
	// MRCacheBench is the memory-registration benchmark (paper §5.2): the
	// same WRITE traffic from buffers registered in blocks, one region per
	// buffer, or per message, against the NIC's translation caches.
	MRCacheBench BenchmarkKind = "mrcache"
)

var benchmarkKinds = []string{string(Perftest), string(MsgRate), string(Fragsize), string(HOL), string(PingPong), string(Peak), string(MRCacheBench)}

// RegistrationKinds are the values of benchmark.registrations (mrcache).
var RegistrationKinds = []string{"block", "buffer", "message"}

// MsgRateThrough is what the msgrate benchmark posts through.
type MsgRateThrough string

// Msgrate paths.
const (
	// ThroughNIC: the I/O threads post RDMA WRITEs on the verbs directly
	// (the NIC microbenchmark; the default).
	ThroughNIC MsgRateThrough = "nic"
	// ThroughCore: the I/O threads are the ByteExpress core's, one engine
	// (QP) per socket, each message answered with 32 bytes.
	ThroughCore MsgRateThrough = "core"
)

var msgRateThroughs = []string{string(ThroughNIC), string(ThroughCore)}

// UnmarshalYAML accepts one of nic, core.
func (t *MsgRateThrough) UnmarshalYAML(n *yaml.Node) error {
	return parseEnum(n, (*string)(t), "msgrate path", msgRateThroughs)
}

// UnmarshalYAML accepts one of perftest, msgrate, fragsize, hol, pingpong, peak, mrcache.
func (k *BenchmarkKind) UnmarshalYAML(n *yaml.Node) error {
	return parseEnum(n, (*string)(k), "benchmark kind", benchmarkKinds)
}

// Benchmark is a measurement run instead of a fabric with flows: two
// simulated NICs (the rnic section's model) back to back on one wire. Only
// the keys of its Kind may be set, as with topologies.
type Benchmark struct {
	Kind   BenchmarkKind `yaml:"kind"`   // the benchmark: perftest, msgrate, fragsize or hol
	Warmup Duration      `yaml:"warmup"` // before each point's measured interval (the top-level duration)
	// Message is the message size: perftest default 64KiB for rc and the
	// point's MTU for ud; msgrate default 512B.
	Message Size `yaml:"message,omitempty"`

	// perftest. Either Points, or the cross product of Rates and MTUs; each
	// (rate, MTU) is run with every transport in Transports unless the
	// point names its own.
	Points     []PerfPoint `yaml:"points,omitempty"`
	Rates      []Rate      `yaml:"rates,omitempty"`      // perftest (with mtus): link rates of the points
	MTUs       []Size      `yaml:"mtus,omitempty"`       // perftest (with rates): RoCE MTUs of the points
	Transports []Transport `yaml:"transports,omitempty"` // perftest: transports each point runs with (default rc and ud)
	TxDepth    int         `yaml:"tx_depth,omitempty"`   // sends outstanding (perftest -t)
	RxDepth    int         `yaml:"rx_depth,omitempty"`   // receives posted (perftest -r)
	CQMod      int         `yaml:"cq_mod,omitempty"`     // one signalled send in cq_mod (perftest --cq-mod)
	Delay      Duration    `yaml:"delay,omitempty"`      // one-way cable delay

	// msgrate.
	Through       MsgRateThrough `yaml:"through,omitempty"`        // what the messages are posted through: nic (verbs directly; unset means nic) or core (the ByteExpress core)
	Threads       int            `yaml:"threads,omitempty"`        // I/O threads posting WRITEs
	QPs           []int          `yaml:"qps,omitempty"`            // one run per QP count
	ThreadDomains []bool         `yaml:"thread_domains,omitempty"` // one series per value
	Rate          Rate           `yaml:"rate,omitempty"`           // link rate
	Depth         int            `yaml:"depth,omitempty"`          // WRITEs outstanding per QP
	SignalEvery   int            `yaml:"signal_every,omitempty"`   // one signalled WRITE in this many
	AppWork       Duration       `yaml:"app_work,omitempty"`       // mean per-message CPU work outside verbs
	Jitter        Fraction       `yaml:"jitter,omitempty"`         // app_work spread, uniform +-jitter

	// fragsize (rates, message, depth and delay above also apply).
	Fragments []Size `yaml:"fragments,omitempty"` // one point per fragment size and rate

	// hol (rate, message: the small flow's, depth: the large flows'
	// window, and delay above also apply).
	LargeFlows   []int    `yaml:"large_flows,omitempty"`   // one point pair per count
	Interval     Duration `yaml:"interval,omitempty"`      // small-flow period
	LargeMessage Size     `yaml:"large_message,omitempty"` // large-flow message size
	Fragment     Size     `yaml:"fragment,omitempty"`      // fragment size of the fragmented setting

	// mrcache (message, rate and depth above also apply).
	Registrations []string `yaml:"registrations,omitempty"` // one point per value: block, buffer, message
	Buffers       int      `yaml:"buffers,omitempty"`       // message buffers cycled
	Block         Size     `yaml:"block,omitempty"`         // block region size (registration block)
	// pingpong (points or rates and mtus, and delay above also apply).
	Messages []Size `yaml:"messages,omitempty"` // one point per message size
	Response Size   `yaml:"response,omitempty"` // the answer to every message

	// peak: points or rates and mtus, transports, tx_depth, rx_depth and
	// cq_mod are the perftest baselines' (their message the perftest
	// default); message, depth and fragment are ByteExpress's; delay both.
}

// PerfPoint is one perftest configuration. Transport "" means every one of
// Benchmark.Transports.
type PerfPoint struct {
	Rate      Rate      `yaml:"rate"`                // the link rate
	MTU       Size      `yaml:"mtu"`                 // the RoCE MTU
	Transport Transport `yaml:"transport,omitempty"` // rc or ud (default: every one of benchmark.transports)
}

// PerfRun is one perftest measurement of an expanded benchmark.
type PerfRun struct {
	Rate      Rate
	MTU       Size
	Transport Transport // RC or UD
	Message   Size      // resolved: the default for the transport when unset
}

// PerfRuns lists the perftest measurements in order: for each point (or
// each rate, then each MTU of the cross product), each transport. Call it
// on a valid perftest scenario.
func (b *Benchmark) PerfRuns() []PerfRun {
	var pts []PerfPoint
	if len(b.Points) > 0 {
		pts = b.Points
	} else {
		for _, r := range b.Rates {
			for _, m := range b.MTUs {
				pts = append(pts, PerfPoint{Rate: r, MTU: m})
			}
		}
	}
	var out []PerfRun
	for _, p := range pts {
		ts := b.Transports
		if p.Transport != "" {
			ts = []Transport{p.Transport}
		}
		for _, t := range ts {
			msg := b.Message
			if msg == 0 {
				msg = defaultRCMessage
				if t == UD {
					msg = p.MTU
				}
			}
			out = append(out, PerfRun{Rate: p.Rate, MTU: p.MTU, Transport: t, Message: msg})
		}
	}
	return out
}
