package scenarios

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/byteexpress/rpc"
	"github.com/besim/besim/sim"
)

// This file holds the workload section: application traffic driven
// through the ByteExpress core over simulated hosts (package workloads,
// run by package experiment). A workload scenario has no flows; its
// topology is derived from the workload (see WorkloadTopology).

// WorkloadKind selects a workload.
type WorkloadKind string

// Workloads.
const (
	// IncastPull is the synthetic incast of the paper's Figure 14 (§6.3):
	// workers pulling from many parameter servers, a victim flow.
	IncastPull WorkloadKind = "incast-pull"
	// PSCluster is the parameter-server cluster of §2.1 (Figure 1): shards
	// hashed over servers, rankers with fan-out fetches, trainers that
	// fetch, compute and push.
	PSCluster WorkloadKind = "ps-cluster"
	// Failover is the recovery experiment of §7.2: replicated shard
	// groups in two mini-pods, clients fetching through the RPC layer
	// (byteexpress/rpc), and the scenario's faults section injected.
	Failover WorkloadKind = "failover"
)

var workloadKinds = []string{string(IncastPull), string(PSCluster), string(Failover)}

// UnmarshalYAML accepts incast-pull, ps-cluster, failover.
func (k *WorkloadKind) UnmarshalYAML(n *yaml.Node) error {
	return parseEnum(n, (*string)(k), "workload kind", workloadKinds)
}

// DistName names a message-size distribution.
type DistName string

// Size distributions.
const (
	DistFixed     DistName = "fixed"
	DistUniform   DistName = "uniform"
	DistLogNormal DistName = "lognormal"
	DistEmpirical DistName = "empirical"
)

var distNames = []string{string(DistFixed), string(DistUniform), string(DistLogNormal), string(DistEmpirical)}

// UnmarshalYAML accepts fixed, uniform, lognormal, empirical.
func (d *DistName) UnmarshalYAML(n *yaml.Node) error {
	return parseEnum(n, (*string)(d), "size distribution", distNames)
}

// SizeDist is a message-size distribution; only the keys of its Dist may
// be set: fixed {size}, uniform {min, max}, lognormal {mean, p99},
// empirical {cdf: [{size, p}, ...]} (linear between points, last p 1).
type SizeDist struct {
	Dist DistName   `yaml:"dist"`           // the distribution: fixed, uniform, lognormal or empirical
	Size Size       `yaml:"size,omitempty"` // fixed: the size
	Min  Size       `yaml:"min,omitempty"`  // uniform: the smallest size
	Max  Size       `yaml:"max,omitempty"`  // uniform: the largest size
	Mean Size       `yaml:"mean,omitempty"` // lognormal: the mean
	P99  Size       `yaml:"p99,omitempty"`  // lognormal: the 99th percentile
	CDF  []CDFPoint `yaml:"cdf,omitempty"`  // empirical: points {size, p} of the CDF, linear between them, the last p 100%
}

// CDFPoint is one point of an empirical CDF: P(size <= Size) = P.
type CDFPoint struct {
	Size Size     `yaml:"size"` // a size of the CDF
	P    Fraction `yaml:"p"`    // the probability of a size at most this point's size
}

// Window is the per-engine software send window: "none" (no software
// control, the paper's baseline) or a size. The zero value is unset.
type Window struct {
	None bool
	Size Size
}

func (w Window) String() string {
	if w.None {
		return "none"
	}
	return w.Size.String()
}

// IsZero reports whether w is unset.
func (w Window) IsZero() bool { return w == Window{} }

// Bytes is the window in bytes, 0 for none.
func (w Window) Bytes() int64 {
	if w.None {
		return 0
	}
	return int64(w.Size)
}

// MarshalYAML writes "none" or the size.
func (w Window) MarshalYAML() (any, error) { return w.String(), nil }

// UnmarshalYAML accepts "none" (or 0) or a size.
func (w *Window) UnmarshalYAML(n *yaml.Node) error {
	text, err := scalarText(n, "none or a size like 16KB")
	if err != nil {
		return err
	}
	t := strings.TrimSpace(text)
	if t == "none" || t == "0" {
		*w = Window{None: true}
		return nil
	}
	v, err := ParseSize(text)
	if err != nil {
		return &Error{Line: n.Line, Msg: fmt.Sprintf("%q is not a window (use none, or a size, %s)", text, sizeExamples)}
	}
	*w = Window{Size: v}
	return nil
}

