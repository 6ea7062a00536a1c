package scenarios

import (
	"fmt"
	"github.com/besim/besim/units"
	"strconv"

	"github.com/besim/besim/sim"
)

// The scenario format's own defaults, all in one place (SCHEMA.md lists
// them with the models'); a model's knobs take the model's default through
// ModelDefaults (knobs.go) and are not repeated here. A field whose Go zero
// value is not meaningful ("rate: 0bps") takes the default when it is
// zero, i.e. absent; an explicit zero in a file is an error, so a default
// never replaces something the user wrote. Booleans whose default is true
// are pointers for the same reason.
const (
	defaultScheduler       = Strict
	defaultDWRRWeight      = 1
	defaultWatchdogRestore = Duration(100 * sim.Millisecond)
	defaultXONOffsetMTUs   = 2 // xon_offset = 2 x hosts.mtu
	defaultSampleInterval  = Duration(10 * sim.Microsecond)
	defaultFlowCount       = 1
	defaultOutputRoot      = "out"
)

// The fabric format's own choices where they differ from fabric's model
// (fabric.DefaultConfig: lossy egress alpha 1, DWRR, XON offset 3 KiB,
// watchdog restore 200 ms): strict priority, egress alpha 1/8, the XON
// offset two MTUs, restore 100 ms. The defaults both share (link rate
// and delay, buffer, MTU, PFC alpha and quanta, ECN pmax, watchdog
// detection) are the model's, through ModelDefaults.
var defaultSwitchAlpha = Ratio{1, 8}

// The scenario layer's own defaults of the rnic section and the flows. The
// simulated NIC's and DCQCN's knobs have their defaults in their models
// (rnic.DefaultConfig, dcqcn.DefaultConfig and dcqcn.ConnectXConfig), not
// here: see ModelDefaults.
const (
	defaultNIC     = RawNIC
	defaultCC      = CCNone
	defaultPayload = SizesOnly
	// QP attributes the runner's application sets (those of perftest).
	defaultQPTimeout   = 14 // 4.096 us x 2^14 = 67 ms
	defaultRetryCnt    = 7
	defaultRNRRetry    = 7
	defaultMinRNRTimer = 12 // 0.64 ms

	// rc and ud flows.
	defaultRCMessage = 64 * KiB // perftest's default message size
	defaultRCDepth   = 16
	defaultUDDepth   = 128
	defaultOp        = OpWrite

	// Benchmarks.
	defaultPerfWarmup          = Duration(50 * sim.Microsecond)
	defaultPerfDuration        = Duration(500 * sim.Microsecond)
	defaultPerfTxDepth         = 128
	defaultPerfRxDepth         = 512
	defaultPerfCQMod           = 100
	defaultMsgWarmup           = Duration(500 * sim.Microsecond)
	defaultMsgDuration         = Duration(sim.Millisecond)
	defaultMsgThreads          = 8
	defaultMsgMessage          = 512 * Byte
	defaultMsgRate        Rate = 200 * units.Gbps
	defaultMsgDepth            = 16
	defaultMsgSignalEvery      = 8
	defaultMsgAppWork          = Duration(150 * sim.Nanosecond)
	defaultMsgJitter           = Fraction(0.5)
	defaultFragMessage         = MiB
	defaultFragDepth           = 8
	defaultHOLWarmup           = Duration(2 * sim.Millisecond)
	defaultHOLDuration         = Duration(20 * sim.Millisecond)
	defaultHOLRate        Rate = 25 * units.Gbps
	defaultHOLMessage          = 512 * Byte
	defaultHOLInterval         = Duration(20 * sim.Microsecond)
	defaultHOLLarge            = MiB
	defaultHOLDepth            = 2
	defaultHOLFragment         = 4 * KiB
	defaultPingWarmup          = Duration(200 * sim.Microsecond)
	defaultPingDuration        = Duration(2 * sim.Millisecond)
	defaultPingResponse        = 32 * Byte // the paper's §5.5 response size
	defaultPeakWarmup          = Duration(2 * sim.Millisecond)
	defaultPeakDuration        = Duration(5 * sim.Millisecond)
	defaultMRWarmup            = Duration(200 * sim.Microsecond)
	defaultMRDuration          = Duration(sim.Millisecond)
	defaultMRMessage           = 4 * KiB
	defaultMRRate         Rate = 100 * units.Gbps
	defaultMRDepth             = 16
	defaultMRBuffers           = 4096
	defaultMRBlock             = 4 * MiB // bemalloc's block (paper §5.2)
	// defaultPeakFragment: Figure 10's largest fragment, which the model
	// needs at 100 Gb/s and above to come near the line (fragsizesim).
	defaultPeakFragment = 64 * KiB
)

