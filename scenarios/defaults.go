package scenarios

import (
	"fmt"
	"strconv"

	"github.com/besim/besim/sim"
)

// The defaults, all in one place (SCHEMA.md lists the same table). A field
// whose Go zero value is not meaningful ("rate: 0bps") takes the default
// when it is zero, i.e. absent; an explicit zero in a file is an error, so a
// default never replaces something the user wrote. Booleans whose default
// is true are pointers for the same reason.
const (
	defaultLinkRate        = 25 * Gbps
	defaultLinkDelay       = Duration(sim.Microsecond)
	defaultBuffer          = 12 * MiB
	defaultScheduler       = Strict
	defaultDWRRWeight      = 1
	defaultPFCQuanta       = 65535
	defaultWatchdogDetect  = Duration(100 * sim.Millisecond)
	defaultWatchdogRestore = Duration(100 * sim.Millisecond)
	defaultECNPmax         = Fraction(0.01)
	defaultMTU             = 1024 * Byte
	defaultXONOffsetMTUs   = 2 // xon_offset = 2 x hosts.mtu
	defaultSampleInterval  = Duration(10 * sim.Microsecond)
	defaultFlowCount       = 1
	defaultOutputRoot      = "results"
)

var (
	defaultSwitchAlpha = Ratio{1, 8}
	defaultPFCAlpha    = Ratio{1, 8}
)

// defaulter fills zero fields, refusing explicit zeros.
type defaulter struct {
	s    *Scenario
	errs ErrorList
}

func show(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

// def sets *field = value if it is zero. If the file wrote the zero, that
// is an error instead: the user asked for something invalid, not for the
// default.
func def[T comparable](d *defaulter, path string, field *T, value T) {
	var zero T
	if *field != zero {
		return
	}
	if d.s.present(path) {
		d.errs.add(d.s.Errorf(path, "%s is not allowed (omit the key for the default, %s)", show(*field), show(value)))
		return
	}
	*field = value
}

func defBool(field **bool, value bool) {
	if *field == nil {
		*field = &value
	}
}

// ApplyDefaults fills every unset field with its documented default. It is
// idempotent; Parse calls it, and a scenario built in Go should call it
// before Validate. For a parsed scenario, a zero written explicitly where
// zero is not meaningful is reported (positioned) rather than replaced.
func (s *Scenario) ApplyDefaults() error {
	d := &defaulter{s: s}
	def(d, "version", &s.Version, SchemaVersion)

	f := &s.Fabric
	def(d, "fabric.links.rate", &f.Links.Rate, defaultLinkRate)
	def(d, "fabric.links.delay", &f.Links.Delay, defaultLinkDelay)
	def(d, "fabric.links.host_rate", &f.Links.HostRate, f.Links.Rate)
	if f.Topology.Kind == LeafSpine || f.Topology.Kind == FatTree {
		def(d, "fabric.links.uplink_rate", &f.Links.UplinkRate, f.Links.Rate)
	}

	def(d, "fabric.switch.buffer", &f.Switch.Buffer, defaultBuffer)
	def(d, "fabric.switch.alpha", &f.Switch.Alpha, defaultSwitchAlpha)
	def(d, "fabric.switch.scheduler", &f.Switch.Scheduler, defaultScheduler)
	if f.Switch.Scheduler == DWRR && len(f.Switch.DWRRWeights) == 0 {
		if d.s.present("fabric.switch.dwrr_weights") {
			d.errs.add(s.Errorf("fabric.switch.dwrr_weights", "empty list (give 8 weights, one per priority, or omit the key for all %d)", defaultDWRRWeight))
		} else {
			f.Switch.DWRRWeights = make([]int, 8)
			for i := range f.Switch.DWRRWeights {
				f.Switch.DWRRWeights[i] = defaultDWRRWeight
			}
		}
	}

	def(d, "hosts.mtu", &s.Hosts.MTU, defaultMTU)

	if len(f.Priorities) == 0 {
		if s.present("fabric.priorities") {
			d.errs.add(s.Errorf("fabric.priorities", "empty list (declare at least one class, or omit the key for one lossy class, prio 0)"))
		} else {
			f.Priorities = []Priority{{Prio: 0}}
		}
	}
	for i := range f.Priorities {
		p := &f.Priorities[i]
		path := idx("fabric.priorities", i)
		if p.Lossless && p.PFC == nil {
			p.PFC = &PriorityPFC{}
		}
		if p.PFC != nil && p.Lossless {
			pp, pfcPath := p.PFC, path+".pfc"
			def(d, pfcPath+".xoff", &pp.XOFF, Threshold{Dynamic: true})
			if pp.XOFF.Dynamic {
				def(d, pfcPath+".alpha", &pp.Alpha, defaultPFCAlpha)
			}
			if pp.XON == 0 && !s.present(pfcPath+".xon") {
				def(d, pfcPath+".xon_offset", &pp.XONOffset, defaultXONOffsetMTUs*s.Hosts.MTU)
			} else if pp.XON == 0 {
				def(d, pfcPath+".xon", &pp.XON, 0) // reports the explicit zero
			}
			def(d, pfcPath+".headroom", &pp.Headroom, AutoSize{Auto: true})
		}
		if p.ECN != nil {
			def(d, path+".ecn.pmax", &p.ECN.Pmax, defaultECNPmax)
		}
	}

	pfc := &f.PFC
	defBool(&pfc.Enabled, true)
	if *pfc.Enabled {
		def(d, "fabric.pfc.quanta", &pfc.Quanta, defaultPFCQuanta)
		def(d, "fabric.pfc.refresh", &pfc.Refresh, AutoDuration{Auto: true})
		if pfc.Watchdog != nil {
			def(d, "fabric.pfc.watchdog.detect", &pfc.Watchdog.Detect, defaultWatchdogDetect)
			def(d, "fabric.pfc.watchdog.restore", &pfc.Watchdog.Restore, defaultWatchdogRestore)
		}
	}

	for i := range s.Flows {
		fl := &s.Flows[i]
		path := idx("flows", i)
		def(d, path+".name", &fl.Name, "flow"+strconv.Itoa(i))
		def(d, path+".rate", &fl.Rate, FlowRate{Line: true})
		def(d, path+".count", &fl.Count, defaultFlowCount)
	}

	o := &s.Outputs
	if s.Name != "" {
		def(d, "outputs.dir", &o.Dir, defaultOutputRoot+"/"+s.Name)
	}
	defBool(&o.JSON, true)
	defBool(&o.CSV, true)
	def(d, "outputs.sample_interval", &o.SampleInterval, defaultSampleInterval)
	return d.errs.err()
}