// Workload is application traffic over the ByteExpress core.
type Workload struct {
	Kind WorkloadKind `yaml:"kind"` // the workload: incast-pull, ps-cluster or failover
	// HostsPerLeaf is the hosts under every leaf switch; default 32 (an
	// assumption: a 32-port 25 Gb/s ToR).
	HostsPerLeaf int `yaml:"hosts_per_leaf"`
	// Spines is the spine switches of the derived leaf-spine; every leaf
	// has one uplink (at fabric.links.uplink_rate) to each. Default
	// DefaultSpines.
	Spines  int `yaml:"spines"`
	Workers int `yaml:"workers,omitempty"` // pulling hosts, all on leaf 0; default 1
	// Servers is the number of parameter servers every worker pulls from
	// (0: the victim alone, a baseline). Required.
	Servers  int      `yaml:"servers"`
	Request  Size     `yaml:"request"`  // fetch request size; default 64B
	Response SizeDist `yaml:"response"` // default lognormal, mean 20KB, p99 50KB (paper §2.1)
	// Outstanding is the closed-loop concurrency: requests each worker keeps
	// outstanding to each server. Default 4.
	Outstanding int `yaml:"outstanding"`
	// Rate > 0 selects open-loop Poisson arrivals instead: requests per
	// second from each worker to each server.
	Rate float64 `yaml:"rate,omitempty"`
	// Window is byteexpress Config.Cwnd of every engine; default none.
	Window Window `yaml:"window"`
	// Fragment is byteexpress Config.FragSize; default 4KiB.
	Fragment Size `yaml:"fragment"`
	// SRQ is byteexpress Config.UseSRQ: one shared receive queue per I/O
	// thread (§6.2.2) instead of a dedicated RQ of posted buffers per
	// engine (no receive credits then). Default false.
	SRQ bool `yaml:"srq,omitempty"`
	// ThreadDomains gives every I/O thread its own thread domain (§6.2.1):
	// false is byteexpress Config.NoThreadDomains, the paper's Figure 11
	// baseline where QPs beyond the NIC's lock-free doorbell registers
	// (rnic.doorbells.lock_free) share locked ones. Default true (unset:
	// true, not filled in, so resolved scenarios that predate the key are
	// unchanged).
	ThreadDomains *bool `yaml:"thread_domains,omitempty"`
	// SQDepth and RecvBuffer are byteexpress Config.SQDepth (send WRs per
	// engine, default 32) and Config.RecvBufSize (each receive buffer and
	// send staging slot, default 8KiB). Every engine registers SQDepth x
	// RecvBuffer of staging memory, so production fan-in needs them small.
	SQDepth    int  `yaml:"sq_depth,omitempty"`
	RecvBuffer Size `yaml:"recv_buffer,omitempty"` // bytes of each receive buffer and send staging slot (byteexpress Config.RecvBufSize)
	// AckTimeout is byteexpress Config.AckTimeout, the RC local ACK
	// timeout exponent t (4.096 us x 2^t, 1..31); default 14 (67 ms).
	AckTimeout int `yaml:"ack_timeout,omitempty"`
	// EnginePerSocket is byteexpress Config.EnginePerSocket: every socket
	// a client dials gets its own engine (RC QP pair) instead of sharing
	// the destination's engine (the multiplexing of §6.1). Default false.
	EnginePerSocket bool `yaml:"engine_per_socket,omitempty"`
	// Sockets (incast-pull) is the sockets each worker dials to each
	// server; its pulls to a server go round-robin over them. Default 1
	// (0 in the normalized scenario). When set, the run also reports the
	// NICs' QP-cache counters.
	Sockets int `yaml:"sockets,omitempty"`
	// Victim adds the victim flow (a perftest-like RC WRITE stream from a
	// host on the servers' leaf to an idle host on the workers' leaf).
	// Default true.
	Victim        *bool `yaml:"victim,omitempty"`
	VictimMessage Size  `yaml:"victim_message,omitempty"` // default 64KiB
	VictimDepth   int   `yaml:"victim_depth,omitempty"`   // WRITEs outstanding; default 16
	// BandwidthFlows are more such streams, into the workers. Default 0.
	BandwidthFlows int `yaml:"bandwidth_flows,omitempty"`
	// Warmup runs after every socket is connected and before the measured
	// interval (the top-level duration). Default 200us.
	Warmup Duration `yaml:"warmup"`

	// ps-cluster only (servers, window, fragment, request, response,
	// outstanding, rate, hosts_per_leaf and warmup are shared; response is
	// per shard, outstanding and rate are the rankers').
	Shards        int       `yaml:"shards,omitempty"`         // default 8 x servers
	Rankers       int       `yaml:"rankers,omitempty"`        // inference clients
	Trainers      int       `yaml:"trainers,omitempty"`       // training clients
	FanOut        int       `yaml:"fan_out,omitempty"`        // shards per user request; default 8
	TrainerShards int       `yaml:"trainer_shards,omitempty"` // shards per iteration; default fan_out
	Compute       *Duration `yaml:"compute,omitempty"`        // trainer compute per iteration; default 100us
	Push          *SizeDist `yaml:"push,omitempty"`           // trainer update per shard; default = response
	// Transport is what the ps-cluster's messages travel over: rdma
	// (ByteExpress on the simulated RNICs, the default) or tcp (the kernel
	// TCP model of package tcpsim, the paper's §8 baseline, on the same
	// fabric and hosts). The rest of the scenario stays as it is.
	Transport WorkloadTransport `yaml:"transport,omitempty"`
	TCP       *TCP              `yaml:"tcp,omitempty"` // transport tcp only
	// Replicas is how many parameter servers hold each shard group: the
	// group of server i (the shards hashed to it) is also on servers
	// i+1, ..., i+replicas-1 (mod servers), and the RPC layer's replica
	// selection chooses one per call, the primary first (package ps,
	// ReplicaSet). 1 to servers; more than 1 needs rpc (nothing else
	// chooses a replica). Default 1 (unset: 1, not filled in, so resolved
	// scenarios that predate the key are unchanged).
	Replicas int `yaml:"replicas,omitempty"`

	// failover only (shards is shared with ps-cluster: the replica sets).
	Clients int `yaml:"clients,omitempty"` // default 2
	// TCPFallback gives every host a kernel TCP stack (on priority 0,
	// tcpsim defaults) beside its RNIC and the RPC layer a TCP transport.
	TCPFallback bool `yaml:"tcp_fallback,omitempty"`
	// RPC is the recovery policy of the RPC layer (byteexpress/rpc). Under
	// failover it is always on (a mapping, or the key left out for the
	// defaults). Under ps-cluster it is off unless given: `rpc: true` (or
	// a mapping) sends every fetch and push through the RPC layer,
	// `rpc: false` (or the key left out) sends them on the sockets
	// directly.
	RPC       *RPC       `yaml:"rpc,omitempty"`
	Keepalive *Keepalive `yaml:"keepalive,omitempty"` // the engines' keepalive (byteexpress): how often an idle connection is probed and when it is declared dead
}

