package scenarios

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/besim/besim/sim"
)

// SchemaVersion is the scenario schema this package reads.
const SchemaVersion = 1

// Scenario is one simulation experiment. After Parse (or ApplyDefaults and
// Validate for one built in Go) every defaulted field is filled in and the
// whole is consistent; a runner translates it into component configs. The
// YAML keys are the yaml tags; SCHEMA.md documents each.
//
// A scenario is either a fabric with flows, or a benchmark (two simulated
// NICs back to back, no fabric, hosts or flows). RNIC and DCQCN are set (by
// defaults) exactly when they are used: RNIC with hosts.nic: rnic or a
// benchmark, DCQCN with rnic.cc: dcqcn.
//
// New sections (byteexpress, workloads, faults) are added as further
// top-level fields; until a section exists its key is an unknown key, hence
// an error.
type Scenario struct {
	Version     int        `yaml:"version"`               // schema version; only 1 exists
	Name        string     `yaml:"name"`                  // names the results directory: letters, digits, ".", "_", "-", at most 64
	Description string     `yaml:"description,omitempty"` // one line shown by besim list
	Seed        uint64     `yaml:"seed"`                  // root of every component's random stream: same scenario and seed, byte-identical outputs
	Duration    Duration   `yaml:"duration"`              // virtual time simulated (> 0, at most 10s); for a benchmark, the measured interval of each point
	Fabric      Fabric     `yaml:"fabric,omitempty"`      // the network: topology, links, switch, priorities, pfc (not with benchmark)
	Hosts       Hosts      `yaml:"hosts,omitempty"`       // settings shared by all hosts, including their NIC model (not with benchmark)
	RNIC        *RNIC      `yaml:"rnic,omitempty"`        // the simulated RDMA NIC (hosts.nic: rnic, or a benchmark)
	DCQCN       *DCQCN     `yaml:"dcqcn,omitempty"`       // DCQCN parameters; only with rnic.cc: dcqcn
	Flows       []Flow     `yaml:"flows,omitempty"`       // flows: raw paced streams or RC/UD QP pairs (required unless benchmark or workload)
	Benchmark   *Benchmark `yaml:"benchmark,omitempty"`   // a perftest, msgrate, fragsize or hol benchmark instead of a fabric with flows
	Workload    *Workload  `yaml:"workload,omitempty"`    // application traffic over the ByteExpress core instead of flows; the topology is derived from it
	Faults      []Fault    `yaml:"faults,omitempty"`      // failures injected at given instants
	Outputs     Outputs    `yaml:"outputs"`               // what a run writes, and where

	src *source // positions of the nodes it was parsed from; nil if built in Go
}

// Fabric is the network: topology, links, switches, traffic classes, PFC.
type Fabric struct {
	Topology   Topology   `yaml:"topology"`   // how hosts and switches are wired
	Links      Links      `yaml:"links"`      // link rates and propagation delay
	Switch     Switch     `yaml:"switch"`     // the configuration shared by every switch
	Priorities []Priority `yaml:"priorities"` // the 802.1p traffic classes (default: one lossy class, prio 0)
	PFC        PFC        `yaml:"pfc"`        // fabric-wide PFC (802.1Qbb) settings
}

// TopologyKind names a topology family.
type TopologyKind string

// Topology kinds.
const (
	Star      TopologyKind = "star"       // one switch, Topology.Hosts hosts
	LeafSpine TopologyKind = "leaf-spine" // two tiers, every leaf wired to every spine
	FatTree   TopologyKind = "fat-tree"   // three-tier k-ary fat tree
)

var topologyKinds = []string{string(Star), string(LeafSpine), string(FatTree)}

// UnmarshalYAML accepts one of star, leaf-spine, fat-tree.
func (k *TopologyKind) UnmarshalYAML(n *yaml.Node) error {
	return parseEnum(n, (*string)(k), "topology kind", topologyKinds)
}

