package scenarios

import (
	"fmt"
	pathpkg "path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/besim/besim/sim"
)

// Limits that keep a typo from building an absurd simulation.
const (
	maxHosts         = 65536
	maxFlowInstances = 100_000
	// MaxDuration bounds the virtual time of a run and MaxSamples the
	// sampling ticks (duration / outputs.sample_interval): both bound how
	// long a run takes before it says anything.
	MaxDuration = Duration(10 * sim.Second)
	MaxSamples  = 1_000_000
	// maxFatTreeK is the largest k whose routing tables (5k²/4 switches x
	// k³/4 hosts entries) fit the fabric's cap of 2^26: k = 46 needs 64.4M
	// entries, k = 48 79.6M.
	maxFatTreeK = 46
)

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

const nameRule = "allowed: letters, digits, '.', '_', '-'; starting with a letter or digit; at most 64"

// allowedMTUs are the RoCE path MTUs.
var allowedMTUs = []Size{256, 512, 1024, 2048, 4096}

type validator struct {
	s    *Scenario
	errs ErrorList
}

func (v *validator) bad(path, format string, args ...any) {
	v.errs.add(v.s.Errorf(path, format, args...))
}

// missingOr reports a required field that is absent, or present but zero.
func (v *validator) missingOr(path, zeroMsg, missingMsg string) {
	if v.s.present(path) {
		v.bad(path, "%s", zeroMsg)
	} else {
		v.bad(path, "%s", missingMsg)
	}
}

// Validate checks the semantic rules: positive sizes and durations,
// consistent thresholds (kmin <= kmax, xon <= xoff, pmax in (0, 1]), a
// lossless class only with PFC, hosts in range, no flow to itself, and so
// on. Call it after ApplyDefaults. Each problem is positioned at the field
// that causes it; all problems found are returned (an ErrorList when more
// than one).
func (s *Scenario) Validate() error {
	v := &validator{s: s}
	v.top()
	if s.Benchmark != nil {
		if s.Workload != nil {
			v.bad("workload", "not used with a benchmark (a scenario is a benchmark, a workload, or flows)")
		}
		if len(s.Faults) > 0 {
			v.bad("faults", "not used with a benchmark")
		}
		v.benchmark()
		v.rnic()
		v.dcqcn()
		v.outputs()
		return v.errs.err()
	}
	hosts := v.topology()
	v.links()
	v.switchConfig()
	declared := v.priorities()
	v.pfc()
	v.hostsConfig()
	v.rnic()
	v.dcqcn()
	if s.Workload != nil {
		v.workload()
	} else {
		v.flows(hosts, declared)
	}
	v.faults()
	v.outputs()
	return v.errs.err()
}

func (v *validator) top() {
	s := v.s
	if s.Version != SchemaVersion {
		v.bad("version", "%d is not supported (allowed: %d)", s.Version, SchemaVersion)
	}
	switch {
	case s.Name == "" && !s.present("name"):
		v.bad("name", "missing (required: a short name such as incast-8to1; it names the results directory)")
	case !namePattern.MatchString(s.Name):
		v.bad("name", "%q is not a valid name (%s)", s.Name, nameRule)
	}
	switch {
	case s.Duration == 0 && s.Benchmark != nil && !s.present("duration"):
		// Defaulted by the benchmark's kind; a missing kind is reported there.
	case s.Duration == 0:
		v.missingOr("duration", "0s is not allowed (must be > 0)", "missing (required: how much virtual time to simulate, e.g. duration: 2ms)")
	case s.Duration < 0:
		v.bad("duration", "%s is negative (must be > 0)", s.Duration)
	case s.Duration > MaxDuration:
		v.bad("duration", "%s is too long (at most %s of virtual time: a packet-level simulation of more would run for days)", s.Duration, MaxDuration)
	}
}