// RPC is the recovery policy of byteexpress/rpc (paper §7.2); zero fields
// take the paper's values. In YAML it is a mapping of these keys, or a
// boolean: true is the mapping with every default, false (Off) turns the
// RPC layer off (ps-cluster only).
type RPC struct {
	// Off is `rpc: false`.
	Off            bool     `yaml:"-"`
	ConnectTimeout Duration `yaml:"connect_timeout"` // Tc, default 10ms
	RequestTimeout Duration `yaml:"request_timeout"` // Tr, default 40ms
	RetryProb      Fraction `yaml:"retry_prob"`      // default 50% (the paper gives no value)
	MaxAttempts    int      `yaml:"max_attempts"`    // default 3
	// Quarantine (exclusion list): more than MaxConnFailures connection or
	// MaxReqFailures request failures to a node within QuarantineWindow
	// exclude it until the count slides back (paper: M=30, N=50, 5 min).
	QuarantineWindow Duration `yaml:"quarantine_window"`
	MaxConnFailures  int      `yaml:"max_conn_failures"` // connection failures to a node within quarantine_window that quarantine it (paper: M=30)
	MaxReqFailures   int      `yaml:"max_req_failures"`  // request failures to a node within quarantine_window that quarantine it (paper: N=50)
	// ProbeInterval is how often a node given up for RDMA is probed
	// (default 30s; the paper gives no value).
	ProbeInterval Duration `yaml:"probe_interval"`
}

// rpcFields is RPC without its YAML methods.
type rpcFields RPC

// UnmarshalYAML accepts a mapping of RPC's keys, or true or false.
func (r *RPC) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		var on bool
		if n.ShortTag() != "!!bool" || n.Decode(&on) != nil {
			return fmt.Errorf("%q is neither a boolean (true, false) nor a mapping of RPC keys", n.Value)
		}
		*r = RPC{Off: !on}
		return nil
	}
	var f rpcFields
	if err := n.Decode(&f); err != nil {
		return err
	}
	*r = RPC(f)
	r.Off = false
	return nil
}

// MarshalYAML writes false for Off, the mapping otherwise.
func (r RPC) MarshalYAML() (any, error) {
	if r.Off {
		return false, nil
	}
	return rpcFields(r), nil
}

// RPCOn reports whether the workload's messages go through the RPC layer:
// always under failover; under ps-cluster when rpc is given and not false.
func (w *Workload) RPCOn() bool {
	return w.Kind == Failover || (w.RPC != nil && !w.RPC.Off)
}

// Keepalive is the ByteExpress keepalive (§7.1).
type Keepalive struct {
	Interval Duration `yaml:"interval"` // default 100ms
	Timeout  Duration `yaml:"timeout"`  // default 5 x interval
}

// WorkloadTransport selects a ps-cluster's transport.
type WorkloadTransport string

// Workload transports.
const (
	OverRDMA WorkloadTransport = "rdma"
	OverTCP  WorkloadTransport = "tcp"
)

var workloadTransports = []string{string(OverRDMA), string(OverTCP)}

// UnmarshalYAML accepts rdma, tcp.
func (t *WorkloadTransport) UnmarshalYAML(n *yaml.Node) error {
	return parseEnum(n, (*string)(t), "workload transport", workloadTransports)
}

// TCP is the simulated kernel TCP stack of every host (package tcpsim).
// Every key is a knob of tcpsim.Config, whose DefaultConfig holds the
// defaults with their sources (ModelDefaults; SCHEMA.md lists them).
type TCP struct {
	CC         string    `yaml:"cc,omitempty"`          // congestion control: dctcp or newreno
	MSS        Size      `yaml:"mss,omitempty"`         // segment payload
	Prio       int       `yaml:"prio"`                  // lossy priority TCP sends on
	InitCwnd   int       `yaml:"init_cwnd,omitempty"`   // initial window, segments
	MinRTO     Duration  `yaml:"min_rto,omitempty"`     // minimum retransmission timeout
	DelayedAck Duration  `yaml:"delayed_ack,omitempty"` // delayed-ACK timer
	AckEvery   int       `yaml:"ack_every,omitempty"`   // ACK at least every this many full segments
	Threads    int       `yaml:"threads,omitempty"`     // application and softirq cores per host
	RxUsecs    *Duration `yaml:"rx_usecs,omitempty"`    // receive interrupt moderation (0us: off)
	RxFrames   int       `yaml:"rx_frames,omitempty"`   // frames that trigger the receive interrupt early
}

// ThreadDomainsOn reports whether the core gives each I/O thread a thread
// domain (thread_domains unset or true).
func (w *Workload) ThreadDomainsOn() bool { return w.ThreadDomains == nil || *w.ThreadDomains }

// VictimOn reports whether the victim flow is enabled.
func (w *Workload) VictimOn() bool { return w.Victim == nil || *w.Victim }