// Topology says how hosts and switches are wired. Only the counts of its
// Kind may be set. Host indices (used by flows) are contiguous from 0:
// star hosts 0..Hosts-1; leaf-spine host h sits on leaf h/HostsPerLeaf;
// fat-tree host h sits in pod h/(K*K/4) under edge switch
// (h%(K*K/4))/(K/2).
type Topology struct {
	Kind         TopologyKind `yaml:"kind"`                     // topology family: star, leaf-spine or fat-tree
	Hosts        int          `yaml:"hosts,omitempty"`          // star: hosts on the one switch (at least 2)
	Leaves       int          `yaml:"leaves,omitempty"`         // leaf-spine: leaf (ToR) switches (at least 2)
	HostsPerLeaf int          `yaml:"hosts_per_leaf,omitempty"` // leaf-spine: hosts under each leaf
	Spines       int          `yaml:"spines,omitempty"`         // leaf-spine: spine switches; every leaf links to every spine
	K            int          `yaml:"k,omitempty"`              // fat-tree: ports per switch, even
}

// HostCount is the number of hosts the topology has (0 if invalid).
func (t Topology) HostCount() int {
	switch t.Kind {
	case Star:
		return t.Hosts
	case LeafSpine:
		return t.Leaves * t.HostsPerLeaf
	case FatTree:
		return t.K * t.K * t.K / 4
	}
	return 0
}

// Links are the link rates and propagation delay. HostRate applies to
// host-switch links and UplinkRate to switch-switch links; both default to
// Rate.
type Links struct {
	Rate       Rate     `yaml:"rate,omitempty"`        // rate of every link unless overridden
	Delay      Duration `yaml:"delay,omitempty"`       // propagation delay of every link
	HostRate   Rate     `yaml:"host_rate,omitempty"`   // rate of host-to-switch links (default rate); also what a flow's rate: line means
	UplinkRate Rate     `yaml:"uplink_rate,omitempty"` // leaf-spine and fat-tree only
}

// Scheduler is an egress scheduling discipline.
type Scheduler string

// Egress schedulers.
const (
	Strict Scheduler = "strict" // strict priority, 7 highest
	DWRR   Scheduler = "dwrr"   // deficit weighted round robin over Switch.DWRRWeights
)

var schedulers = []string{string(Strict), string(DWRR)}

// UnmarshalYAML accepts one of strict, dwrr.
func (s *Scheduler) UnmarshalYAML(n *yaml.Node) error {
	return parseEnum(n, (*string)(s), "scheduler", schedulers)
}

// Switch is the configuration shared by every switch.
type Switch struct {
	Buffer Size `yaml:"buffer,omitempty"` // shared packet buffer per switch
	// Alpha is the egress dynamic threshold: a queue may hold at most
	// Alpha x (Buffer - total occupancy) bytes; lossy packets above it drop.
	Alpha     Ratio     `yaml:"alpha"`
	Scheduler Scheduler `yaml:"scheduler"` // egress scheduling: strict (priority 7 first) or dwrr
	// DWRRWeights has one weight per priority 0..7 (dwrr only); a class's
	// quantum is its weight times the MTU frame.
	DWRRWeights []int `yaml:"dwrr_weights,omitempty"`
}

// Priority configures one 802.1p traffic class on every switch port.
type Priority struct {
	Prio     int          `yaml:"prio"`          // the 802.1p priority, 0..7; each at most once
	Lossless bool         `yaml:"lossless"`      // lossless (PFC) rather than lossy (drop); needs fabric.pfc.enabled
	PFC      *PriorityPFC `yaml:"pfc,omitempty"` // PFC thresholds of this class per (ingress port, priority); lossless classes only
	ECN      *ECN         `yaml:"ecn,omitempty"` // RED/ECN marking on the egress queues of this class (left out: no marking)
}

// PriorityPFC is the per-(ingress port, priority) PFC accounting of a
// lossless class.
type PriorityPFC struct {
	XOFF Threshold `yaml:"xoff"` // dynamic, or a static size
	// Alpha is the dynamic XOFF factor: pause when the ingress queue
	// exceeds Alpha x (Buffer - total occupancy). Dynamic XOFF only.
	Alpha Ratio `yaml:"alpha,omitempty"`
	// Exactly one of XON (absolute) and XONOffset (resume at XOFF minus
	// the offset) is set.
	XON       Size     `yaml:"xon,omitempty"`
	XONOffset Size     `yaml:"xon_offset,omitempty"` // send XON at xoff minus this offset (default 2 x hosts.mtu when xon is not given)
	Headroom  AutoSize `yaml:"headroom"`             // reserved per (port, priority) for in-flight bytes after XOFF
}