// topology returns the host count, or 0 if the topology is invalid (which
// suppresses the host-range checks of flows).
func (v *validator) topology() int {
	t := v.s.Fabric.Topology
	const p = "fabric.topology"
	counts := []struct {
		key string
		val int
	}{{"hosts", t.Hosts}, {"leaves", t.Leaves}, {"hosts_per_leaf", t.HostsPerLeaf}, {"spines", t.Spines}, {"k", t.K}}
	var uses []string
	switch t.Kind {
	case Star:
		uses = []string{"hosts"}
	case LeafSpine:
		uses = []string{"leaves", "hosts_per_leaf", "spines"}
	case FatTree:
		uses = []string{"k"}
	case "":
		v.missingOr(p+".kind", `"" is not a topology kind (allowed: `+strings.Join(topologyKinds, ", ")+")",
			"missing (required; allowed: "+strings.Join(topologyKinds, ", ")+")")
		return 0
	default:
		v.bad(p+".kind", "%q is not a topology kind (allowed: %s)", t.Kind, strings.Join(topologyKinds, ", "))
		return 0
	}
	ok := true
	for _, c := range counts {
		used := false
		for _, u := range uses {
			used = used || u == c.key
		}
		if !used && (c.val != 0 || v.s.present(p+"."+c.key)) {
			v.bad(p+"."+c.key, "not used by kind %s (%s uses: %s)", t.Kind, t.Kind, strings.Join(uses, ", "))
			ok = false
		}
	}
	// atLeast checks one count of the kind.
	atLeast := func(key string, val, lo int, what string) {
		switch {
		case val == 0 && !v.s.present(p+"."+key):
			v.bad(p+"."+key, "missing (required for kind %s: %s, at least %d)", t.Kind, what, lo)
			ok = false
		case val < lo:
			v.bad(p+"."+key, "%d is too small (%s: at least %d)", val, what, lo)
			ok = false
		case val > maxHosts:
			v.bad(p+"."+key, "%d is too large (at most %d)", val, maxHosts)
			ok = false
		}
	}
	switch t.Kind {
	case Star:
		atLeast("hosts", t.Hosts, 2, "the number of hosts")
	case LeafSpine:
		atLeast("leaves", t.Leaves, 2, "the number of leaf switches (for one switch use kind: star)")
		atLeast("hosts_per_leaf", t.HostsPerLeaf, 1, "hosts under each leaf")
		atLeast("spines", t.Spines, 1, "the number of spine switches")
	case FatTree:
		atLeast("k", t.K, 2, "ports per switch, even")
		if ok && (t.K%2 != 0 || t.K > maxFatTreeK) {
			v.bad(p+".k", "%d is not allowed (k must be even, from 2 to %d: larger fat trees need more routing-table entries than the fabric model holds)", t.K, maxFatTreeK)
			ok = false
		}
	}
	if !ok {
		return 0
	}
	if n := t.HostCount(); n > maxHosts {
		v.bad(p, "%d hosts is too many (at most %d)", n, maxHosts)
		return 0
	}
	return t.HostCount()
}

func (v *validator) links() {
	l := v.s.Fabric.Links
	const p = "fabric.links"
	// A knob left out is 0 without the models' defaults (berun): only
	// what the file wrote is checked then.
	positive := func(key string, r Rate) {
		if r < 0 || r == 0 && v.s.present(p+"."+key) {
			v.bad(p+"."+key, "%s is not allowed (must be > 0)", r)
		}
	}
	positive("rate", l.Rate)
	positive("host_rate", l.HostRate)
	if l.Delay < 0 || l.Delay == 0 && v.s.present(p+".delay") {
		v.bad(p+".delay", "%s is not allowed (must be > 0)", l.Delay)
	}
	switch v.s.Fabric.Topology.Kind {
	case LeafSpine, FatTree:
		positive("uplink_rate", l.UplinkRate)
	default:
		if l.UplinkRate != 0 || v.s.present(p+".uplink_rate") {
			v.bad(p+".uplink_rate", "not used by kind %s (it has no switch-to-switch links; uplink_rate is for leaf-spine and fat-tree)", v.s.Fabric.Topology.Kind)
		}
	}
}