// Workload defaults. Sources: the request and response sizes are the
// paper's training workload (§2.1, §6.3: mean 20 KB, P99 50 KB); 4
// outstanding requests per server is an assumption (§2.1 says only that
// rankers keep multiple requests outstanding); the fragment size is the
// byteexpress default (Figure 13's 4 KB); the victim is perftest's
// ib_write_bw default message (64 KiB) with 16 outstanding, as the
// pfc-incast scenario.
const (
	defaultWorkers       = 1
	defaultFanOut        = 8
	defaultCompute       = Duration(100 * sim.Microsecond) // assumption: a short forward/backward step
	defaultHostsPerLeaf  = 32
	defaultRequest       = 64
	defaultRespMean      = 20 * KB
	defaultRespP99       = 50 * KB
	defaultOutstanding   = 4
	defaultVictimMessage = 64 * KiB
	defaultVictimDepth   = 16
	defaultWorkloadWarm  = Duration(200 * sim.Microsecond)
	maxWorkloadHosts     = 8192
	// MaxSpines bounds workload.spines (a leaf's uplinks).
	MaxSpines      = 64
	maxOutstanding = 1024
	trafficPrio    = 3 // rnic.DefaultTrafficPrio: the priority the RNICs send on
)

// DefaultSpines is workload.spines when unset: a leaf (ToR) with one
// uplink to each of four spine switches, as in the public reference
// design of a 25/40G-era fabric, Facebook's data center fabric (A.
// Andreyev, "Introducing data center fabric, the next-generation Facebook
// data center network", Facebook Engineering, November 2014): every rack
// switch connects to the four fabric switches of its pod, 2:1
// oversubscribed at 32 servers per rack. With fabric.links.uplink_rate
// 100Gbps and 32 25 Gbps hosts per leaf that is the same 2:1. The paper
// does not describe ByteDance's fabric; this is an assumption, and
// results/table4 ships a sweep over it.
const DefaultSpines = 4

// WorkloadTopology is the topology an incast-pull workload runs on: a
// leaf-spine of hosts_per_leaf-host leaves and one spine; leaf 0 holds the
// workers and the victim's receiver; from leaf 1 on come the victim's
// sender, the servers and the bandwidth-flow senders, on as many leaves as
// they need (package workloads, IncastConfig.Layout, builds the same).
func (w *Workload) WorkloadTopology() Topology {
	hpl := max(w.HostsPerLeaf, 1)
	if w.Kind == Failover {
		return Topology{Kind: LeafSpine, Leaves: 3, HostsPerLeaf: max(w.HostsPerLeaf, w.Shards, w.Clients, 1), Spines: max(w.Spines, 1)}
	}
	if w.Kind == PSCluster {
		cl := max(1, (w.Rankers+w.Trainers+hpl-1)/hpl)
		return Topology{Kind: LeafSpine, Leaves: max(2, cl+(w.Servers+hpl-1)/hpl), HostsPerLeaf: hpl, Spines: max(w.Spines, 1)}
	}
	n := w.Servers + w.BandwidthFlows
	if w.VictimOn() {
		n++
	}
	return Topology{Kind: LeafSpine, Leaves: 1 + max(1, (n+hpl-1)/hpl), HostsPerLeaf: hpl, Spines: max(w.Spines, 1)}
}

// workloadEarly fills what the fabric and NIC defaults depend on: the
// derived topology, hosts.nic rnic and payload bytes.
func (d *defaulter) workloadEarly() {
	s := d.s
	w := s.Workload
	def(d, "workload.hosts_per_leaf", &w.HostsPerLeaf, defaultHostsPerLeaf)
	def(d, "workload.spines", &w.Spines, DefaultSpines)
	if w.Kind == PSCluster {
		def(d, "workload.shards", &w.Shards, 8*w.Servers)
	} else if w.Kind == Failover {
		def(d, "workload.shards", &w.Shards, 4)
		def(d, "workload.clients", &w.Clients, 2)
	} else {
		def(d, "workload.workers", &w.Workers, defaultWorkers)
		defBool(&w.Victim, true)
	}
	if !s.present("fabric.topology") {
		s.Fabric.Topology = w.WorkloadTopology()
	}
	if s.Hosts.NIC == "" {
		s.Hosts.NIC = RNICModel
	}
	if s.RNIC == nil {
		s.RNIC = &RNIC{}
	}
	if s.RNIC.Payload == "" {
		s.RNIC.Payload = PayloadBytes
	}
}

// coreDuration is a duration of the core's configuration (wall-clock
// time.Duration, nanoseconds) as a scenario Duration (virtual time).
func coreDuration(t time.Duration) Duration { return Duration(sim.Time(t) * sim.Nanosecond) }

