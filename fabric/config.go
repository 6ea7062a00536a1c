package fabric

import (
	"errors"
	"fmt"
	"path"

	"github.com/besim/besim/pfc"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
)

// Defaults, each with its source. "Assumption" marks a value the paper does
// not give and we chose.
const (
	// DefaultHostRate: the paper's inference and training clusters use 25 Gbps
	// Mellanox ConnectX-5 NICs (§8.1, §8.2).
	DefaultHostRate = units.Rate(25 * units.Gbps)
	// DefaultFabricRate: switch-to-switch links. Assumption: 100 Gbps uplinks,
	// the usual pairing with 25 Gbps server ports; the paper gives none.
	DefaultFabricRate = units.Rate(100 * units.Gbps)
	// DefaultLinkDelay: one-way per-link latency. Assumption following the HPCC
	// ns-3 topologies (1 us per link; it stands for cable plus switch pipeline,
	// which besim does not model separately). Cable alone is ~5 ns/m.
	DefaultLinkDelay = 1 * sim.Microsecond
	// DefaultMTU: RoCE path MTU (payload bytes per frame). The paper measures
	// 25 Gbps with a 1024 B MTU (Table 2); 100/200 Gbps runs use 4096.
	DefaultMTU units.Size = 1024
	// DefaultBuffer: switch shared packet buffer. Source: the HPCC ns-3 switch
	// MMU default (12 MiB), Broadcom Trident II-class. Assumption: one pool
	// per switch (real chips split buffer across pipelines/XPEs).
	DefaultBuffer = units.Size(12 * units.MiB)
	// DefaultEgressAlpha: dynamic-threshold alpha of lossy egress queues
	// (queue may grow to alpha × free shared buffer; Choudhury & Hahne).
	// Assumption: 1, a common vendor default.
	DefaultEgressAlpha = 1.0
	// DefaultLosslessPrio: NVIDIA/Mellanox RoCE configuration guides put RoCE
	// on priority 3 with PFC enabled there only.
	DefaultLosslessPrio = 3
	// ECN RED defaults from the DCQCN paper (Zhu et al., SIGCOMM 2015):
	// Kmin 5 KB, Kmax 200 KB, Pmax 1%. Assumption: same at every link rate.
	DefaultKmin = units.Size(5 * units.KB)
	DefaultKmax = units.Size(200 * units.KB)
	DefaultPmax = 0.01
	// DefaultSampleCap: points kept per queue-depth series (bounded memory).
	DefaultSampleCap = 1024
)

// TopologyKind names a topology builder.
type TopologyKind string

// Topologies.
const (
	// Star: Hosts hosts on one switch.
	Star TopologyKind = "star"
	// LeafSpine: Leaves leaf switches with HostsPerLeaf hosts each, every leaf
	// connected to every one of Spines spine switches. This is the paper's
	// big-pod (§7.2): one lossless domain; a mini-pod is one leaf with its
	// hosts (Network.MiniPod), the failure domain replicas are spread over.
	LeafSpine TopologyKind = "leaf-spine"
	// FatTree: the k-ary fat tree of Al-Fares et al. (SIGCOMM 2008): k pods of
	// k/2 edge and k/2 aggregation switches, (k/2)^2 cores, k^3/4 hosts.
	FatTree TopologyKind = "fat-tree"
)

// Topology selects a builder and its sizes (only the fields of Kind count).
type Topology struct {
	Kind         TopologyKind
	Hosts        int // star
	Leaves       int // leaf-spine
	HostsPerLeaf int // leaf-spine
	Spines       int // leaf-spine
	K            int // fat-tree, even
}

// LinkConfig is one class of links (both directions alike).
type LinkConfig struct {
	Rate  units.Rate
	Delay sim.Time // one-way propagation
}

// Scheduler is an egress scheduling discipline.
type Scheduler string

// Schedulers.
const (
	// StrictPriority serves the highest non-empty, non-paused priority (7 first).
	StrictPriority Scheduler = "strict"
	// DWRR is deficit weighted round robin (Shreedhar & Varghese) with
	// quantum = weight × largest frame.
	DWRR Scheduler = "dwrr"
)

// ECN is RED marking on one egress queue, as DCQCN's congestion point uses
// it: on enqueue of an ECT frame, with instantaneous queue length q in bytes
// (frames already queued, excluding the arriving one), mark CE with
// probability 0 for q <= Kmin, Pmax × (q−Kmin)/(Kmax−Kmin) for Kmin < q <=
// Kmax and 1 for q > Kmax.
type ECN struct {
	Enabled    bool
	Kmin, Kmax units.Size
	Pmax       float64
}

