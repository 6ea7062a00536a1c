package scenarios

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/besim/besim/sim"
)

// This file holds the faults section: failures injected at given instants
// (package faults; paper §7). Times are from the start of the measured
// interval (after connection setup and warmup for workloads, from 0 for
// flow scenarios).

// FaultKind names a fault.
type FaultKind string

// Fault kinds (package faults documents each).
const (
	FaultLinkDown  FaultKind = "link-down"
	FaultLinkUp    FaultKind = "link-up"
	FaultLinkFlap  FaultKind = "link-flap"
	FaultLoss      FaultKind = "loss"
	FaultHostCrash FaultKind = "host-crash"
	FaultQPError   FaultKind = "qp-error"
	FaultPFCStorm  FaultKind = "pfc-storm"
)

var faultKinds = []string{string(FaultLinkDown), string(FaultLinkUp), string(FaultLinkFlap), string(FaultLoss),
	string(FaultHostCrash), string(FaultQPError), string(FaultPFCStorm)}

// UnmarshalYAML accepts the fault kinds.
func (k *FaultKind) UnmarshalYAML(n *yaml.Node) error {
	return parseEnum(n, (*string)(k), "fault kind", faultKinds)
}

// LossFrames selects the frames a loss fault hits (package faults).
type LossFrames string

// Frame selections of a loss fault.
const (
	// FramesAll: every frame (of prio, when given: then not PFC frames):
	// data, ACKs and NAKs, CNPs.
	FramesAll LossFrames = "all"
	// FramesData: data frames only (RDMA requests and READ responses, raw
	// flow frames, TCP segments); ACKs, NAKs, CNPs and PFC frames pass.
	FramesData LossFrames = "data"
)

var lossFrames = []string{string(FramesAll), string(FramesData)}

// UnmarshalYAML accepts all and data.
func (f *LossFrames) UnmarshalYAML(n *yaml.Node) error {
	return parseEnum(n, (*string)(f), "loss frame selection", lossFrames)
}

// LossDirection selects the directions of the target link a loss fault
// hits, seen from the target (the host, or the switch of the switch port).
type LossDirection string

// Directions of a loss fault.
const (
	DirBoth LossDirection = "both"
	DirOut  LossDirection = "out" // frames the target sends (host -> switch; switch port -> its peer)
	DirIn   LossDirection = "in"  // frames the target receives
)

var lossDirections = []string{string(DirBoth), string(DirOut), string(DirIn)}

// UnmarshalYAML accepts both, out and in.
func (d *LossDirection) UnmarshalYAML(n *yaml.Node) error {
	return parseEnum(n, (*string)(d), "loss direction", lossDirections)
}

// Fault is one injected failure. Its target is a host (for link faults:
// the host's access link) or a switch port's link (switch and port).
type Fault struct {
	Kind     FaultKind `yaml:"kind"`               // the failure: link-down, link-up, link-flap, loss, host-crash, qp-error or pfc-storm
	At       Duration  `yaml:"at"`                 // when it happens, from the start of the measured interval
	Host     *int      `yaml:"host,omitempty"`     // the target host (for link faults: its access link)
	Switch   *int      `yaml:"switch,omitempty"`   // the target switch (with port): the link on that switch port
	Port     *int      `yaml:"port,omitempty"`     // the port of switch whose link is the target
	Duration Duration  `yaml:"duration,omitempty"` // how long it lasts (0: until undone, or to the end)
	Period   Duration  `yaml:"period,omitempty"`   // link-flap: time between the starts of two flaps
	Count    int       `yaml:"count,omitempty"`    // link-flap: how many flaps
	Drop     Fraction  `yaml:"drop,omitempty"`     // loss: probability that a frame it hits is lost
	Corrupt  Fraction  `yaml:"corrupt,omitempty"`  // loss: probability that a frame it hits is discarded for a bad FCS
	Prio     *int      `yaml:"prio,omitempty"`     // loss: the priority hit (default every one); pfc-storm: the priority paused (default 3)
	// Loss only; left out they mean all and both (not filled in, so that
	// a scenario without them prints as written).
	Frames    LossFrames    `yaml:"frames,omitempty"`    // which frames: all, or data only
	Direction LossDirection `yaml:"direction,omitempty"` // which way: both, out (sent by the target) or in
}

// faultKeys are the keys each kind uses besides kind and at.
var faultKeys = map[FaultKind][]string{
	FaultLinkDown:  {"host", "switch", "port", "duration"},
	FaultLinkUp:    {"host", "switch", "port"},
	FaultLinkFlap:  {"host", "switch", "port", "duration", "period", "count"},
	FaultLoss:      {"host", "switch", "port", "drop", "corrupt", "prio", "frames", "direction", "duration"},
	FaultHostCrash: {"host", "duration"},
	FaultQPError:   {"host"},
	FaultPFCStorm:  {"host", "prio", "duration"},
}

// Link-flap bounds: each flap is two logged steps (the faults table).
const (
	MinFlapPeriod = Duration(sim.Microsecond)
	MaxFlapCount  = 10000
)

// hostFault reports whether k needs the host models of a workload with
// RPC recovery (kind failover).
func (k FaultKind) hostFault() bool { return k == FaultHostCrash || k == FaultQPError }