var (
	defaultFragRates  = []Rate{25 * units.Gbps, 100 * units.Gbps}
	defaultFragSizes  = []Size{512, KiB, 2 * KiB, 4 * KiB, 8 * KiB, 16 * KiB, 32 * KiB, 64 * KiB}
	defaultLargeFlows = []int{0, 1, 2, 4, 8}
	// defaultPingMessages: the paper's Figure 8 range, 32 B to 16 KB.
	defaultPingMessages = []Size{32, 64, 128, 256, 512, KiB, 2 * KiB, 4 * KiB, 8 * KiB, 16 * KiB}
)

var (
	defaultPerfTrans = []Transport{RC, UD}
	defaultMsgQPs    = []int{8, 16, 32, 64, 128, 256, 512}
	defaultMsgTDs    = []bool{false, true}
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
		// Defaulted all the same, so that what derives from it (host_rate
		// from rate) is not reported too.
	}
	*field = value
}

func defBool(field **bool, value bool) {
	if *field == nil {
		*field = &value
	}
}

// defPtr fills a field whose zero is meaningful (so it is a pointer).
func defPtr[T any](field **T, value T) {
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
	if s.Benchmark != nil {
		// Two NICs back to back: no fabric, hosts or flows to default
		// (Validate refuses them).
		d.benchmark()
		d.rnic()
		d.outputs()
		return d.errs.err()
	}

	if s.Workload != nil {
		d.workloadEarly()
	}
	f := &s.Fabric
	d.overlay("fabric.links", &f.Links, d.models().Links) // rate, delay
	if f.Links.Rate != 0 {
		def(d, "fabric.links.host_rate", &f.Links.HostRate, f.Links.Rate)
		if f.Topology.Kind == LeafSpine || f.Topology.Kind == FatTree {
			def(d, "fabric.links.uplink_rate", &f.Links.UplinkRate, f.Links.Rate)
		}
	}

	def(d, "fabric.switch.alpha", &f.Switch.Alpha, defaultSwitchAlpha)
	def(d, "fabric.switch.scheduler", &f.Switch.Scheduler, defaultScheduler)
	d.overlay("fabric.switch", &f.Switch, d.models().Switch) // buffer
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

	def(d, "hosts.nic", &s.Hosts.NIC, defaultNIC)
	d.overlay("hosts", &s.Hosts, d.models().Hosts) // mtu

	if len(f.Priorities) == 0 {
		if s.present("fabric.priorities") {
			d.errs.add(s.Errorf("fabric.priorities", "empty list (declare at least one class, or omit the key for one lossy class, prio 0)"))
		} else {
			f.Priorities = []Priority{{Prio: 0}}
		}
	}
	m := d.models()
	for i := range f.Priorities {
		p := &f.Priorities[i]
		path := idx("fabric.priorities", i)
		if p.Lossless && p.PFC == nil {
			p.PFC = &PriorityPFC{}
		}
		if p.PFC != nil && p.Lossless {
			pp, pfcPath := p.PFC, path+".pfc"
			def(d, pfcPath+".xoff", &pp.XOFF, Threshold{Dynamic: true})
			if pp.XOFF.Dynamic && m.PriorityPFC != nil {
				d.overlay(pfcPath, pp, &PriorityPFC{Alpha: m.PriorityPFC.Alpha}) // alpha
			}
			if pp.XON == 0 && !s.present(pfcPath+".xon") {
				def(d, pfcPath+".xon_offset", &pp.XONOffset, defaultXONOffsetMTUs*s.Hosts.MTU)
			} else if pp.XON == 0 {
				def(d, pfcPath+".xon", &pp.XON, 0) // reports the explicit zero
			}
			def(d, pfcPath+".headroom", &pp.Headroom, AutoSize{Auto: true})
		}
		if p.ECN != nil {
			d.overlay(path+".ecn", p.ECN, m.ECN) // pmax
		}
	}

	pfc := &f.PFC
	defBool(&pfc.Enabled, true)
	if *pfc.Enabled {
		d.overlay("fabric.pfc", pfc, m.PFC) // quanta
		def(d, "fabric.pfc.refresh", &pfc.Refresh, AutoDuration{Auto: true})
		if pfc.Watchdog != nil {
			d.overlay("fabric.pfc.watchdog", pfc.Watchdog, m.Watchdog) // detect
			def(d, "fabric.pfc.watchdog.restore", &pfc.Watchdog.Restore, defaultWatchdogRestore)
		}
	}

	for i := range s.Flows {
		fl := &s.Flows[i]
		path := idx("flows", i)
		def(d, path+".name", &fl.Name, "flow"+strconv.Itoa(i))
		tr := RawTransport
		if s.Hosts.NIC == RNICModel {
			tr = RC
		}
		def(d, path+".transport", &fl.Transport, tr)
		def(d, path+".rate", &fl.Rate, FlowRate{Line: true})
		def(d, path+".count", &fl.Count, defaultFlowCount)
		switch fl.Transport {
		case RC:
			def(d, path+".message", &fl.Message, defaultRCMessage)
			def(d, path+".op", &fl.Op, defaultOp)
			def(d, path+".depth", &fl.Depth, defaultRCDepth)
		case UD:
			def(d, path+".message", &fl.Message, s.Hosts.MTU)
			def(d, path+".depth", &fl.Depth, defaultUDDepth)
		}
	}
	if s.Hosts.NIC == RNICModel {
		d.rnic()
	}
	if s.Workload != nil {
		d.workload()
	}
	d.faults()
	d.outputs()
	return d.errs.err()
}