func (v *validator) switchConfig() {
	sw := v.s.Fabric.Switch
	const p = "fabric.switch"
	if sw.Buffer < 0 || sw.Buffer == 0 && v.s.present(p+".buffer") {
		v.bad(p+".buffer", "%s is not allowed (must be > 0)", sw.Buffer)
	}
	if sw.Alpha.Num <= 0 || sw.Alpha.Den <= 0 {
		v.bad(p+".alpha", "%s is not allowed (must be > 0, e.g. 1/8)", sw.Alpha)
	}
	switch sw.Scheduler {
	case Strict:
		if len(sw.DWRRWeights) > 0 {
			v.bad(p+".dwrr_weights", "only used with scheduler: dwrr (the scheduler is strict)")
		}
	case DWRR:
		if len(sw.DWRRWeights) != 8 {
			v.bad(p+".dwrr_weights", "%d weights given (need 8, one per priority 0..7)", len(sw.DWRRWeights))
		}
		for i, w := range sw.DWRRWeights {
			if w < 1 {
				v.bad(idx(p+".dwrr_weights", i), "%d is not allowed (weights must be >= 1)", w)
			}
		}
	default:
		v.bad(p+".scheduler", "%q is not a scheduler (allowed: %s)", sw.Scheduler, strings.Join(schedulers, ", "))
	}
}

// priorities returns the declared classes.
func (v *validator) priorities() map[int]bool {
	f := v.s.Fabric
	buffer := f.Switch.Buffer
	declared := map[int]bool{}
	firstAt := map[int]string{}
	for i, pr := range f.Priorities {
		p := idx("fabric.priorities", i)
		switch {
		case pr.Prio < 0 || pr.Prio > 7:
			v.bad(p+".prio", "%d is out of range (allowed: 0 to 7)", pr.Prio)
		case pr.Prio == 0 && v.s.present(p) && !v.s.present(p+".prio"):
			v.bad(p+".prio", "missing (required: the 802.1p priority, 0 to 7)")
		case declared[pr.Prio]:
			v.bad(p+".prio", "priority %d is declared twice (first as %s)", pr.Prio, firstAt[pr.Prio])
		default:
			declared[pr.Prio] = true
			firstAt[pr.Prio] = p
		}
		if pr.Lossless && !f.PFC.On() {
			v.bad(p+".lossless", "a lossless class needs PFC, but fabric.pfc.enabled is false (enable PFC, or set lossless: false)")
		}
		if !pr.Lossless && pr.PFC != nil {
			v.bad(p+".pfc", "PFC thresholds are only for lossless classes (set lossless: true, or remove pfc)")
		}
		if pr.Lossless && pr.PFC != nil {
			v.priorityPFC(p+".pfc", *pr.PFC, buffer)
		}
		if pr.ECN != nil {
			v.ecn(p+".ecn", *pr.ECN, buffer)
		}
	}
	return declared
}

