// Package faults injects the failures of the paper's §7 into a simulated
// cluster at given instants: a link taken down and brought back, a port
// flapping, a link that drops or corrupts a fraction of its frames, a host
// that crashes (and, where the host model supports it, restarts), QPs
// moved to the error state, and a misbehaving NIC that floods PFC pauses
// (a PFC storm, which the switches' storm watchdog must contain). It only
// schedules: the models (fabric links, hosts, the RNIC, the watchdog) do
// the failing, and the workload measures detection and recovery.
package faults

import (
	"errors"
	"fmt"

	"github.com/besim/besim/fabric"
	"github.com/besim/besim/sim"
)

// Kind is a fault.
type Kind string

// Faults, with the frames each touches.
const (
	// LinkDown: the target link, both directions, until a link-up (or for
	// Duration). Every frame arriving over it is lost: data, ACK/NAK, CNP
	// and PFC frames, every priority.
	LinkDown Kind = "link-down"
	// LinkUp brings the target link back.
	LinkUp Kind = "link-up"
	// LinkFlap: down (as LinkDown) for Duration, every Period, Count times.
	LinkFlap Kind = "link-flap"
	// Loss: frames dropped (Drop) or corrupted (Corrupt) on the target
	// link, for Duration (0: to the end). Which frames: without Prios
	// every frame (data, ACK/NAK, CNP, PFC); with Prios every frame of
	// those priorities but PFC frames (data, ACKs and NAKs, CNPs sent on
	// them); DataOnly narrows either to data frames. Dir picks the link's
	// directions.
	Loss Kind = "loss"
	// HostCrash: the host stops (NIC, threads, side channel); restarts
	// after Duration if set and supported. No frame on a link is touched:
	// the crashed NIC discards what reaches it and sends nothing.
	HostCrash Kind = "host-crash"
	// QPError: the host's live QPs move to the error state (a fatal RNIC
	// error); no frame on a link is touched.
	QPError Kind = "qp-error"
	// PFCStorm: the host's NIC asserts pause on Prio for Duration (0: to
	// the end). It adds PFC frames; it drops none.
	PFCStorm Kind = "pfc-storm"
)

// Dir selects the directions of a link a loss fault hits, seen from its
// target (the host, or the switch of the switch port).
type Dir uint8

// Directions.
const (
	Both Dir = iota // both directions
	Out             // frames the target sends: host -> switch, or switch port -> its peer
	In              // frames the target receives
)

func (d Dir) String() string { return [...]string{"both", "out", "in"}[d] }

// Kinds lists every fault kind.
var Kinds = []Kind{LinkDown, LinkUp, LinkFlap, Loss, HostCrash, QPError, PFCStorm}

// Spec is one fault. The target is a host (its access link, for link
// faults) or, with Switch >= 0, the link on port Port of switch Switch.
type Spec struct {
	Kind     Kind
	At       sim.Time
	Host     int
	Switch   int // -1: the target is Host
	Port     int
	Duration sim.Time
	Period   sim.Time
	Count    int
	Drop     float64
	Corrupt  float64
	Prio     int   // pfc-storm: the paused priority
	Prios    uint8 // loss: the priorities it hits (0: all)
	DataOnly bool  // loss: data frames only (no ACK/NAK, CNP or PFC frames)
	Dir      Dir   // loss: the directions it hits (Both, Out, In)
}

// Host is what host faults need from a host model.
type Host interface {
	Crash(at sim.Time)
}

// Restarter is a host that can come back after a crash.
type Restarter interface {
	Restart(at sim.Time)
}

// QPFailer is a host whose QPs can be failed; FailQPs returns how many.
type QPFailer interface {
	FailQPs() int
}

// Event is one applied step of a fault.
type Event struct {
	At   sim.Time
	What string
}

// Injector holds the scheduled faults of one simulation.
type Injector struct {
	k     *sim.Kernel
	net   *fabric.Network
	hosts []Host
	seed  uint64
	specs []Spec
	hid   sim.HandlerID
	// Log is every fault step applied, in time order.
	Log []Event
}