// ECN is RED-style marking on an egress queue: no marks below Kmin, a
// probability rising linearly to Pmax at Kmax, every packet above Kmax.
type ECN struct {
	Kmin Size     `yaml:"kmin"`           // no marking below this egress queue depth
	Kmax Size     `yaml:"kmax"`           // every packet above this queue depth is marked; kmin <= kmax <= buffer
	Pmax Fraction `yaml:"pmax,omitempty"` // marking probability at kmax, rising linearly from 0 at kmin
}

// PFC is the fabric-wide 802.1Qbb configuration.
type PFC struct {
	// Enabled defaults to true; nil before defaults are applied.
	Enabled *bool `yaml:"enabled"`
	// Quanta is the pause time sent in XOFF frames, in units of 512 bit
	// times (1..65535).
	Quanta int `yaml:"quanta,omitempty"`
	// Refresh is how often a paused port re-sends XOFF; auto = half the
	// pause time at that link's rate.
	Refresh  AutoDuration `yaml:"refresh,omitempty"`
	Watchdog *Watchdog    `yaml:"watchdog,omitempty"` // nil: no PFC storm watchdog
}

// On reports whether PFC is enabled (true when unset, the default).
func (p PFC) On() bool { return p.Enabled == nil || *p.Enabled }

// PauseTime is how long one XOFF frame pauses a link of the given rate:
// Quanta x 512 bit times.
// Rounded up to a whole picosecond; 0 for a non-positive rate.
func (p PFC) PauseTime(rate Rate) sim.Time {
	if rate <= 0 || p.Quanta <= 0 {
		return 0
	}
	// quanta x 512 bits x 1e12 ps/s / rate, in 128-bit arithmetic (the
	// product overflows int64 for realistic values).
	hi, lo := bits.Mul64(uint64(p.Quanta)*512, uint64(sim.Second))
	if hi >= uint64(rate) {
		return sim.Never
	}
	q, r := bits.Div64(hi, lo, uint64(rate))
	if r != 0 {
		q++
	}
	if q >= uint64(sim.Never) {
		return sim.Never
	}
	return sim.Time(q)
}

// RefreshInterval is the XOFF refresh period on a link of the given rate.
func (p PFC) RefreshInterval(rate Rate) sim.Time {
	if p.Refresh.Auto {
		return p.PauseTime(rate) / 2
	}
	return p.Refresh.Duration.Time()
}

// Watchdog is the PFC storm watchdog: a queue paused continuously for
// Detect is declared stormed and its pauses are ignored (and its packets
// dropped) until Restore has passed without pause.
type Watchdog struct {
	Detect  Duration `yaml:"detect,omitempty"` // a queue paused continuously this long is declared stormed
	Restore Duration `yaml:"restore"`          // how long a stormed queue ignores pauses before it honours them again
}

// Hosts is the configuration shared by every host.
type Hosts struct {
	MTU Size     `yaml:"mtu,omitempty"` // RoCE path MTU (payload bytes per packet): 256, 512, 1024, 2048 or 4096
	NIC NICModel `yaml:"nic"`           // raw (default) or rnic
}

// Flow is a group of flows: one per (src, dst) pair of the cross product of
// Src and Dst, Count copies each. A raw flow is a paced frame stream from a
// raw host; an rc flow is one RC QP pair streaming WRITEs (or SENDs) with
// Depth messages outstanding; a ud flow is a UD QP pair streaming
// MTU-sized SENDs.
type Flow struct {
	Name      string    `yaml:"name"`              // unique name; instances are named NAME.SRC-DST and #I (default flow<INDEX>)
	Src       HostSet   `yaml:"src"`               // sending hosts
	Dst       HostSet   `yaml:"dst"`               // receiving hosts; no host in both src and dst
	Prio      int       `yaml:"prio"`              // traffic class; must be declared in fabric.priorities
	Transport Transport `yaml:"transport"`         // raw (paced frames, raw hosts), rc (an RC QP pair) or ud (UD QPs)
	Rate      FlowRate  `yaml:"rate"`              // raw: pacing rate (line = the host link rate); rc/ud: line (no pacing) or the payload rate messages are posted at
	Size      Size      `yaml:"size,omitempty"`    // bytes per flow; 0: send until the scenario ends
	Message   Size      `yaml:"message,omitempty"` // rc/ud: bytes per message (work request)
	Op        Op        `yaml:"op,omitempty"`      // rc: write or send
	Depth     int       `yaml:"depth,omitempty"`   // rc/ud: messages outstanding
	Start     Duration  `yaml:"start"`             // when the flows start; before duration
	Count     int       `yaml:"count"`             // parallel copies per (src, dst) pair
}