// Probability is the marking probability at queue length q bytes (a plain
// int64, as the queue accounting; converting the thresholds costs nothing).
func (e ECN) Probability(q int64) float64 {
	kmin, kmax := e.Kmin.Bytes(), e.Kmax.Bytes()
	switch {
	case !e.Enabled || q <= kmin:
		return 0
	case q > kmax:
		return 1
	}
	return e.Pmax * float64(q-kmin) / float64(kmax-kmin)
}

// PFC configures priority flow control on every port of the fabric (switch
// ports and host NICs alike).
type PFC struct {
	// Lossless marks the priorities with PFC enabled: switches account them
	// per (ingress port, priority) and pause instead of dropping; pauses
	// received for other priorities are counted and ignored.
	Lossless [NumPrio]bool
	// Alpha > 0 selects dynamic XOFF = Alpha × free shared buffer, and XON =
	// XOFF − XONOffset. Alpha 0 selects static XOFF/XON bytes.
	Alpha     float64
	XONOffset units.Size
	XOFF, XON units.Size
	// Headroom per lossless (port, priority); 0 computes it per port with
	// pfc.Headroom(rate, delay, largest frame, Response).
	Headroom units.Size
	// Response is the peer response time used for computed headroom.
	Response sim.Time
	// Quanta in XOFF frames (0: pfc.DefaultQuanta) and refresh interval
	// (0: half the pause time).
	Quanta  uint16
	Refresh sim.Time
	// Watchdog is the PFC storm watchdog of switch ports.
	Watchdog pfc.Watchdog
}

// LosslessMask has bit i set for each lossless priority i.
func (p *PFC) LosslessMask() uint8 {
	var m uint8
	for i, on := range p.Lossless {
		if on {
			m |= 1 << i
		}
	}
	return m
}

// SwitchConfig is shared by every switch.
type SwitchConfig struct {
	Buffer units.Size // shared packet buffer
	// Alpha is the lossy egress dynamic threshold.
	Alpha     float64
	Scheduler Scheduler
	Weights   [NumPrio]int // DWRR weights, each >= 1
	ECN       [NumPrio]ECN
	PFC       PFC
}

// Sampling configures the periodic queue-depth sampler.
type Sampling struct {
	Interval sim.Time // 0 disables sampling
	Cap      int      // points per series (bounded memory), 0: DefaultSampleCap
	// Queues, when set, are the only queues sampled: shell patterns
	// (path.Match) on QueueName, or, without a '/', on SWITCH->PEER for
	// every priority of the port. New fails with a QueuePatternError for
	// one that matches no queue.
	Queues []string
}

// Config describes a whole fabric. Build it with DefaultConfig and change
// what the scenario needs; New validates it.
type Config struct {
	Seed       uint64
	Topology   Topology
	HostLink   LinkConfig // host <-> switch
	FabricLink LinkConfig // switch <-> switch
	MTU        units.Size // payload bytes per frame
	Switch     SwitchConfig
	Sampling   Sampling
}

// DefaultConfig is a 16-host star at the defaults above: 25 Gbps hosts,
// 100 Gbps fabric links, 1 us links, 1024 B MTU, 12 MiB buffer, priority 3
// lossless with dynamic thresholds (alpha 1/8, XON offset 3 KiB), computed
// headroom with 3.84 us response, DCQCN RED on every priority, DWRR with
// equal weights (assumption), storm watchdog on (100 ms / 200 ms, drop).
func DefaultConfig() Config {
	c := Config{
		Seed:       1,
		Topology:   Topology{Kind: Star, Hosts: 16},
		HostLink:   LinkConfig{Rate: DefaultHostRate, Delay: DefaultLinkDelay},
		FabricLink: LinkConfig{Rate: DefaultFabricRate, Delay: DefaultLinkDelay},
		MTU:        DefaultMTU,
		Switch: SwitchConfig{
			Buffer:    DefaultBuffer,
			Alpha:     DefaultEgressAlpha,
			Scheduler: DWRR,
			PFC: PFC{
				Alpha:     pfc.DefaultAlpha,
				XONOffset: pfc.DefaultXONOffset,
				Response:  pfc.DefaultResponse,
				Quanta:    pfc.DefaultQuanta,
				Watchdog:  pfc.DefaultWatchdog(),
			},
		},
		Sampling: Sampling{Cap: DefaultSampleCap},
	}
	c.Switch.PFC.Lossless[DefaultLosslessPrio] = true
	for i := range c.Switch.Weights {
		c.Switch.Weights[i] = 1
		c.Switch.ECN[i] = ECN{Enabled: true, Kmin: DefaultKmin, Kmax: DefaultKmax, Pmax: DefaultPmax}
	}
	return c
}

// MaxFrame is the largest data frame in bytes (payload + RoCEv2 headers).
func (c *Config) MaxFrame() int64 { return int64(c.MTU) + RoCEv2Extra }