func (d *defaulter) workload() {
	w := d.s.Workload
	const p = "workload"
	def(d, p+".request", &w.Request, defaultRequest)
	if w.Response.Dist == "" && !d.s.present(p+".response") {
		w.Response = SizeDist{Dist: DistLogNormal, Mean: defaultRespMean, P99: defaultRespP99}
	}
	def(d, p+".outstanding", &w.Outstanding, defaultOutstanding)
	if w.Window.IsZero() {
		w.Window = Window{None: true}
	}
	def(d, p+".fragment", &w.Fragment, Size(byteexpress.Config{}.Defaults().FragSize))
	def(d, p+".warmup", &w.Warmup, defaultWorkloadWarm)
	if w.RPCOn() {
		if w.RPC == nil {
			w.RPC = &RPC{}
		}
		// The RPC layer's own defaults (rpc.DefaultConfig, where each is
		// declared and sourced), not a second copy.
		rc := rpc.DefaultConfig()
		def(d, p+".rpc.connect_timeout", &w.RPC.ConnectTimeout, coreDuration(rc.ConnTimeout))
		def(d, p+".rpc.request_timeout", &w.RPC.RequestTimeout, coreDuration(rc.RequestTimeout))
		def(d, p+".rpc.retry_prob", &w.RPC.RetryProb, Fraction(rc.RetryProb))
		def(d, p+".rpc.max_attempts", &w.RPC.MaxAttempts, rc.MaxAttempts)
		def(d, p+".rpc.quarantine_window", &w.RPC.QuarantineWindow, coreDuration(rc.Window))
		def(d, p+".rpc.max_conn_failures", &w.RPC.MaxConnFailures, rc.MaxConnFailures)
		def(d, p+".rpc.max_req_failures", &w.RPC.MaxReqFailures, rc.MaxReqFailures)
		def(d, p+".rpc.probe_interval", &w.RPC.ProbeInterval, coreDuration(rc.ProbeInterval))
	}
	if w.Kind == Failover {
		if w.Keepalive == nil {
			w.Keepalive = &Keepalive{}
		}
		// The core's keepalive defaults (byteexpress Config.Defaults).
		bc := byteexpress.Config{}.Defaults()
		if !d.s.present(p + ".keepalive.interval") {
			w.Keepalive.Interval = coreDuration(bc.KeepaliveInterval)
		}
		if w.Keepalive.Interval > 0 {
			// The core's rule (timeout a multiple of the interval),
			// applied to the interval the file may have set.
			def(d, p+".keepalive.timeout", &w.Keepalive.Timeout, w.Keepalive.Interval*Duration(bc.KeepaliveTimeout/bc.KeepaliveInterval))
		}
		return
	}
	if w.Kind == PSCluster {
		def(d, p+".fan_out", &w.FanOut, defaultFanOut)
		def(d, p+".trainer_shards", &w.TrainerShards, w.FanOut)
		defPtr(&w.Compute, defaultCompute)
		if w.Push == nil {
			push := w.Response
			w.Push = &push
		}
		if w.Transport == "" {
			w.Transport = OverRDMA
		}
		if w.Transport == OverTCP {
			if w.TCP == nil {
				w.TCP = &TCP{}
			}
			// Every key is a knob of tcpsim.Config (ModelDefaults).
			d.overlay(p+".tcp", w.TCP, d.models().TCP)
		}
		return
	}
	def(d, p+".victim_message", &w.VictimMessage, defaultVictimMessage)
	def(d, p+".victim_depth", &w.VictimDepth, defaultVictimDepth)
}