func (v *validator) priorityPFC(p string, pp PriorityPFC, buffer Size) {
	x := pp.XOFF
	switch {
	case x.Dynamic:
		if (!pp.Alpha.IsZero() || v.s.present(p+".alpha")) && (pp.Alpha.Num <= 0 || pp.Alpha.Den <= 0) {
			v.bad(p+".alpha", "%s is not allowed (must be > 0, e.g. 1/8)", pp.Alpha)
		}
	case x.Size <= 0:
		v.bad(p+".xoff", "%s is not allowed (use dynamic, or a size > 0)", x.Size)
	default:
		if !pp.Alpha.IsZero() {
			v.bad(p+".alpha", "only used with xoff: dynamic (xoff is a static %s)", x.Size)
		}
		if buffer > 0 && x.Size > buffer {
			v.bad(p+".xoff", "%s is above the switch buffer %s", x.Size, buffer)
		}
	}
	switch {
	case pp.XON != 0 && pp.XONOffset != 0:
		v.bad(p+".xon_offset", "set either xon (absolute) or xon_offset (below xoff), not both")
	case pp.XON < 0:
		v.bad(p+".xon", "%s is negative", pp.XON)
	case pp.XONOffset < 0:
		v.bad(p+".xon_offset", "%s is negative", pp.XONOffset)
	case pp.XON == 0 && pp.XONOffset == 0 && v.s.Hosts.MTU != 0:
		// (Without the models' defaults the MTU, and so the default
		// offset, is unknown: nothing to check.)
		v.bad(p+".xon_offset", "missing (set xon or xon_offset)")
	case !x.Dynamic && x.Size > 0 && pp.XON > x.Size:
		v.bad(p+".xon", "%s is above xoff %s (need xon <= xoff)", pp.XON, x.Size)
	case !x.Dynamic && x.Size > 0 && pp.XONOffset >= x.Size:
		v.bad(p+".xon_offset", "%s is not below xoff %s (the resume threshold would be <= 0)", pp.XONOffset, x.Size)
	}
	h := pp.Headroom
	switch {
	case h.Auto:
	case h.Size <= 0:
		v.bad(p+".headroom", "%s is not allowed (use auto, or a size > 0)", h.Size)
	case buffer > 0 && h.Size > buffer:
		v.bad(p+".headroom", "%s is above the switch buffer %s", h.Size, buffer)
	}
}

func (v *validator) ecn(p string, e ECN, buffer Size) {
	ok := true
	for _, k := range []struct {
		key string
		val Size
	}{{"kmin", e.Kmin}, {"kmax", e.Kmax}} {
		switch {
		case k.val == 0:
			v.missingOr(p+"."+k.key, "0B is not allowed (must be > 0)", "missing (required: a queue depth such as "+map[string]string{"kmin": "5KB", "kmax": "200KB"}[k.key]+")")
			ok = false
		case k.val < 0:
			v.bad(p+"."+k.key, "%s is negative (must be > 0)", k.val)
			ok = false
		}
	}
	if ok && e.Kmin > e.Kmax {
		v.bad(p+".kmin", "%s is above kmax %s (need kmin <= kmax)", e.Kmin, e.Kmax)
	}
	if ok && buffer > 0 && e.Kmax > buffer {
		v.bad(p+".kmax", "%s is above the switch buffer %s (the queue can never reach it)", e.Kmax, buffer)
	}
	if (e.Pmax != 0 || v.s.present(p+".pmax")) && !(e.Pmax > 0 && e.Pmax <= 1) {
		v.bad(p+".pmax", "%s is out of range (allowed: above 0%%, at most 100%%)", e.Pmax)
	}
}

func (v *validator) pfc() {
	pfc := v.s.Fabric.PFC
	const p = "fabric.pfc"
	if !pfc.On() {
		if pfc.Quanta != 0 || v.s.present(p+".quanta") {
			v.bad(p+".quanta", "only used when PFC is enabled (fabric.pfc.enabled is false)")
		}
		if !pfc.Refresh.IsZero() || v.s.present(p+".refresh") {
			v.bad(p+".refresh", "only used when PFC is enabled (fabric.pfc.enabled is false)")
		}
		if pfc.Watchdog != nil {
			v.bad(p+".watchdog", "only used when PFC is enabled (fabric.pfc.enabled is false)")
		}
		return
	}
	if pfc.Quanta == 0 && !v.s.present(p+".quanta") {
		// Left out without the models' defaults.
	} else if pfc.Quanta < 1 || pfc.Quanta > 65535 {
		v.bad(p+".quanta", "%d is out of range (allowed: 1 to 65535, in units of 512 bit times)", pfc.Quanta)
	} else if !pfc.Refresh.Auto {
		if pfc.Refresh.Duration <= 0 {
			v.bad(p+".refresh", "%s is not allowed (use auto, or a duration > 0)", pfc.Refresh.Duration)
		} else if fastest := v.fastestLink(); fastest > 0 {
			if pause := pfc.PauseTime(fastest); Duration(pause) <= pfc.Refresh.Duration {
				v.bad(p+".refresh", "%s is not shorter than the pause time of %d quanta at %s (%s): pauses would lapse between refreshes (use auto)",
					pfc.Refresh.Duration, pfc.Quanta, fastest, Duration(pause))
			}
		}
	}
	if w := pfc.Watchdog; w != nil {
		if w.Detect < 0 || w.Detect == 0 && v.s.present(p+".watchdog.detect") {
			v.bad(p+".watchdog.detect", "%s is not allowed (must be > 0)", w.Detect)
		}
		if w.Restore <= 0 {
			v.bad(p+".watchdog.restore", "%s is not allowed (must be > 0)", w.Restore)
		}
	}
}