func (d *defaulter) outputs() {
	s := d.s
	o := &s.Outputs
	if s.Name != "" {
		def(d, "outputs.dir", &o.Dir, defaultOutputRoot+"/"+s.Name)
	}
	defBool(&o.JSON, true)
	defBool(&o.CSV, true)
	def(d, "outputs.sample_interval", &o.SampleInterval, defaultSampleInterval)
}

// rnic fills the NIC model (creating the section if it was left out) and,
// with DCQCN, its parameters: the scenario layer's own keys here, the
// model's knobs from ModelDefaults.
func (d *defaulter) rnic() {
	s := d.s
	if s.RNIC == nil {
		s.RNIC = &RNIC{}
	}
	r := s.RNIC
	def(d, "rnic.cc", &r.CC, defaultCC)
	def(d, "rnic.payload", &r.Payload, defaultPayload)
	if s.Benchmark == nil {
		q := &r.QP
		defPtr(&q.Timeout, defaultQPTimeout)
		defPtr(&q.RetryCnt, defaultRetryCnt)
		defPtr(&q.RNRRetry, defaultRNRRetry)
		defPtr(&q.MinRNRTimer, defaultMinRNRTimer)
	}
	if r.CC == CCDCQCN && s.DCQCN == nil {
		s.DCQCN = &DCQCN{}
	}
	m := d.models()
	d.overlay("rnic", r, m.RNIC)
	if r.CC == CCDCQCN {
		// Profile, alpha_update and target_clamp stay empty for the
		// paper's profile (empty means it), so that resolved scenarios
		// print as before these keys existed.
		d.overlay("dcqcn", s.DCQCN, m.DCQCN)
	}
}