func (v *validator) workload() {
	s := v.s
	w := s.Workload
	const p = "workload"
	shared := []string{"kind", "servers", "hosts_per_leaf", "spines", "request", "response", "outstanding", "rate", "window", "fragment", "srq", "thread_domains", "sq_depth", "recv_buffer", "ack_timeout", "engine_per_socket", "warmup"}
	uses := map[WorkloadKind][]string{
		IncastPull: append(append([]string(nil), shared...), "workers", "victim", "victim_message", "victim_depth", "bandwidth_flows", "sockets"),
		PSCluster:  append(append([]string(nil), shared...), "shards", "rankers", "trainers", "fan_out", "trainer_shards", "compute", "push", "transport", "tcp", "rpc", "replicas"),
		Failover:   {"kind", "shards", "clients", "hosts_per_leaf", "spines", "request", "outstanding", "response", "window", "fragment", "srq", "thread_domains", "sq_depth", "recv_buffer", "ack_timeout", "warmup", "rpc", "keepalive", "tcp_fallback"},
	}
	switch w.Kind {
	case IncastPull, PSCluster, Failover:
		mine := map[string]bool{}
		for _, k := range uses[w.Kind] {
			mine[k] = true
		}
		seen := map[string]bool{}
		for _, keys := range uses {
			for _, key := range keys {
				// A normalized failover scenario carries servers: 0 (the
				// field has no omitempty: 0 means something to incast-pull).
				zeroServers := w.Kind == Failover && key == "servers" && w.Servers == 0
				if !mine[key] && !seen[key] && s.present(p+"."+key) && !zeroServers {
					v.bad(p+"."+key, "not used by kind %s (%s uses: %s)", w.Kind, w.Kind, strings.Join(uses[w.Kind], ", "))
				}
				seen[key] = true
			}
		}
	case "":
		v.missingOr(p+".kind", `"" is not a workload kind (allowed: `+strings.Join(workloadKinds, ", ")+")",
			"missing (required; allowed: "+strings.Join(workloadKinds, ", ")+")")
	default:
		v.bad(p+".kind", "%q is not a workload kind (allowed: %s)", w.Kind, strings.Join(workloadKinds, ", "))
	}
	if w.Kind == Failover {
		v.failover()
		return
	}
	if s.present("fabric.topology") && s.Fabric.Topology != w.WorkloadTopology() {
		t := w.WorkloadTopology()
		v.bad("fabric.topology", "the topology is derived from the workload (leaf-spine, %d leaves x %d hosts, %d spines); omit fabric.topology (set workload.hosts_per_leaf and workload.spines)", t.Leaves, t.HostsPerLeaf, t.Spines)
	}
	if len(s.Flows) > 0 || s.present("flows") {
		v.bad("flows", "not used with a workload (its traffic comes from the workload section)")
	}
	if s.Hosts.NIC != RNICModel {
		v.bad("hosts.nic", "%s: a workload runs the ByteExpress core on simulated RNICs (hosts.nic: rnic)", s.Hosts.NIC)
	}
	if s.RNIC != nil && s.RNIC.Payload != PayloadBytes {
		v.bad("rnic.payload", "%s: a workload needs payload: bytes (the ByteExpress wire protocol reads what its peer sends)", s.RNIC.Payload)
	}
	declared := false
	for _, pr := range s.Fabric.Priorities {
		declared = declared || pr.Prio == trafficPrio
	}
	if !declared {
		v.bad("fabric.priorities", "a workload's RNICs send on priority %d: declare it (lossless, for PFC)", trafficPrio)
	}
	v.countRange(p+".hosts_per_leaf", w.HostsPerLeaf, 2, 256)
	v.countRange(p+".spines", w.Spines, 1, MaxSpines)
	if w.Kind == PSCluster {
		v.countRange(p+".servers", w.Servers, 1, maxWorkloadHosts)
		v.countRange(p+".shards", w.Shards, 1, 1<<24)
		v.countRange(p+".rankers", w.Rankers, 0, maxWorkloadHosts)
		v.countRange(p+".trainers", w.Trainers, 0, maxWorkloadHosts)
		if w.Rankers+w.Trainers < 1 {
			v.bad(p+".rankers", "a ps-cluster needs at least one ranker or trainer")
		}
		v.countRange(p+".fan_out", w.FanOut, 1, max(1, min(w.Shards, 4096)))
		v.countRange(p+".trainer_shards", w.TrainerShards, 1, max(1, min(w.Shards, 4096)))
		if w.Compute != nil && *w.Compute < 0 {
			v.bad(p+".compute", "%s is negative", *w.Compute)
		}
		if w.Push != nil {
			v.sizeDist(p+".push", w.Push)
		}
		if w.Request < 24 {
			v.bad(p+".request", "%s is too small for a ps-cluster (at least 24B: slot, send time, op, shard count)", w.Request)
		}
		v.tcp(p)
		v.replicas(p)
	} else {
		v.countRange(p+".workers", w.Workers, 1, maxWorkloadHosts)
		if vv := map[bool]int{true: 1}[w.VictimOn()]; w.Workers+vv > w.HostsPerLeaf {
			v.bad(p+".workers", "%d workers (and the victim's receiver) do not fit on leaf 0 of %d hosts (hosts_per_leaf)", w.Workers, w.HostsPerLeaf)
		}
		v.countRange(p+".servers", w.Servers, 0, maxWorkloadHosts)
	}
	if !s.present(p+".servers") && w.Servers == 0 {
		v.bad(p+".servers", "missing (required: how many parameter servers each worker pulls from)")
	}
	v.countRange(p+".bandwidth_flows", w.BandwidthFlows, 0, maxWorkloadHosts)
	if cl := w.Workers + w.Rankers + w.Trainers; cl*max(w.Servers, 1) > 1<<20 {
		v.bad(p+".servers", "%d clients x %d servers sockets is too many (at most %d)", cl, w.Servers, 1<<20)
	}
	if w.Request < 16 || w.Request > 1<<20 {
		v.bad(p+".request", "%s is out of range (allowed: 16B to 1MiB; it carries the request's send time)", w.Request)
	}
	v.sizeDist(p+".response", &w.Response)
	v.countRange(p+".outstanding", w.Outstanding, 1, maxOutstanding)
	if w.Rate < 0 || w.Rate > 1e9 {
		v.bad(p+".rate", "%v is out of range (requests per second per worker-server pair, 0 for closed loop)", w.Rate)
	}
	if s.present(p+".rate") && w.Rate > 0 && s.present(p+".outstanding") && w.Kind != PSCluster {
		v.bad(p+".outstanding", "not used with an open-loop rate")
	}
	v.engineKeys(p)
	if w.Kind == IncastPull {
		if w.VictimMessage < 64 || w.VictimMessage > 64*MiB {
			v.bad(p+".victim_message", "%s is out of range (allowed: 64B to 64MiB)", w.VictimMessage)
		}
		v.countRange(p+".victim_depth", w.VictimDepth, 1, maxQueueDepth)
		if w.Sockets != 0 || s.present(p+".sockets") {
			v.countRange(p+".sockets", w.Sockets, 1, maxOutstanding)
			if cl := w.Workers * max(w.Servers, 1) * w.Sockets; cl > 1<<20 {
				v.bad(p+".sockets", "%d workers x %d servers x %d sockets is too many sockets (at most %d)", w.Workers, w.Servers, w.Sockets, 1<<20)
			}
		}
	}
	if w.Warmup < 0 {
		v.bad(p+".warmup", "%s is negative", w.Warmup)
	}
}

// engineKeys checks the ByteExpress engine keys: window, fragment,
// sq_depth, recv_buffer and ack_timeout (0: the byteexpress default).
func (v *validator) engineKeys(p string) {
	w := v.s.Workload
	if !w.Window.None && (w.Window.Size < 256 || w.Window.Size > 64*MiB) {
		v.bad(p+".window", "%s is out of range (allowed: none, or 256B to 64MiB)", w.Window)
	}
	if w.Fragment < 64 || w.Fragment > 64*MiB {
		v.bad(p+".fragment", "%s is out of range (allowed: 64B to 64MiB)", w.Fragment)
	}
	if w.SQDepth != 0 || v.s.present(p+".sq_depth") {
		v.countRange(p+".sq_depth", w.SQDepth, 4, 4096)
	}
	if (w.RecvBuffer != 0 || v.s.present(p+".recv_buffer")) && (w.RecvBuffer < 1*KiB || w.RecvBuffer > 1*MiB) {
		v.bad(p+".recv_buffer", "%s is out of range (allowed: 1KiB to 1MiB)", w.RecvBuffer)
	}
	// 0 would mean an infinite timeout in verbs; the key is a positive
	// exponent or absent.
	if w.AckTimeout != 0 || v.s.present(p+".ack_timeout") {
		v.countRange(p+".ack_timeout", w.AckTimeout, 1, 31)
	}
}