// fastestLink is the highest link rate in the fabric (0 if none is valid).
func (v *validator) fastestLink() Rate {
	l := v.s.Fabric.Links
	return max(l.Rate, l.HostRate, l.UplinkRate, 0)
}

func (v *validator) hostsConfig() {
	if (v.s.Hosts.MTU != 0 || v.s.present("hosts.mtu")) && !validMTU(v.s.Hosts.MTU) {
		v.bad("hosts.mtu", "%d is not a RoCE MTU (allowed: 256, 512, 1024, 2048, 4096)", int64(v.s.Hosts.MTU))
	}
	switch v.s.Hosts.NIC {
	case RawNIC, RNICModel:
	default:
		v.bad("hosts.nic", "%q is not a NIC model (allowed: %s)", v.s.Hosts.NIC, strings.Join(nicModels, ", "))
	}
}

func validMTU(m Size) bool {
	for _, a := range allowedMTUs {
		if m == a {
			return true
		}
	}
	return false
}

func (v *validator) flows(hosts int, declared map[int]bool) {
	s := v.s
	if len(s.Flows) == 0 {
		v.missingOr("flows", "empty list (add at least one flow)", "missing (required: at least one flow, e.g. flows: [{src: 0, dst: 1}])")
		return
	}
	var declaredList []string
	for p := range 8 {
		if declared[p] {
			declaredList = append(declaredList, strconv.Itoa(p))
		}
	}
	names := map[string]string{}
	total := 0
	for i, f := range s.Flows {
		p := idx("flows", i)
		if !namePattern.MatchString(f.Name) {
			v.bad(p+".name", "%q is not a valid name (%s)", f.Name, nameRule)
		} else if first, dup := names[f.Name]; dup {
			v.bad(p+".name", "%q is already the name of %s (names must be unique)", f.Name, first)
		} else {
			names[f.Name] = p
		}
		for _, end := range []struct {
			key string
			set HostSet
		}{{"src", f.Src}, {"dst", f.Dst}} {
			if len(end.set) == 0 {
				v.missingOr(p+"."+end.key, "empty host list", "missing (required: a host index, range or list, e.g. 1-7)")
				continue
			}
			if hosts == 0 {
				continue // topology invalid: already reported
			}
			for _, h := range end.set {
				if h < 0 || h >= hosts {
					v.bad(p+"."+end.key, "host %d is out of range (the %s topology has hosts 0-%d)", h, s.Fabric.Topology.Kind, hosts-1)
					break
				}
			}
		}
		var inSrc hostBits
		for _, a := range f.Src {
			if a >= 0 && a <= maxHostIndex {
				inSrc.set(a)
			}
		}
		for _, b := range f.Dst {
			if b >= 0 && b <= maxHostIndex && inSrc.has(b) {
				v.bad(p+".dst", "host %d would send to itself (src and dst both contain %d)", b, b)
				break
			}
		}
		switch {
		case f.Prio < 0 || f.Prio > 7:
			v.bad(p+".prio", "%d is out of range (allowed: 0 to 7)", f.Prio)
		case !declared[f.Prio]:
			v.bad(p+".prio", "priority %d is not declared in fabric.priorities (declared: %s)", f.Prio, strings.Join(declaredList, ", "))
		}
		v.flowTransport(p, f)
		switch r := f.Rate; {
		case r.Line:
		case r.Rate <= 0:
			v.bad(p+".rate", "%s is not allowed (use line, or a rate > 0)", r.Rate)
		case s.Fabric.Links.HostRate > 0 && r.Rate > s.Fabric.Links.HostRate:
			v.bad(p+".rate", "%s is above the host link rate %s (use line for full speed)", r.Rate, s.Fabric.Links.HostRate)
		}
		switch {
		case f.Size < 0:
			v.bad(p+".size", "%s is negative", f.Size)
		case f.Size == 0 && s.present(p+".size"):
			v.bad(p+".size", "0B is not allowed (must be > 0; omit size to send until the scenario ends)")
		}
		switch {
		case f.Start < 0:
			v.bad(p+".start", "%s is negative", f.Start)
		case s.Duration > 0 && f.Start >= s.Duration:
			v.bad(p+".start", "%s is not before the end of the scenario (duration %s)", f.Start, s.Duration)
		}
		if f.Count < 1 {
			v.bad(p+".count", "%d is not allowed (must be >= 1)", f.Count)
		} else if f.Count <= maxFlowInstances {
			total += len(f.Src) * len(f.Dst) * f.Count
		} else {
			total = maxFlowInstances + 1
		}
		if total > maxFlowInstances {
			v.bad(p, "the flows expand to more than %d (src x dst x count)", maxFlowInstances)
			return
		}
	}
}