// Limits that keep a bad config from exhausting memory.
const (
	maxHosts        = 1 << 17
	maxRouteEntries = 1 << 26 // switches × hosts
)

// Validate checks c and says what is wrong with it, field by field.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	t := c.Topology
	var hosts, switches int
	switch t.Kind {
	case Star:
		if t.Hosts < 1 {
			bad("topology.hosts must be >= 1 for a star, got %d", t.Hosts)
		}
		hosts, switches = t.Hosts, 1
	case LeafSpine:
		if t.Leaves < 1 || t.HostsPerLeaf < 1 || t.Spines < 1 {
			bad("leaf-spine needs leaves, hosts_per_leaf and spines >= 1, got %d, %d, %d", t.Leaves, t.HostsPerLeaf, t.Spines)
		}
		hosts, switches = t.Leaves*t.HostsPerLeaf, t.Leaves+t.Spines
	case FatTree:
		if t.K < 2 || t.K%2 != 0 || t.K > 128 {
			bad("fat-tree k must be even and in [2, 128], got %d", t.K)
		}
		hosts, switches = t.K*t.K*t.K/4, t.K*t.K+t.K*t.K/4
	case "":
		bad("topology.kind is missing (star, leaf-spine or fat-tree)")
	default:
		bad("unknown topology kind %q (want star, leaf-spine or fat-tree)", t.Kind)
	}
	if hosts > maxHosts {
		bad("topology has %d hosts, more than the supported %d", hosts, maxHosts)
	} else if hosts*switches > maxRouteEntries {
		bad("topology needs %d routing entries (%d switches x %d hosts), more than %d", hosts*switches, switches, hosts, maxRouteEntries)
	}
	checkLink := func(name string, l LinkConfig) {
		if l.Rate <= 0 {
			bad("%s.rate must be positive bits/s, got %d", name, l.Rate)
		}
		if l.Delay < 0 {
			bad("%s.delay must be >= 0, got %v", name, l.Delay)
		}
	}
	checkLink("host_link", c.HostLink)
	if t.Kind != Star {
		checkLink("fabric_link", c.FabricLink)
	}
	if c.MTU < 1 || c.MTU > 9000 {
		bad("mtu must be in [1, 9000] payload bytes, got %d", c.MTU)
	}
	s := c.Switch
	if s.Buffer <= 0 {
		bad("switch.buffer must be positive bytes, got %d", s.Buffer)
	}
	if !(s.Alpha > 0) {
		bad("switch.alpha (lossy egress dynamic threshold) must be > 0, got %v", s.Alpha)
	}
	switch s.Scheduler {
	case StrictPriority:
	case DWRR:
		for i, w := range s.Weights {
			if w < 1 {
				bad("switch.weights[%d] must be >= 1 for dwrr, got %d", i, w)
			}
		}
	default:
		bad("unknown switch.scheduler %q (want strict or dwrr)", s.Scheduler)
	}
	for i, e := range s.ECN {
		if !e.Enabled {
			continue
		}
		if e.Kmin < 0 || e.Kmax < e.Kmin {
			bad("switch.ecn[%d]: need 0 <= kmin <= kmax, got kmin %d kmax %d", i, e.Kmin, e.Kmax)
		}
		if !(e.Pmax >= 0 && e.Pmax <= 1) {
			bad("switch.ecn[%d].pmax must be in [0, 1], got %v", i, e.Pmax)
		}
	}
	p := s.PFC
	if p.LosslessMask() != 0 {
		th := pfc.Thresholds{Lossless: true, Alpha: p.Alpha, XONOffset: p.XONOffset, XOFF: p.XOFF, XON: p.XON, Headroom: 1}
		if err := th.Validate(); err != nil {
			bad("switch.pfc: %v", err)
		}
		if p.Headroom < 0 {
			bad("switch.pfc.headroom must be >= 0 (0 computes it), got %d", p.Headroom)
		}
		if p.Response < 0 {
			bad("switch.pfc.response must be >= 0, got %v", p.Response)
		}
		if p.Refresh < 0 {
			bad("switch.pfc.refresh must be >= 0, got %v", p.Refresh)
		}
		if err := p.Watchdog.Validate(); err != nil {
			bad("switch.pfc.watchdog: %v", err)
		}
	}
	for _, q := range c.Sampling.Queues {
		if _, err := path.Match(q, ""); err != nil || q == "" {
			bad("sampling queue pattern %q is not a shell pattern (path.Match)", q)
		}
	}
	if c.Sampling.Interval < 0 || c.Sampling.Cap < 0 {
		bad("sampling interval and cap must be >= 0, got %v and %d", c.Sampling.Interval, c.Sampling.Cap)
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("fabric: invalid config: %w", errors.Join(errs...))
}