// failover checks a workload of kind failover.
func (v *validator) failover() {
	s := v.s
	w := s.Workload
	const p = "workload"
	if s.present("fabric.topology") && s.Fabric.Topology != w.WorkloadTopology() {
		v.bad("fabric.topology", "the topology is derived from the workload; omit fabric.topology")
	}
	if len(s.Flows) > 0 || s.present("flows") {
		v.bad("flows", "not used with a workload (its traffic comes from the workload section)")
	}
	if s.Hosts.NIC != RNICModel {
		v.bad("hosts.nic", "%s: a workload runs the ByteExpress core on simulated RNICs (hosts.nic: rnic)", s.Hosts.NIC)
	}
	v.countRange(p+".hosts_per_leaf", w.HostsPerLeaf, 2, 256)
	v.countRange(p+".spines", w.Spines, 1, MaxSpines)
	v.countRange(p+".shards", w.Shards, 1, w.HostsPerLeaf)
	v.countRange(p+".clients", w.Clients, 1, w.HostsPerLeaf)
	if w.Request < 24 || w.Request > 1<<20 {
		v.bad(p+".request", "%s is out of range (allowed: 24B, the RPC header, to 1MiB)", w.Request)
	}
	if w.Warmup < 0 {
		v.bad(p+".warmup", "%s is negative", w.Warmup)
	}
	v.countRange(p+".outstanding", w.Outstanding, 1, maxOutstanding)
	if w.Response.Dist != DistFixed || w.Response.Size < 24 || w.Response.Size > 64*MiB {
		v.bad(p+".response", "a failover response is {dist: fixed, size} with size 24B to 64MiB (the RPC header is 24 bytes)")
	}
	v.engineKeys(p)
	if w.TCPFallback {
		found := false
		for _, pr := range s.Fabric.Priorities {
			if pr.Prio == 0 {
				found = true
				if pr.Lossless {
					v.bad(p+".tcp_fallback", "TCP runs on priority 0, which is lossless in fabric.priorities")
				}
			}
		}
		if !found {
			v.bad(p+".tcp_fallback", "TCP runs on priority 0: declare it (lossy) in fabric.priorities")
		}
	}
	if w.RPC.Off {
		v.bad(p+".rpc", "false: failover always runs through the RPC layer (give a mapping of rpc keys, or leave the key out for the defaults)")
		return
	}
	v.rpc(p)
	if k := w.Keepalive; k.Interval < 0 || k.Timeout < 0 || (k.Interval > 0 && k.Timeout < k.Interval) {
		v.bad(p+".keepalive", "interval and timeout must be >= 0, timeout at least the interval")
	}
}

// rpc checks the keys of workload.rpc (the RPC layer on).
func (v *validator) rpc(p string) {
	r := v.s.Workload.RPC
	for _, d := range []struct {
		key string
		v   Duration
	}{{"connect_timeout", r.ConnectTimeout}, {"request_timeout", r.RequestTimeout}, {"quarantine_window", r.QuarantineWindow}, {"probe_interval", r.ProbeInterval}} {
		if d.v <= 0 {
			v.bad(p+".rpc."+d.key, "must be > 0")
		}
	}
	if r.RetryProb < 0 || r.RetryProb > 1 {
		v.bad(p+".rpc.retry_prob", "%v is not a probability (0 to 100%%)", r.RetryProb.Float64())
	}
	v.countRange(p+".rpc.max_attempts", r.MaxAttempts, 1, 100)
	v.countRange(p+".rpc.max_conn_failures", r.MaxConnFailures, 1, 1_000_000)
	v.countRange(p+".rpc.max_req_failures", r.MaxReqFailures, 1, 1_000_000)
}

// replicas checks workload.replicas of a ps-cluster (0: unset, one).
func (v *validator) replicas(p string) {
	w := v.s.Workload
	if w.Replicas == 0 && !v.s.present(p+".replicas") {
		return
	}
	switch {
	case w.Replicas < 1:
		v.bad(p+".replicas", "%d: allowed 1 to servers (%d): how many servers hold each shard group", w.Replicas, w.Servers)
	case w.Replicas > w.Servers:
		v.bad(p+".replicas", "%d is more than the %d servers (each replica of a shard group is on a different server)", w.Replicas, w.Servers)
	case w.Replicas > 1 && !w.RPCOn():
		v.bad(p+".replicas", "%d needs the RPC layer (rpc: true): its replica selection is what chooses a replica per call; without it every request goes to the primary", w.Replicas)
	}
}