// Outputs says where and what a run writes.
type Outputs struct {
	Dir            string   `yaml:"dir"`             // directory the run writes into (default out/NAME)
	JSON           *bool    `yaml:"json"`            // default true
	CSV            *bool    `yaml:"csv"`             // default true
	SampleInterval Duration `yaml:"sample_interval"` // period of the queue-depth and rate time series
	// Series selects the time series recorded: auto (the default, also
	// written as an omitted key) the queue-depth series of the deepest
	// queues and the rate series of the first rc/ud flows; all every switch
	// queue's depth series; none no series (no sampling at all). A
	// ps-cluster workload records no series under auto; all adds the
	// latency of its user requests and fetches per sample_interval window
	// (mean and P99) and its hosts' registered memory every
	// sample_interval (the paper's Figures 16 and 5).
	Series SeriesMode `yaml:"series,omitempty"`
	// Queues marks the switch queues a flow scenario records depth series
	// of: shell patterns (* ? [a-z], Go's path.Match: * stops at a /) on
	// queue names SWITCH->PEER/PRIO, as the series and the ports table name
	// them, e.g. "leaf0->*/3"; a pattern without a / marks every priority
	// of the ports SWITCH->PEER it matches, e.g. "edge0.0->h*". Only these
	// queues are sampled, and each that held a frame gets a series, in
	// place of series auto's deepest queues; a pattern that matches no
	// queue is an error.
	Queues []string `yaml:"queues,omitempty"`
	// Flows marks the rc/ud flows a flow scenario records goodput (and
	// DCQCN rate) series of: shell patterns on the flow names (a group's
	// name, then .SRC-DST and #i as the flows table has them), in place of
	// series auto's first 16 flows; a pattern that matches no flow is an
	// error.
	Flows []string `yaml:"flows,omitempty"`
	// Warmup starts the measured interval of rc/ud flows (their goodput
	// and the NIC counters' rates) this long after the run begins.
	Warmup Duration `yaml:"warmup,omitempty"`
}

// ---- value types with a keyword alternative -------------------------------

// FlowRate is a flow's pacing rate: "line" (its source host's link rate) or
// an explicit Rate. The zero value is unset.
type FlowRate struct {
	Line bool
	Rate Rate
}

func (r FlowRate) String() string {
	if r.Line {
		return "line"
	}
	return r.Rate.String()
}

// IsZero reports whether r is unset.
func (r FlowRate) IsZero() bool { return r == FlowRate{} }

// MarshalYAML writes "line" or the rate.
func (r FlowRate) MarshalYAML() (any, error) { return r.String(), nil }

// UnmarshalYAML accepts "line" or a rate.
func (r *FlowRate) UnmarshalYAML(n *yaml.Node) error {
	text, err := scalarText(n, "line or a rate like 10Gbps")
	if err != nil {
		return err
	}
	if strings.TrimSpace(text) == "line" {
		*r = FlowRate{Line: true}
		return nil
	}
	v, err := ParseRate(text)
	if err != nil {
		return &Error{Line: n.Line, Msg: fmt.Sprintf("%q is not a flow rate (use line, or a rate, %s)", text, rateExamples)}
	}
	*r = FlowRate{Rate: v}
	return nil
}

// Threshold is a PFC XOFF threshold: "dynamic" or a static Size. The zero
// value is unset.
type Threshold struct {
	Dynamic bool
	Size    Size
}