// SwitchCount is the number of switches of the topology (0 if invalid).
func (t Topology) SwitchCount() int {
	switch t.Kind {
	case Star:
		return 1
	case LeafSpine:
		return t.Leaves + t.Spines
	case FatTree:
		return 5 * t.K * t.K / 4
	}
	return 0
}

func (d *defaulter) faults() {
	for i := range d.s.Faults {
		f := &d.s.Faults[i]
		if f.Kind == FaultPFCStorm && f.Prio == nil {
			p := trafficPrio
			f.Prio = &p
		}
	}
}

func (v *validator) faults() {
	s := v.s
	hosts, switches := s.Fabric.Topology.HostCount(), s.Fabric.Topology.SwitchCount()
	for i := range s.Faults {
		f := &s.Faults[i]
		p := fmt.Sprintf("faults[%d]", i)
		keys, ok := faultKeys[f.Kind]
		if !ok {
			v.missingOr(p+".kind", fmt.Sprintf("%q is not a fault kind (allowed: %s)", f.Kind, strings.Join(faultKinds, ", ")),
				"missing (required; allowed: "+strings.Join(faultKinds, ", ")+")")
			continue
		}
		// prio counts as set only when written: pfc-storm's default fills it.
		set := []keySet{{"host", f.Host != nil}, {"switch", f.Switch != nil}, {"port", f.Port != nil}, {"duration", f.Duration != 0},
			{"period", f.Period != 0}, {"count", f.Count != 0}, {"drop", f.Drop != 0}, {"corrupt", f.Corrupt != 0}, {"prio", false},
			{"frames", f.Frames != ""}, {"direction", f.Direction != ""}}
		v.unusedKeys(p, set, keys, "kind "+string(f.Kind), string(f.Kind)+" uses: at, "+strings.Join(keys, ", "))
		if !s.present(p + ".at") {
			v.bad(p+".at", "missing (required: when the fault strikes, from the start of the measured interval)")
		}
		if f.At < 0 || f.Duration < 0 || f.Period < 0 {
			v.bad(p, "at, duration and period must be >= 0")
		}
		// A fault at or after the end of the measured interval never
		// fires: say so rather than run without it.
		if s.Duration > 0 && f.At >= s.Duration && s.present(p+".at") {
			v.bad(p+".at", "%s is not before the end of the run (duration %s): the fault would never fire", f.At, s.Duration)
		}
		switch {
		case f.Host != nil && (f.Switch != nil || f.Port != nil):
			v.bad(p+".host", "give a host, or a switch and a port, not both")
		case f.Host != nil:
			v.countRange(p+".host", *f.Host, 0, max(hosts-1, 0))
		case f.Switch != nil && f.Port != nil:
			v.countRange(p+".switch", *f.Switch, 0, max(switches-1, 0))
			v.countRange(p+".port", *f.Port, 0, 1<<16)
		case f.Switch != nil || f.Port != nil:
			v.bad(p+".switch", "a switch port needs both switch and port")
		default:
			what := "host"
			if keys[len(keys)-1] != "host" && f.Kind != FaultPFCStorm {
				what = "host, or switch and port"
			}
			v.bad(p+".host", "missing (required: the target %s)", what)
		}
		switch f.Kind {
		case FaultLinkFlap:
			if f.Duration <= 0 || f.Period <= f.Duration || f.Count < 1 {
				v.bad(p, "a link-flap needs 0 < duration < period and count >= 1 (down for duration, every period, count times)")
			} else if f.Period < MinFlapPeriod {
				v.bad(p+".period", "%s is too short (at least %s)", f.Period, MinFlapPeriod)
			} else if f.Count > MaxFlapCount {
				v.bad(p+".count", "%d is too large (at most %d: each flap is a logged fault step)", f.Count, MaxFlapCount)
			} else if s.Duration > 0 && f.At < s.Duration {
				// Every flap must start before the end: the ones after
				// it would never fire. This also bounds count by
				// duration / period.
				fit := int64((s.Duration-f.At-1)/f.Period) + 1
				if int64(f.Count) > fit {
					v.bad(p+".count", "%d flaps every %s from %s do not fit before the end of the run (duration %s): at most %d would fire", f.Count, f.Period, f.At, s.Duration, fit)
				}
			}
		case FaultLoss:
			if f.Drop < 0 || f.Corrupt < 0 || f.Drop+f.Corrupt > 1 || f.Drop+f.Corrupt == 0 {
				v.bad(p+".drop", "drop %v and corrupt %v: each a fraction >= 0, their sum in (0, 100%%]", f.Drop.Float64(), f.Corrupt.Float64())
			}
		}
		if f.Prio != nil {
			v.countRange(p+".prio", *f.Prio, 0, 7)
		}
		if f.Kind.hostFault() && (s.Workload == nil || s.Workload.Kind != Failover) {
			v.bad(p+".kind", "%s needs hosts with the RPC recovery layer: use workload kind failover", f.Kind)
		}
		if s.Workload != nil && s.Workload.Kind == PSCluster && s.Workload.Transport == OverTCP && f.Kind == FaultPFCStorm {
			v.bad(p+".kind", "pfc-storm needs a lossless class; transport tcp runs on a lossy one")
		}
	}
}