// Actions encoded in an event tag: spec index << 8 | action.
const (
	actApply = iota
	actRevert
)

// Schedule validates specs against the network and hosts (hosts[i] is the
// model on fabric host i; nil entries cannot take host faults) and
// schedules them. seed names the random streams of lossy links.
func Schedule(k *sim.Kernel, net *fabric.Network, hosts []Host, seed uint64, specs []Spec) (*Injector, error) {
	in := &Injector{k: k, net: net, hosts: hosts, seed: seed, specs: append([]Spec(nil), specs...)}
	var errs []error
	for i := range specs {
		if err := in.check(&specs[i]); err != nil {
			errs = append(errs, fmt.Errorf("faults[%d] (%s): %w", i, specs[i].Kind, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	in.hid = k.Register(in)
	for i, s := range specs {
		k.Post(max(s.At, k.Now()), in.hid, uint64(i)<<8|actApply)
	}
	return in, nil
}

func (in *Injector) check(s *Spec) error {
	nh := len(in.net.Hosts)
	switch s.Kind {
	case LinkDown, LinkUp, LinkFlap, Loss:
		if _, _, err := in.links(s); err != nil {
			return err
		}
	case HostCrash, QPError, PFCStorm:
		if s.Switch >= 0 {
			return errors.New("targets a host, not a switch port")
		}
		if s.Host < 0 || s.Host >= nh {
			return fmt.Errorf("host %d: the fabric has hosts 0..%d", s.Host, nh-1)
		}
	default:
		return fmt.Errorf("unknown kind (allowed: %v)", Kinds)
	}
	h := func() Host {
		if s.Host < len(in.hosts) {
			return in.hosts[s.Host]
		}
		return nil
	}
	switch s.Kind {
	case HostCrash:
		if h() == nil {
			return fmt.Errorf("host %d has no host model that can crash", s.Host)
		}
		if _, ok := h().(Restarter); s.Duration > 0 && !ok {
			return fmt.Errorf("host %d's model cannot restart (duration must be 0)", s.Host)
		}
	case QPError:
		if _, ok := h().(QPFailer); !ok {
			return fmt.Errorf("host %d has no QPs (qp-error needs the RDMA transport)", s.Host)
		}
	case PFCStorm:
		if s.Prio < 0 || s.Prio >= fabric.NumPrio {
			return fmt.Errorf("prio %d: must be 0..7", s.Prio)
		}
	case LinkFlap:
		if s.Duration <= 0 || s.Period <= s.Duration || s.Count < 1 {
			return fmt.Errorf("needs 0 < duration < period and count >= 1 (got %v, %v, %d)", s.Duration, s.Period, s.Count)
		}
	case Loss:
		if s.Drop < 0 || s.Corrupt < 0 || s.Drop+s.Corrupt > 1 || s.Drop+s.Corrupt == 0 {
			return fmt.Errorf("drop %v + corrupt %v: need each >= 0 and 0 < sum <= 1", s.Drop, s.Corrupt)
		}
		if s.Dir > In {
			return fmt.Errorf("direction %d: must be Both, Out or In", s.Dir)
		}
	}
	if s.Kind != Loss && (s.DataOnly || s.Dir != Both) {
		return errors.New("DataOnly and Dir apply to loss faults only")
	}
	if s.At < 0 || s.Duration < 0 {
		return errors.New("at and duration must be >= 0")
	}
	return nil
}

// links resolves a link fault's two directions.
func (in *Injector) links(s *Spec) (*fabric.Link, *fabric.Link, error) {
	n := in.net
	var a, b fabric.NodeID
	if s.Switch >= 0 {
		if s.Switch >= len(n.Switches) {
			return nil, nil, fmt.Errorf("switch %d: the fabric has switches 0..%d", s.Switch, len(n.Switches)-1)
		}
		sw := n.Switches[s.Switch]
		if s.Port < 0 || s.Port >= len(sw.Ports) {
			return nil, nil, fmt.Errorf("port %d: switch %d has ports 0..%d", s.Port, s.Switch, len(sw.Ports)-1)
		}
		a, b = sw.ID, sw.Ports[s.Port].Peer
	} else {
		if s.Host < 0 || s.Host >= len(n.Hosts) {
			return nil, nil, fmt.Errorf("host %d: the fabric has hosts 0..%d", s.Host, len(n.Hosts)-1)
		}
		hp := n.Hosts[s.Host]
		a = hp.Node()
		b, _ = hp.Peer()
	}
	return n.Link(a, b), n.Link(b, a), nil
}

// target names the fault's target for the log.
func (in *Injector) target(s *Spec) string {
	if s.Switch >= 0 {
		return fmt.Sprintf("%s port %d", in.net.Switches[s.Switch].Name, s.Port)
	}
	return in.net.NodeName(in.net.Hosts[s.Host].Node())
}

// OnEvent applies or reverts one fault step.
func (in *Injector) OnEvent(now sim.Time, tag uint64) {
	i, act := int(tag>>8), tag&0xFF
	s := &in.specs[i]
	log := func(what string) {
		in.Log = append(in.Log, Event{At: now, What: fmt.Sprintf("%s %s: %s", s.Kind, in.target(s), what)})
	}
	revertAt := func(d sim.Time) {
		if d > 0 {
			in.k.Post(now+d, in.hid, uint64(i)<<8|actRevert)
		}
	}
	switch s.Kind {
	case LinkDown, LinkUp, LinkFlap:
		a, b, _ := in.links(s)
		down := act == actApply && s.Kind != LinkUp
		a.SetDown(down)
		b.SetDown(down)
		log(map[bool]string{true: "down", false: "up"}[down])
		switch {
		case s.Kind == LinkDown && act == actApply:
			revertAt(s.Duration)
		case s.Kind == LinkFlap && act == actApply:
			revertAt(s.Duration)
		case s.Kind == LinkFlap && act == actRevert && s.Count > 1:
			s.Count--
			in.k.Post(now+s.Period-s.Duration, in.hid, uint64(i)<<8|actApply)
		}
	case Loss:
		a, b, _ := in.links(s)
		if act == actApply {
			m := fabric.LossMatch{Prios: s.Prios, DataOnly: s.DataOnly}
			// Each direction keeps its own stream whichever is hit, so
			// limiting a fault to one direction leaves the other's
			// draws as they were.
			if s.Dir != In {
				a.SetLoss(s.Drop, s.Corrupt, m, sim.Stream(in.seed, fmt.Sprintf("faults/%d/a", i)))
			}
			if s.Dir != Out {
				b.SetLoss(s.Drop, s.Corrupt, m, sim.Stream(in.seed, fmt.Sprintf("faults/%d/b", i)))
			}
			what := fmt.Sprintf("drop %g, corrupt %g", s.Drop, s.Corrupt)
			if s.Prios != 0 {
				what += fmt.Sprintf(", priorities %08b", s.Prios)
			}
			if s.DataOnly {
				what += ", data frames only"
			}
			if s.Dir != Both {
				what += ", direction " + s.Dir.String()
			}
			log(what)
			revertAt(s.Duration)
		} else {
			if s.Dir != In {
				a.SetLoss(0, 0, fabric.LossMatch{}, nil)
			}
			if s.Dir != Out {
				b.SetLoss(0, 0, fabric.LossMatch{}, nil)
			}
			log("loss off")
		}
	case HostCrash:
		h := in.hosts[s.Host]
		if act == actApply {
			h.Crash(now)
			log("crashed")
			revertAt(s.Duration)
		} else {
			h.(Restarter).Restart(now)
			log("restarted")
		}
	case QPError:
		n := in.hosts[s.Host].(QPFailer).FailQPs()
		log(fmt.Sprintf("%d QPs to error", n))
	case PFCStorm:
		hp := in.net.Hosts[s.Host]
		hp.SetPause(s.Prio, act == actApply)
		if act == actApply {
			log(fmt.Sprintf("asserting pause on prio %d", s.Prio))
			revertAt(s.Duration)
		} else {
			log("storm over")
		}
	}
}