func (t Threshold) String() string {
	if t.Dynamic {
		return "dynamic"
	}
	return t.Size.String()
}

// IsZero reports whether t is unset.
func (t Threshold) IsZero() bool { return t == Threshold{} }

// MarshalYAML writes "dynamic" or the size.
func (t Threshold) MarshalYAML() (any, error) { return t.String(), nil }

// UnmarshalYAML accepts "dynamic" or a size.
func (t *Threshold) UnmarshalYAML(n *yaml.Node) error {
	text, err := scalarText(n, "dynamic or a size like 96KiB")
	if err != nil {
		return err
	}
	if strings.TrimSpace(text) == "dynamic" {
		*t = Threshold{Dynamic: true}
		return nil
	}
	v, err := ParseSize(text)
	if err != nil {
		return &Error{Line: n.Line, Msg: fmt.Sprintf("%q is not a threshold (use dynamic, or a size, %s)", text, sizeExamples)}
	}
	*t = Threshold{Size: v}
	return nil
}

// AutoSize is "auto" (derived by the runner) or an explicit Size. The zero
// value is unset.
type AutoSize struct {
	Auto bool
	Size Size
}

func (a AutoSize) String() string {
	if a.Auto {
		return "auto"
	}
	return a.Size.String()
}

// IsZero reports whether a is unset.
func (a AutoSize) IsZero() bool { return a == AutoSize{} }

// MarshalYAML writes "auto" or the size.
func (a AutoSize) MarshalYAML() (any, error) { return a.String(), nil }

// UnmarshalYAML accepts "auto" or a size.
func (a *AutoSize) UnmarshalYAML(n *yaml.Node) error {
	text, err := scalarText(n, "auto or a size like 32KiB")
	if err != nil {
		return err
	}
	if strings.TrimSpace(text) == "auto" {
		*a = AutoSize{Auto: true}
		return nil
	}
	v, err := ParseSize(text)
	if err != nil {
		return &Error{Line: n.Line, Msg: fmt.Sprintf("%q is not a size (use auto, or a size, %s)", text, sizeExamples)}
	}
	*a = AutoSize{Size: v}
	return nil
}

// AutoDuration is "auto" (derived) or an explicit Duration. The zero value
// is unset.
type AutoDuration struct {
	Auto     bool
	Duration Duration
}

func (a AutoDuration) String() string {
	if a.Auto {
		return "auto"
	}
	return a.Duration.String()
}

// IsZero reports whether a is unset.
func (a AutoDuration) IsZero() bool { return a == AutoDuration{} }

// MarshalYAML writes "auto" or the duration.
func (a AutoDuration) MarshalYAML() (any, error) { return a.String(), nil }

// UnmarshalYAML accepts "auto" or a duration.
func (a *AutoDuration) UnmarshalYAML(n *yaml.Node) error {
	text, err := scalarText(n, "auto or a duration like 100us")
	if err != nil {
		return err
	}
	if strings.TrimSpace(text) == "auto" {
		*a = AutoDuration{Auto: true}
		return nil
	}
	v, err := ParseDuration(text)
	if err != nil {
		return &Error{Line: n.Line, Msg: fmt.Sprintf("%q is not a duration (use auto, or a duration, %s)", text, durationExamples)}
	}
	*a = AutoDuration{Duration: v}
	return nil
}

// ---- host sets ------------------------------------------------------------

// HostSet is a list of host indices, written as one index (3), a range
// ("1-7", inclusive), a comma list ("0,2,4-6") or a YAML list of those
// ([0, 2, "4-6"]). Order is kept; a host may not appear twice.
type HostSet []int

const hostSetHint = "use a host index like 3, a range like 1-7, or a list like [0, 2, 4-6]"

// maxHostIndex bounds indices (and so the size of a range) so that a typo
// cannot allocate gigabytes; it is also the largest topology's last host.
const maxHostIndex = maxHosts - 1

// ParseHostSet parses the string form: "3", "1-7", "0,2,4-6".
func ParseHostSet(s string) (HostSet, error) {
	var hs HostSet
	var seen hostBits
	if err := hs.addText(s, &seen); err != nil {
		return nil, err
	}
	return hs, nil
}