func (v *validator) outputs() {
	o := v.s.Outputs
	if o.Dir == "" && v.s.Name != "" {
		v.bad("outputs.dir", "empty (omit the key for the default %s/NAME)", defaultOutputRoot)
	}
	switch {
	case o.Warmup == 0 && !v.s.present("outputs.warmup"):
	case v.s.Benchmark != nil:
		v.bad("outputs.warmup", "not used with a benchmark (use benchmark.warmup)")
	case v.s.Hosts.NIC != RNICModel:
		v.bad("outputs.warmup", "only used with hosts.nic: rnic (it starts the measured interval of rc and ud flows)")
	case o.Warmup < 0:
		v.bad("outputs.warmup", "%s is negative", o.Warmup)
	case v.s.Duration > 0 && o.Warmup >= v.s.Duration:
		v.bad("outputs.warmup", "%s is not before the end of the scenario (duration %s)", o.Warmup, v.s.Duration)
	}
	switch {
	case o.SampleInterval <= 0:
		v.bad("outputs.sample_interval", "%s is not allowed (must be > 0)", o.SampleInterval)
	case v.s.Duration > 0 && o.SampleInterval > v.s.Duration:
		v.bad("outputs.sample_interval", "%s is longer than the scenario (duration %s)", o.SampleInterval, v.s.Duration)
	case v.s.Duration > 0 && int64(v.s.Duration/o.SampleInterval) > MaxSamples:
		least := (v.s.Duration + MaxSamples - 1) / MaxSamples
		v.bad("outputs.sample_interval", "%s samples the %s run %d times (at most %d: use at least %s)", o.SampleInterval, v.s.Duration, int64(v.s.Duration/o.SampleInterval), MaxSamples, least)
	}
	v.marks("outputs.queues", o.Queues, "switch queues (SWITCH->PEER/PRIO)")
	v.marks("outputs.flows", o.Flows, "rc/ud flows")
}