// tcp checks the ps-cluster transport and its tcp section.
func (v *validator) tcp(p string) {
	s := v.s
	w := s.Workload
	if w.RPCOn() {
		if w.Transport == OverTCP {
			v.bad(p+".rpc", "the RPC layer (byteexpress/rpc) runs over ByteExpress: it needs transport rdma (transport is tcp; set rpc: false or transport: rdma)")
		} else {
			v.rpc(p)
		}
	}
	if w.Transport != OverTCP {
		if w.TCP != nil || s.present(p+".tcp") {
			v.bad(p+".tcp", "only used with transport: tcp (transport is %s)", w.Transport)
		}
		return
	}
	t, q := w.TCP, p+".tcp"
	if (t.CC != "" || s.present(q+".cc")) && t.CC != "dctcp" && t.CC != "newreno" {
		v.bad(q+".cc", "%q is not a TCP congestion control (allowed: dctcp, newreno)", t.CC)
	}
	if (t.MSS != 0 || s.present(q+".mss")) && (t.MSS < 64 || t.MSS > 8948) {
		v.bad(q+".mss", "%s is out of range (allowed: 64B to 8948B)", t.MSS)
	}
	v.countRange(q+".prio", t.Prio, 0, 7)
	// Knobs left out are 0 without the models' defaults (berun).
	v.knobRange(q+".init_cwnd", t.InitCwnd, 1, 1000)
	v.knobRange(q+".ack_every", t.AckEvery, 1, 64)
	v.knobRange(q+".threads", t.Threads, 1, 1024)
	v.knobRange(q+".rx_frames", t.RxFrames, 1, 1<<16)
	if t.RxUsecs != nil && (*t.RxUsecs < 0 || *t.RxUsecs > Duration(sim.Millisecond)) {
		v.bad(q+".rx_usecs", "%s is out of range (allowed: 0 (off) to 1ms)", *t.RxUsecs)
	}
	if (t.MinRTO != 0 || s.present(q+".min_rto")) && (t.MinRTO <= 0 || t.MinRTO > Duration(120*sim.Second)) {
		v.bad(q+".min_rto", "%s is out of range (allowed: above 0 up to 120s)", t.MinRTO)
	}
	if (t.DelayedAck != 0 || s.present(q+".delayed_ack")) && (t.DelayedAck <= 0 || t.DelayedAck > Duration(sim.Second)) {
		v.bad(q+".delayed_ack", "%s is out of range (allowed: above 0 up to 1s)", t.DelayedAck)
	}
	found := false
	for _, pr := range s.Fabric.Priorities {
		if pr.Prio != t.Prio {
			continue
		}
		found = true
		if pr.Lossless {
			v.bad(q+".prio", "priority %d is lossless in fabric.priorities; TCP runs on a lossy class", t.Prio)
		}
	}
	if !found {
		v.bad(q+".prio", "priority %d is not declared in fabric.priorities (declare it lossy, with ecn for dctcp)", t.Prio)
	}
}

// keySet is an optional key of a section and whether it holds a value.
type keySet struct {
	key string
	set bool
}

// unusedKeys reports every key of p that is set (or present) but not in
// uses: "not used by WHAT (USES)".
func (v *validator) unusedKeys(p string, keys []keySet, uses []string, what, usesText string) {
	for _, k := range keys {
		if !slices.Contains(uses, k.key) && (k.set || v.s.present(p+"."+k.key)) {
			v.bad(p+"."+k.key, "not used by %s (%s)", what, usesText)
		}
	}
}

func (v *validator) sizeDist(p string, d *SizeDist) {
	keys := []keySet{{"size", d.Size != 0}, {"min", d.Min != 0}, {"max", d.Max != 0}, {"mean", d.Mean != 0}, {"p99", d.P99 != 0}, {"cdf", len(d.CDF) > 0}}
	var uses []string
	switch d.Dist {
	case DistFixed:
		uses = []string{"size"}
	case DistUniform:
		uses = []string{"min", "max"}
	case DistLogNormal:
		uses = []string{"mean", "p99"}
	case DistEmpirical:
		uses = []string{"cdf"}
	case "":
		v.missingOr(p+".dist", `"" is not a size distribution (allowed: `+strings.Join(distNames, ", ")+")",
			"missing (required; allowed: "+strings.Join(distNames, ", ")+")")
		return
	default:
		v.bad(p+".dist", "%q is not a size distribution (allowed: %s)", d.Dist, strings.Join(distNames, ", "))
		return
	}
	v.unusedKeys(p, keys, uses, "dist "+string(d.Dist), string(d.Dist)+" uses: "+strings.Join(uses, ", "))
	const maxMsg = 64 * MiB
	inRange := func(key string, x Size) {
		if x < 1 || x > maxMsg {
			v.bad(p+"."+key, "%s is out of range (allowed: 1B to %s)", x, Size(maxMsg))
		}
	}
	switch d.Dist {
	case DistFixed:
		inRange("size", d.Size)
	case DistUniform:
		inRange("min", d.Min)
		inRange("max", d.Max)
		if d.Max < d.Min {
			v.bad(p+".max", "%s is below min %s", d.Max, d.Min)
		}
	case DistLogNormal:
		inRange("mean", d.Mean)
		inRange("p99", d.P99)
		switch {
		case d.P99 <= d.Mean:
			v.bad(p+".p99", "%s must exceed the mean %s", d.P99, d.Mean)
		case float64(d.P99) > 14*float64(d.Mean):
			v.bad(p+".p99", "%s is too far above the mean %s for a lognormal (p99/mean at most 14)", d.P99, d.Mean)
		}
	case DistEmpirical:
		if len(d.CDF) == 0 {
			v.bad(p+".cdf", "empty list (give points {size, p} with the last p 100%%)")
			return
		}
		for i, pt := range d.CDF {
			pp := idx(p+".cdf", i)
			inRange(idx(p+".cdf", i)+".size", pt.Size)
			if pt.P < 0 || pt.P > 1 {
				v.bad(pp+".p", "%s is out of range (0 to 100%%)", pt.P)
			}
			if i > 0 && (pt.Size < d.CDF[i-1].Size || pt.P < d.CDF[i-1].P) {
				v.bad(pp, "sizes and probabilities must not decrease")
			}
		}
		if d.CDF[len(d.CDF)-1].P != 1 {
			v.bad(idx(p+".cdf", len(d.CDF)-1)+".p", "the last point must have p 100%%")
		}
	}
}