// hostBits is a set of host indices 0..maxHostIndex.
type hostBits [(maxHostIndex + 64) / 64]uint64

func (b *hostBits) has(h int) bool { return b[h/64]&(1<<(h%64)) != 0 }
func (b *hostBits) set(h int)      { b[h/64] |= 1 << (h % 64) }

func (h *HostSet) addText(s string, seen *hostBits) error {
	fail := func(reason string) error {
		if reason != "" {
			return &unitError{fmt.Sprintf("%q is not a host list: %s (%s)", s, reason, hostSetHint)}
		}
		return &unitError{fmt.Sprintf("%q is not a host list (%s)", s, hostSetHint)}
	}
	if strings.TrimSpace(s) == "" {
		return &unitError{"empty host list (" + hostSetHint + ")"}
	}
	num := func(p string) (int, error) {
		p = strings.TrimSpace(p)
		if strings.HasPrefix(p, "-") {
			return 0, fail("negative host index")
		}
		if p == "" || strings.TrimLeft(p, "0123456789") != "" || len(p) > 9 {
			return 0, fail("")
		}
		v, _ := strconv.Atoi(p)
		if v > maxHostIndex {
			return 0, fail(fmt.Sprintf("host index %d is above %d", v, maxHostIndex))
		}
		return v, nil
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi := part, part
		if i := strings.Index(part[min(1, len(part)):], "-"); i >= 0 {
			lo, hi = part[:i+1], part[i+2:]
		}
		a, err := num(lo)
		if err != nil {
			return err
		}
		b, err := num(hi)
		if err != nil {
			return err
		}
		if b < a {
			return fail(fmt.Sprintf("range %d-%d ends before it starts", a, b))
		}
		for v := a; v <= b; v++ {
			if seen.has(v) {
				return fail(fmt.Sprintf("host %d is listed twice", v))
			}
			seen.set(v)
			*h = append(*h, v)
		}
	}
	return nil
}

// String formats h compactly: "3", "1-7", "0,2,4-6".
func (h HostSet) String() string {
	var parts []string
	for i := 0; i < len(h); {
		j := i
		for j+1 < len(h) && h[j+1] == h[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", h[i], h[j]))
		} else {
			parts = append(parts, strconv.Itoa(h[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// MarshalYAML writes one index as an integer, anything else in the string
// form.
func (h HostSet) MarshalYAML() (any, error) {
	if len(h) == 1 {
		return h[0], nil
	}
	return h.String(), nil
}

// UnmarshalYAML accepts an index, a range or comma string, or a list.
func (h *HostSet) UnmarshalYAML(n *yaml.Node) error {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	var hs HostSet
	seen := new(hostBits)
	switch {
	case n.Kind == yaml.ScalarNode && n.ShortTag() != "!!null":
		if err := hs.addText(n.Value, seen); err != nil {
			return nodeErr(n, err)
		}
	case n.Kind == yaml.SequenceNode:
		if len(n.Content) == 0 {
			return &Error{Line: n.Line, Msg: "empty host list (" + hostSetHint + ")"}
		}
		for _, item := range n.Content {
			for item.Kind == yaml.AliasNode && item.Alias != nil {
				item = item.Alias
			}
			if item.Kind != yaml.ScalarNode || item.ShortTag() == "!!null" {
				return &Error{Line: item.Line, Msg: fmt.Sprintf("expected a host index or range, got %s (%s)", kindName(item), hostSetHint)}
			}
			if err := hs.addText(item.Value, seen); err != nil {
				return nodeErr(item, err)
			}
		}
	default:
		return &Error{Line: n.Line, Msg: fmt.Sprintf("expected a host list, got %s (%s)", kindName(n), hostSetHint)}
	}
	*h = hs
	return nil
}

// ---- enums ----------------------------------------------------------------

func parseEnum(n *yaml.Node, out *string, what string, allowed []string) error {
	text, err := scalarText(n, what)
	if err != nil {
		return err
	}
	for _, a := range allowed {
		if text == a {
			*out = a
			return nil
		}
	}
	return &Error{Line: n.Line, Msg: fmt.Sprintf("%q is not a %s (allowed: %s)", text, what, strings.Join(allowed, ", "))}
}