// benchmark fills the benchmark section and the duration (the measured
// interval of each point).
func (d *defaulter) benchmark() {
	s := d.s
	b := s.Benchmark
	switch b.Kind {
	case Perftest:
		def(d, "duration", &s.Duration, defaultPerfDuration)
		def(d, "benchmark.warmup", &b.Warmup, defaultPerfWarmup)
		if len(b.Transports) == 0 && !s.present("benchmark.transports") {
			b.Transports = append([]Transport(nil), defaultPerfTrans...)
		}
		def(d, "benchmark.tx_depth", &b.TxDepth, defaultPerfTxDepth)
		def(d, "benchmark.rx_depth", &b.RxDepth, defaultPerfRxDepth)
		def(d, "benchmark.cq_mod", &b.CQMod, min(defaultPerfCQMod, max(b.TxDepth, 1)))
		knob(d, "benchmark.delay", &b.Delay, d.models().WireDelay)
	case MsgRate:
		def(d, "duration", &s.Duration, defaultMsgDuration)
		def(d, "benchmark.warmup", &b.Warmup, defaultMsgWarmup)
		def(d, "benchmark.threads", &b.Threads, defaultMsgThreads)
		if len(b.QPs) == 0 && !s.present("benchmark.qps") {
			b.QPs = append([]int(nil), defaultMsgQPs...)
		}
		if len(b.ThreadDomains) == 0 && !s.present("benchmark.thread_domains") {
			b.ThreadDomains = append([]bool(nil), defaultMsgTDs...)
		}
		def(d, "benchmark.message", &b.Message, defaultMsgMessage)
		def(d, "benchmark.rate", &b.Rate, defaultMsgRate)
		def(d, "benchmark.depth", &b.Depth, defaultMsgDepth)
		if b.Through == ThroughCore {
			knob(d, "benchmark.delay", &b.Delay, d.models().TestbedDelay)
		} else {
			def(d, "benchmark.signal_every", &b.SignalEvery, min(defaultMsgSignalEvery, max(b.Depth, 1)))
		}
		def(d, "benchmark.app_work", &b.AppWork, defaultMsgAppWork)
		def(d, "benchmark.jitter", &b.Jitter, defaultMsgJitter)
	case Fragsize:
		if len(b.Rates) == 0 && !s.present("benchmark.rates") {
			b.Rates = append([]Rate(nil), defaultFragRates...)
		}
		if len(b.Fragments) == 0 && !s.present("benchmark.fragments") {
			b.Fragments = append([]Size(nil), defaultFragSizes...)
		}
		def(d, "benchmark.message", &b.Message, defaultFragMessage)
		// Each point measures 40 and warms up for 20 message times at the
		// slowest rate (enough for the pools and the window to settle).
		var slow Rate
		for _, r := range b.Rates {
			if r > 0 && (slow == 0 || r < slow) {
				slow = r
			}
		}
		if slow > 0 && b.Message > 0 {
			msg := sim.TxTime(int64(b.Message), units.Rate(slow))
			def(d, "duration", &s.Duration, Duration(40*msg))
			def(d, "benchmark.warmup", &b.Warmup, Duration(20*msg))
		}
		def(d, "benchmark.depth", &b.Depth, defaultFragDepth)
		knob(d, "benchmark.delay", &b.Delay, d.models().TestbedDelay)
	case PingPong:
		def(d, "duration", &s.Duration, defaultPingDuration)
		def(d, "benchmark.warmup", &b.Warmup, defaultPingWarmup)
		if len(b.Messages) == 0 && !s.present("benchmark.messages") {
			b.Messages = append([]Size(nil), defaultPingMessages...)
		}
		def(d, "benchmark.response", &b.Response, defaultPingResponse)
		knob(d, "benchmark.delay", &b.Delay, d.models().TestbedDelay)
	case Peak:
		def(d, "duration", &s.Duration, defaultPeakDuration)
		def(d, "benchmark.warmup", &b.Warmup, defaultPeakWarmup)
		if len(b.Transports) == 0 && !s.present("benchmark.transports") {
			b.Transports = append([]Transport(nil), defaultPerfTrans...)
		}
		def(d, "benchmark.tx_depth", &b.TxDepth, defaultPerfTxDepth)
		def(d, "benchmark.rx_depth", &b.RxDepth, defaultPerfRxDepth)
		def(d, "benchmark.cq_mod", &b.CQMod, min(defaultPerfCQMod, max(b.TxDepth, 1)))
		def(d, "benchmark.message", &b.Message, defaultFragMessage)
		def(d, "benchmark.depth", &b.Depth, defaultFragDepth)
		def(d, "benchmark.fragment", &b.Fragment, defaultPeakFragment)
		knob(d, "benchmark.delay", &b.Delay, d.models().TestbedDelay)
	case HOL:
		def(d, "duration", &s.Duration, defaultHOLDuration)
		def(d, "benchmark.warmup", &b.Warmup, defaultHOLWarmup)
		def(d, "benchmark.rate", &b.Rate, defaultHOLRate)
		knob(d, "benchmark.delay", &b.Delay, d.models().TestbedDelay)
		if len(b.LargeFlows) == 0 && !s.present("benchmark.large_flows") {
			b.LargeFlows = append([]int(nil), defaultLargeFlows...)
		}
		def(d, "benchmark.message", &b.Message, defaultHOLMessage)
		def(d, "benchmark.interval", &b.Interval, defaultHOLInterval)
		def(d, "benchmark.large_message", &b.LargeMessage, defaultHOLLarge)
		def(d, "benchmark.depth", &b.Depth, defaultHOLDepth)
		def(d, "benchmark.fragment", &b.Fragment, defaultHOLFragment)
	case MRCacheBench:
		def(d, "duration", &s.Duration, defaultMRDuration)
		def(d, "benchmark.warmup", &b.Warmup, defaultMRWarmup)
		def(d, "benchmark.message", &b.Message, defaultMRMessage)
		def(d, "benchmark.rate", &b.Rate, defaultMRRate)
		def(d, "benchmark.depth", &b.Depth, defaultMRDepth)
		def(d, "benchmark.buffers", &b.Buffers, defaultMRBuffers)
		def(d, "benchmark.block", &b.Block, defaultMRBlock)
		if len(b.Registrations) == 0 && !s.present("benchmark.registrations") {
			b.Registrations = append([]string(nil), RegistrationKinds...)
		}
	}
}