// marks checks a list of series marks (outputs.queues, outputs.flows) at
// path: shell patterns, in a flow scenario that records series; flow
// patterns must each name a flow (queue names exist only once the fabric
// is built, which checks those).
func (v *validator) marks(path string, patterns []string, what string) {
	if len(patterns) == 0 {
		if v.s.present(path) {
			v.bad(path, "empty (omit the key to record series auto's choice of %s)", what)
		}
		return
	}
	s := v.s
	switch {
	case s.Benchmark != nil || s.Workload != nil:
		v.bad(path, "only a flow scenario (flows:) records series of marked %s", what)
		return
	case s.Outputs.Series == SeriesNone:
		v.bad(path, "marks %s to record, but outputs.series is none (no sampling): remove one", what)
		return
	case path == "outputs.queues" && s.Outputs.Series == SeriesAll:
		v.bad(path, "outputs.series all records every switch queue already: remove one")
		return
	case path == "outputs.flows" && s.Hosts.NIC != RNICModel:
		v.bad(path, "only rc and ud flows (hosts.nic: rnic) record series")
		return
	}
	var names []string
	if path == "outputs.flows" && len(v.errs) == 0 { // the flows are valid: their names exist
		for _, fi := range s.ExpandFlows() {
			names = append(names, fi.Name)
		}
	}
	for i, p := range patterns {
		if _, err := pathpkg.Match(p, ""); err != nil || p == "" {
			v.bad(idx(path, i), "%q is not a shell pattern (allowed: text with * ? [a-z], as Go's path.Match; names %s)", p, what)
			continue
		}
		if names != nil && !slices.ContainsFunc(names, func(n string) bool { ok, _ := pathpkg.Match(p, n); return ok }) {
			v.bad(idx(path, i), "%q matches no flow (the flows are named %s)", p, examples(names, 3))
		}
	}
}

// examples lists the first n of names, quoted, and how many more there are.
func examples(names []string, n int) string {
	var b strings.Builder
	for i, name := range names[:min(n, len(names))] {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(name))
	}
	if len(names) > n {
		fmt.Fprintf(&b, " and %d more", len(names)-n)
	}
	return b.String()
}

// ---- expansion ------------------------------------------------------------

// FlowInstance is one concrete flow of a Flow group.
type FlowInstance struct {
	Name  string // the group's name, plus ".SRC-DST" for groups of several pairs and "#i" for count > 1
	Group int    // index into Scenario.Flows
	Src   int
	Dst   int
	Prio  int
	Rate  Rate // resolved: "line" is the host link rate
	Size  Size // 0: until the scenario ends
	Start Duration

	Transport Transport
	// Line is rate: line. A raw flow then paces at the host link rate (Rate);
	// an rc or ud flow is not paced by its application at all (the NIC and
	// its congestion control decide).
	Line    bool
	Message Size // rc/ud
	Op      Op   // rc
	Depth   int  // rc/ud
}

// ExpandFlows lists every flow instance, in file order: for each group,
// sources in order, then destinations, then copies. Call it on a valid
// scenario.
func (s *Scenario) ExpandFlows() []FlowInstance {
	var out []FlowInstance
	for gi, f := range s.Flows {
		pairs := len(f.Src) * len(f.Dst)
		rate := f.Rate.Rate
		if f.Rate.Line {
			rate = s.Fabric.Links.HostRate
		}
		for _, a := range f.Src {
			for _, b := range f.Dst {
				for k := range f.Count {
					name := f.Name
					if pairs > 1 {
						name += fmt.Sprintf(".%d-%d", a, b)
					}
					if f.Count > 1 {
						name += fmt.Sprintf("#%d", k)
					}
					out = append(out, FlowInstance{
						Name: name, Group: gi, Src: a, Dst: b, Prio: f.Prio,
						Rate: rate, Size: f.Size, Start: f.Start,
						Transport: f.Transport, Line: f.Rate.Line, Message: f.Message, Op: f.Op, Depth: f.Depth,
					})
				}
			}
		}
	}
	return out
}
