package scenarios

import (
	"github.com/besim/besim/units"
	"reflect"
	"strings"
)

// Limits of the RNIC, DCQCN, rc/ud flow and benchmark keys.
const (
	maxMessage          = 1 << 30 // bytes per work request (verbs allows < 2 GiB)
	maxQueueDepth       = 32768   // ConnectX max_qp_wr
	maxUnits            = 4096
	maxCacheQPs         = 1 << 24
	maxDoorbells        = 1 << 16
	maxStages           = 1000
	maxBenchRuns        = 1000
	maxBenchRate   Rate = 10 * units.Tbps
	maxThreads          = 1024
	maxBenchQPs         = 65536
	maxBenchCQEs        = 1 << 22 // qps x depth completions per thread CQ
	maxQPTimeout        = 31
	maxRetry            = 7
	maxMinRNRTimer      = 31
)

func durp(p *Duration) Duration {
	if p == nil {
		return 0
	}
	return *p
}

// intRange checks an optional (pointer) integer against [lo, hi].
func (v *validator) intRange(path string, p *int, lo, hi int, what string) {
	if p != nil && (*p < lo || *p > hi) {
		v.bad(path, "%d is out of range (allowed: %d to %d%s)", *p, lo, hi, what)
	}
}

func (v *validator) countRange(path string, val, lo, hi int) {
	switch {
	case val < lo:
		v.bad(path, "%d is not allowed (must be >= %d)", val, lo)
	case val > hi:
		v.bad(path, "%d is too large (at most %d)", val, hi)
	}
}

// knobRange checks a model knob whose zero is not a value. Without the
// models' defaults (see ModelDefaults) a knob left out stays 0, which is
// not checked; a 0 written in the file is.
func (v *validator) knobRange(path string, val, lo, hi int) {
	if val != 0 || v.s.present(path) {
		v.countRange(path, val, lo, hi)
	}
}

// knobPositive reports a model knob written as 0 (or below) where it must
// be > 0; a knob left out (0 without the models' defaults) is not checked.
func (v *validator) knobPositive(path string, isZero, negative bool, val any) {
	if negative || isZero && v.s.present(path) {
		v.bad(path, "%s is not allowed (must be > 0)", val)
	}
}

func (v *validator) nonNegative(path string, d *Duration) {
	if d != nil && *d < 0 {
		v.bad(path, "%s is negative", *d)
	}
}

// rnic checks the NIC model section.
func (v *validator) rnic() {
	s := v.s
	r := s.RNIC
	if r == nil {
		return
	}
	if s.Benchmark == nil && s.Hosts.NIC != RNICModel {
		v.bad("rnic", "only used with hosts.nic: rnic or a benchmark (hosts.nic is %s)", s.Hosts.NIC)
		return
	}
	const p = "rnic"
	switch r.CC {
	case CCNone, CCDCQCN:
	default:
		v.bad(p+".cc", "%q is not a congestion control (allowed: %s)", r.CC, strings.Join(ccKinds, ", "))
	}
	switch r.Payload {
	case SizesOnly, PayloadBytes:
	default:
		v.bad(p+".payload", "%q is not a payload mode (allowed: %s)", r.Payload, strings.Join(payloadModes, ", "))
	}
	for _, d := range []struct {
		key string
		val *Duration
	}{
		{"wqe_cost", r.WQECost}, {"packet_cost", r.PacketCost}, {"cqe_cost", r.CQECost},
		{"pcie.read_latency", r.PCIe.ReadLatency}, {"pcie.write_latency", r.PCIe.WriteLatency}, {"pcie.mmio_latency", r.PCIe.MMIOLatency},
		{"cpu.post_send", r.CPU.PostSend}, {"cpu.post_send_per_wqe", r.CPU.PostSendPerWQE}, {"cpu.doorbell", r.CPU.Doorbell},
		{"cpu.post_recv", r.CPU.PostRecv}, {"cpu.post_recv_per_wqe", r.CPU.PostRecvPerWQE}, {"cpu.poll", r.CPU.Poll},
		{"cpu.poll_per_cqe", r.CPU.PollPerCQE}, {"cpu.lock_acquire", r.CPU.LockAcquire}, {"cpu.lock_transfer", r.CPU.LockTransfer},
		{"cpu.reg_mr", r.CPU.RegMR}, {"cpu.reg_mr_per_page", r.CPU.RegMRPerPage},
	} {
		v.nonNegative(p+"."+d.key, d.val)
	}
	v.knobRange(p+".units", r.Units, 1, maxUnits)
	v.knobRange(p+".qp_cache_entries", r.QPCacheEntries, 1, maxCacheQPs)
	v.knobRange(p+".ack_req_every", r.AckReqEvery, 1, 1<<20)
	if m := r.MRCache; m != nil {
		v.countRange(p+".mr_cache.mpt_entries", m.MPTEntries, 0, maxCacheQPs)
		v.countRange(p+".mr_cache.mtt_entries", m.MTTEntries, 0, maxCacheQPs)
		v.countRange(p+".mr_cache.ways", m.Ways, 0, 1024)
		if m.Page != 0 && (m.Page < 4096 || m.Page > 1<<30 || m.Page&(m.Page-1) != 0) {
			v.bad(p+".mr_cache.page", "%s is not allowed (a power of two, 4KiB to 1GiB)", m.Page)
		}
	}
	if (r.RxBuffer != 0 || s.present(p+".rx_buffer")) && r.RxBuffer < 4096 {
		v.bad(p+".rx_buffer", "%s is too small (at least 4096 bytes)", r.RxBuffer)
	}
	v.intRange(p+".cnp_prio", r.CNPPrio, 0, 7, "")
	v.knobPositive(p+".pcie.bandwidth", r.PCIe.Bandwidth == 0, r.PCIe.Bandwidth < 0, r.PCIe.Bandwidth)
	v.intRange(p+".doorbells.lock_free", r.Doorbells.LockFree, 0, maxDoorbells, "")
	v.knobRange(p+".doorbells.shared", r.Doorbells.Shared, 1, maxDoorbells)
	if s.Benchmark != nil {
		if r.Payload == PayloadBytes {
			v.bad(p+".payload", "benchmarks run in sizes-only mode (payload: bytes is for rc and ud flows)")
		}
		if s.present(p+".qp") || !reflect.ValueOf(r.QP).IsZero() {
			v.bad(p+".qp", "not used with a benchmark (perftest and msgrate set their own QP attributes)")
		}
	}
	q := r.QP
	v.intRange(p+".qp.timeout", q.Timeout, 0, maxQPTimeout, ": 4.096us x 2^timeout, 0 for none")
	v.intRange(p+".qp.retry_cnt", q.RetryCnt, 0, maxRetry, "")
	v.intRange(p+".qp.rnr_retry", q.RNRRetry, 0, maxRetry, "; 7 retries forever")
	v.intRange(p+".qp.min_rnr_timer", q.MinRNRTimer, 0, maxMinRNRTimer, ", the IBTA RNR timer code")
}

// slowestLink is the rate DCQCN's min_rate must not exceed: the host link
// rate, or the slowest benchmark link.
func (v *validator) slowestLink() Rate {
	s := v.s
	if b := s.Benchmark; b != nil {
		var lo Rate
		consider := func(r Rate) {
			if r > 0 && (lo == 0 || r < lo) {
				lo = r
			}
		}
		for _, pt := range b.Points {
			consider(pt.Rate)
		}
		for _, r := range b.Rates {
			consider(r)
		}
		consider(b.Rate)
		return lo
	}
	return s.Fabric.Links.HostRate
}

// dcqcn checks the DCQCN section.
func (v *validator) dcqcn() {
	s := v.s
	c := s.DCQCN
	if c == nil {
		return
	}
	if s.RNIC == nil || s.RNIC.CC != CCDCQCN {
		cc := CCNone
		if s.RNIC != nil && s.RNIC.CC != "" {
			cc = s.RNIC.CC
		}
		v.bad("dcqcn", "only used with rnic.cc: dcqcn (rnic.cc is %s)", cc)
		return
	}
	const p = "dcqcn"
	if (!c.G.IsZero() || s.present(p+".g")) && (c.G.Num <= 0 || c.G.Den <= 0 || c.G.Num > c.G.Den) {
		v.bad(p+".g", "%s is out of range (allowed: above 0, at most 1, e.g. 1/256)", c.G)
	}
	if (!c.InitialAlpha.IsZero() || s.present(p+".initial_alpha")) && (c.InitialAlpha.Den <= 0 || c.InitialAlpha.Num < 0 || c.InitialAlpha.Num > c.InitialAlpha.Den) {
		v.bad(p+".initial_alpha", "%s is out of range (allowed: 0 to 1)", c.InitialAlpha)
	}
	for _, d := range []struct {
		key string
		val Duration
	}{{"alpha_timer", c.AlphaTimer}, {"rate_timer", c.RateTimer}} {
		v.knobPositive(p+"."+d.key, d.val == 0, d.val < 0, d.val)
	}
	v.knobPositive(p+".byte_counter", c.ByteCounter == 0, c.ByteCounter < 0, c.ByteCounter)
	v.intRange(p+".fast_recovery", c.FastRecovery, 0, maxStages, "")
	for _, r := range []struct {
		key string
		val Rate
	}{{"ai_rate", c.AIRate}, {"hai_rate", c.HAIRate}, {"min_rate", c.MinRate}} {
		v.knobPositive(p+"."+r.key, r.val == 0, r.val < 0, r.val)
	}
	if lo := v.slowestLink(); lo > 0 && c.MinRate > lo {
		v.bad(p+".min_rate", "%s is above the link rate %s", c.MinRate, lo)
	}
	v.nonNegative(p+".cnp_interval", c.CNPInterval)
	v.nonNegative(p+".decrease_period", c.DecreasePeriod)
}

// flowTransport checks the transport keys of flow f at path p.
func (v *validator) flowTransport(p string, f Flow) {
	s := v.s
	nic := s.Hosts.NIC
	setMsg, setOp, setDepth := f.Message != 0 || s.present(p+".message"), f.Op != "" || s.present(p+".op"), f.Depth != 0 || s.present(p+".depth")
	switch f.Transport {
	case RawTransport:
		if nic == RNICModel {
			v.bad(p+".transport", "raw flows need hosts.nic: raw (hosts.nic is rnic; use rc or ud)")
		}
		for _, k := range []struct {
			key string
			set bool
		}{{"message", setMsg}, {"op", setOp}, {"depth", setDepth}} {
			if k.set {
				v.bad(p+"."+k.key, "only used by rc and ud flows (this flow's transport is raw)")
			}
		}
		return
	case RC, UD:
		if nic != RNICModel {
			v.bad(p+".transport", "%s flows need hosts.nic: rnic (hosts.nic is %s)", f.Transport, nic)
			return
		}
	case "":
		v.bad(p+".transport", "missing (allowed: %s)", strings.Join(transports, ", "))
		return
	default:
		v.bad(p+".transport", "%q is not a transport (allowed: %s)", f.Transport, strings.Join(transports, ", "))
		return
	}
	switch {
	case f.Message <= 0:
		v.bad(p+".message", "%s is not allowed (must be > 0)", f.Message)
	case f.Message > maxMessage:
		v.bad(p+".message", "%s is too large (at most %s per work request)", f.Message, Size(maxMessage))
	case f.Transport == UD && s.Hosts.MTU > 0 && f.Message > s.Hosts.MTU:
		v.bad(p+".message", "%s is above hosts.mtu %s (a UD message is one datagram)", f.Message, s.Hosts.MTU)
	}
	switch {
	case f.Transport == UD && setOp:
		v.bad(p+".op", "only used by rc flows (ud flows send datagrams)")
	case f.Transport == RC && f.Op != OpWrite && f.Op != OpSend:
		v.bad(p+".op", "%q is not a supported operation (allowed: %s)", f.Op, strings.Join(ops, ", "))
	}
	v.countRange(p+".depth", f.Depth, 1, maxQueueDepth)
}

// benchmark checks the benchmark section and that nothing of a fabric run
// is set beside it.
func (v *validator) benchmark() {
	s := v.s
	b := s.Benchmark
	const why = "not used with a benchmark (it runs two NICs back to back on one wire; set rates and MTUs in benchmark)"
	if s.present("fabric") || !reflect.ValueOf(s.Fabric).IsZero() {
		v.bad("fabric", why)
	}
	if s.present("hosts") || !reflect.ValueOf(s.Hosts).IsZero() {
		v.bad("hosts", why)
	}
	if s.present("flows") || len(s.Flows) > 0 {
		v.bad("flows", "not used with a benchmark (a scenario has either flows or a benchmark)")
	}
	const p = "benchmark"
	keys := []struct {
		key string
		set bool
	}{
		{"points", len(b.Points) > 0}, {"rates", len(b.Rates) > 0}, {"mtus", len(b.MTUs) > 0},
		{"transports", len(b.Transports) > 0}, {"tx_depth", b.TxDepth != 0}, {"rx_depth", b.RxDepth != 0},
		{"cq_mod", b.CQMod != 0}, {"delay", b.Delay != 0},
		{"threads", b.Threads != 0}, {"qps", len(b.QPs) > 0}, {"thread_domains", len(b.ThreadDomains) > 0},
		{"rate", b.Rate != 0}, {"depth", b.Depth != 0}, {"signal_every", b.SignalEvery != 0},
		{"app_work", b.AppWork != 0}, {"jitter", b.Jitter != 0},
		{"fragments", len(b.Fragments) > 0}, {"large_flows", len(b.LargeFlows) > 0}, {"interval", b.Interval != 0},
		{"large_message", b.LargeMessage != 0}, {"fragment", b.Fragment != 0},
		{"registrations", len(b.Registrations) > 0}, {"buffers", b.Buffers != 0}, {"block", b.Block != 0},
		{"through", b.Through != ""}, {"messages", len(b.Messages) > 0}, {"response", b.Response != 0},
	}
	var uses []string
	switch b.Kind {
	case Perftest:
		uses = []string{"warmup", "message", "points", "rates", "mtus", "transports", "tx_depth", "rx_depth", "cq_mod", "delay"}
	case MsgRate:
		uses = []string{"warmup", "message", "through", "threads", "qps", "thread_domains", "rate", "depth", "signal_every", "app_work", "jitter"}
		if b.Through == ThroughCore {
			// The core signals its own WRs; the testbed has a switch.
			uses = []string{"warmup", "message", "through", "threads", "qps", "thread_domains", "rate", "depth", "app_work", "jitter", "delay"}
		}
	case Fragsize:
		uses = []string{"warmup", "message", "rates", "fragments", "depth", "delay"}
	case HOL:
		uses = []string{"warmup", "message", "rate", "large_flows", "interval", "large_message", "depth", "fragment", "delay"}
	case MRCacheBench:
		uses = []string{"warmup", "message", "rate", "depth", "registrations", "buffers", "block"}
	case PingPong:
		uses = []string{"warmup", "points", "rates", "mtus", "messages", "response", "delay"}
	case Peak:
		uses = []string{"warmup", "message", "points", "rates", "mtus", "transports", "tx_depth", "rx_depth", "cq_mod", "depth", "fragment", "delay"}
	case "":
		v.missingOr(p+".kind", `"" is not a benchmark kind (allowed: `+strings.Join(benchmarkKinds, ", ")+")",
			"missing (required; allowed: "+strings.Join(benchmarkKinds, ", ")+")")
		return
	default:
		v.bad(p+".kind", "%q is not a benchmark kind (allowed: %s)", b.Kind, strings.Join(benchmarkKinds, ", "))
		return
	}
	ok := true
	for _, k := range keys {
		used := false
		for _, u := range uses {
			used = used || u == k.key
		}
		if !used && (k.set || s.present(p+"."+k.key)) {
			v.bad(p+"."+k.key, "not used by kind %s (%s uses: %s)", b.Kind, b.Kind, strings.Join(uses, ", "))
			ok = false
		}
	}
	if b.Warmup <= 0 {
		v.bad(p+".warmup", "%s is not allowed (must be > 0)", b.Warmup)
	}
	if b.Message < 0 || b.Message > maxMessage {
		v.bad(p+".message", "%s is out of range (at most %s)", b.Message, Size(maxMessage))
	}
	if !ok {
		return
	}
	switch b.Kind {
	case Perftest:
		v.perftest()
	case MsgRate:
		v.msgrate()
	case Fragsize:
		v.fragsize()
	case HOL:
		v.hol()
	case MRCacheBench:
		v.mrcache()
	case PingPong:
		v.pingpong()
	case Peak:
		v.peak()
	}
}

// benchPoints checks the (rate, MTU) points of a pingpong or peak
// benchmark: points, or rates and mtus (their cross product), with no
// per-point transport.
func (v *validator) benchPoints() {
	b := v.s.Benchmark
	const p = "benchmark"
	switch {
	case len(b.Points) > 0 && (len(b.Rates) > 0 || len(b.MTUs) > 0):
		v.bad(p+".points", "give either points or rates and mtus (their cross product), not both")
	case len(b.Points) == 0 && (len(b.Rates) == 0 || len(b.MTUs) == 0):
		v.missingOr(p+".points", "empty list (give at least one point)",
			"missing (required: points, e.g. [{rate: 100Gbps, mtu: 4096}], or rates and mtus)")
	}
	for i, pt := range b.Points {
		pp := idx(p+".points", i)
		v.benchRate(pp+".rate", pt.Rate)
		v.benchMTU(pp+".mtu", pt.MTU)
		if pt.Transport != "" {
			v.bad(pp+".transport", "not used by kind %s (every point runs the kind's own set)", b.Kind)
		}
	}
	for i, r := range b.Rates {
		v.benchRate(idx(p+".rates", i), r)
	}
	for i, m := range b.MTUs {
		v.benchMTU(idx(p+".mtus", i), m)
	}
	v.knobPositive(p+".delay", b.Delay == 0, b.Delay < 0, b.Delay)
}

func (v *validator) pingpong() {
	b := v.s.Benchmark
	const p = "benchmark"
	v.benchPoints()
	if len(b.Messages) == 0 {
		v.bad(p+".messages", "empty list (give message sizes, or omit the key for 32B to 16KiB)")
	}
	for i, m := range b.Messages {
		if m < 1 || m > maxTestbedMessage {
			v.bad(idx(p+".messages", i), "%s is out of range (allowed: 1B to %s)", m, Size(maxTestbedMessage))
		}
	}
	if n := len(b.Messages) * max(len(b.Points), len(b.Rates)*len(b.MTUs)); n > maxBenchRuns {
		v.bad(p+".messages", "%d runs is too many (at most %d)", n, maxBenchRuns)
	}
	if b.Response < 1 || b.Response > maxTestbedMessage {
		v.bad(p+".response", "%s is out of range (allowed: 1B to %s)", b.Response, Size(maxTestbedMessage))
	}
}

func (v *validator) peak() {
	b := v.s.Benchmark
	const p = "benchmark"
	for i, pt := range b.Points {
		if pt.Transport != "" {
			v.bad(idx(p+".points", i)+".transport", "not used by kind peak (every point runs ByteExpress and each of transports)")
		}
	}
	// The perftest baselines run with perftest's default message (64 KiB
	// for rc, the MTU for ud); message is ByteExpress's.
	msg := b.Message
	b.Message = 0
	v.perftest()
	b.Message = msg
	if b.Message < 64 || b.Message > maxTestbedMessage {
		v.bad(p+".message", "%s is out of range (allowed: 64B to %s)", b.Message, Size(maxTestbedMessage))
	}
	v.countRange(p+".depth", b.Depth, 1, maxQueueDepth)
	if b.Fragment < 64 || b.Message >= 64 && b.Fragment > b.Message {
		v.bad(p+".fragment", "%s is out of range (allowed: 64B to the message size %s)", b.Fragment, b.Message)
	}
}

func (v *validator) mrcache() {
	b := v.s.Benchmark
	const p = "benchmark"
	if len(b.Registrations) == 0 {
		v.bad(p+".registrations", "empty list (give some of %s, or omit the key for all three)", strings.Join(RegistrationKinds, ", "))
	}
	seen := map[string]bool{}
	for i, r := range b.Registrations {
		ok := false
		for _, k := range RegistrationKinds {
			ok = ok || r == k
		}
		if !ok {
			v.bad(idx(p+".registrations", i), "%q is not a registration (allowed: %s)", r, strings.Join(RegistrationKinds, ", "))
		}
		if seen[r] {
			v.bad(idx(p+".registrations", i), "%s is listed twice", r)
		}
		seen[r] = true
	}
	if b.Message < 1 || b.Message > 64*MiB {
		v.bad(p+".message", "%s is out of range (allowed: 1B to 64MiB)", b.Message)
	}
	v.benchRate(p+".rate", b.Rate)
	v.countRange(p+".buffers", b.Buffers, 1, 1<<20)
	v.countRange(p+".depth", b.Depth, 1, min(maxQueueDepth, max(b.Buffers, 1)))
	if b.Block < 4*KiB || b.Block > GiB || b.Block < b.Message {
		v.bad(p+".block", "%s is out of range (allowed: 4KiB to 1GiB, at least message %s)", b.Block, b.Message)
	}
}

// maxTestbedMessage bounds the fragsize and hol messages: each is a
// registered buffer of the simulated host.
const maxTestbedMessage = 64 * MiB

func (v *validator) fragsize() {
	b := v.s.Benchmark
	const p = "benchmark"
	if len(b.Rates) == 0 {
		v.bad(p+".rates", "empty list (give link rates, or omit the key for [25Gbps, 100Gbps])")
	}
	for i, r := range b.Rates {
		v.benchRate(idx(p+".rates", i), r)
	}
	if len(b.Fragments) == 0 {
		v.bad(p+".fragments", "empty list (give fragment sizes, or omit the key for 512B to 64KiB)")
	}
	for i, f := range b.Fragments {
		if f < 64 || f > b.Message && b.Message >= 64 {
			v.bad(idx(p+".fragments", i), "%s is out of range (allowed: 64B to the message size %s)", f, b.Message)
		}
	}
	if len(b.Rates)*len(b.Fragments) > maxBenchRuns {
		v.bad(p+".fragments", "%d runs is too many (at most %d)", len(b.Rates)*len(b.Fragments), maxBenchRuns)
	}
	if b.Message < 64 || b.Message > maxTestbedMessage {
		v.bad(p+".message", "%s is out of range (allowed: 64B to %s)", b.Message, Size(maxTestbedMessage))
	}
	v.countRange(p+".depth", b.Depth, 1, maxQueueDepth)
	v.knobPositive(p+".delay", b.Delay == 0, b.Delay < 0, b.Delay)
}

func (v *validator) hol() {
	b := v.s.Benchmark
	const p = "benchmark"
	v.benchRate(p+".rate", b.Rate)
	if len(b.LargeFlows) == 0 {
		v.bad(p+".large_flows", "empty list (give large-flow counts, or omit the key for [0, 1, 2, 4, 8])")
	}
	for i, n := range b.LargeFlows {
		v.countRange(idx(p+".large_flows", i), n, 0, 64)
	}
	if 2*len(b.LargeFlows) > maxBenchRuns {
		v.bad(p+".large_flows", "%d runs is too many (at most %d)", 2*len(b.LargeFlows), maxBenchRuns)
	}
	if b.Message < 16 {
		v.bad(p+".message", "%s is too small (at least 16 bytes: the small message carries a sequence number and its send time)", b.Message)
	}
	if b.LargeMessage <= b.Message || b.LargeMessage > maxTestbedMessage {
		v.bad(p+".large_message", "%s is out of range (allowed: above message %s, at most %s)", b.LargeMessage, b.Message, Size(maxTestbedMessage))
	}
	if b.Interval <= 0 {
		v.bad(p+".interval", "%s is not allowed (must be > 0)", b.Interval)
	}
	v.countRange(p+".depth", b.Depth, 1, maxQueueDepth)
	if b.Fragment < 64 || b.LargeMessage > 0 && b.Fragment > b.LargeMessage {
		v.bad(p+".fragment", "%s is out of range (allowed: 64B to large_message %s)", b.Fragment, b.LargeMessage)
	}
	v.knobPositive(p+".delay", b.Delay == 0, b.Delay < 0, b.Delay)
}

func (v *validator) benchRate(path string, r Rate) {
	switch {
	case r <= 0:
		v.bad(path, "%s is not allowed (must be > 0)", r)
	case r > maxBenchRate:
		v.bad(path, "%s is too fast (at most %s)", r, maxBenchRate)
	}
}

func (v *validator) benchMTU(path string, m Size) {
	if !validMTU(m) {
		v.bad(path, "%d is not a RoCE MTU (allowed: 256, 512, 1024, 2048, 4096)", int64(m))
	}
}

func (v *validator) verbsTransport(path string, t Transport) {
	if t != RC && t != UD {
		v.bad(path, "%q is not a benchmark transport (allowed: rc, ud)", t)
	}
}

func (v *validator) perftest() {
	s := v.s
	b := s.Benchmark
	const p = "benchmark"
	switch {
	case len(b.Points) > 0 && (len(b.Rates) > 0 || len(b.MTUs) > 0):
		v.bad(p+".points", "give either points or rates and mtus (their cross product), not both")
		return
	case len(b.Points) == 0 && len(b.Rates) == 0 && len(b.MTUs) == 0:
		v.missingOr(p+".points", "empty list (give at least one point)",
			"missing (required: points, e.g. [{rate: 100Gbps, mtu: 4096}], or rates and mtus)")
		return
	case len(b.Points) == 0 && len(b.Rates) == 0:
		v.bad(p+".rates", "missing (mtus needs rates: their cross product is run)")
		return
	case len(b.Points) == 0 && len(b.MTUs) == 0:
		v.bad(p+".mtus", "missing (rates needs mtus: their cross product is run)")
		return
	}
	for i, pt := range b.Points {
		pp := idx(p+".points", i)
		v.benchRate(pp+".rate", pt.Rate)
		v.benchMTU(pp+".mtu", pt.MTU)
		if pt.Transport != "" {
			v.verbsTransport(pp+".transport", pt.Transport)
		}
	}
	for i, r := range b.Rates {
		v.benchRate(idx(p+".rates", i), r)
	}
	for i, m := range b.MTUs {
		v.benchMTU(idx(p+".mtus", i), m)
	}
	if len(b.Transports) == 0 {
		v.bad(p+".transports", "empty list (give rc, ud or both, or omit the key for [rc, ud])")
	}
	seen := map[Transport]bool{}
	for i, t := range b.Transports {
		v.verbsTransport(idx(p+".transports", i), t)
		if seen[t] {
			v.bad(idx(p+".transports", i), "%s is listed twice", t)
		}
		seen[t] = true
	}
	v.countRange(p+".tx_depth", b.TxDepth, 1, maxQueueDepth)
	v.countRange(p+".rx_depth", b.RxDepth, 1, maxQueueDepth)
	if b.CQMod < 1 || (b.TxDepth >= 1 && b.CQMod > b.TxDepth) {
		v.bad(p+".cq_mod", "%d is out of range (allowed: 1 to tx_depth %d)", b.CQMod, b.TxDepth)
	}
	v.knobPositive(p+".delay", b.Delay == 0, b.Delay < 0, b.Delay)
	if v.errs.err() != nil {
		return
	}
	runs := b.PerfRuns()
	if len(runs) > maxBenchRuns {
		v.bad(p, "%d perftest runs is too many (at most %d)", len(runs), maxBenchRuns)
		return
	}
	for _, r := range runs {
		if r.Transport == UD && b.Message > 0 && b.Message > r.MTU {
			v.bad(p+".message", "%s is above the MTU %s of a ud point (a UD message is one datagram; omit message for the MTU)", b.Message, r.MTU)
			return
		}
	}
}

func (v *validator) msgrate() {
	b := v.s.Benchmark
	const p = "benchmark"
	v.countRange(p+".threads", b.Threads, 1, maxThreads)
	if len(b.QPs) == 0 {
		v.bad(p+".qps", "empty list (give QP counts, or omit the key for 8 to 512)")
	}
	for i, n := range b.QPs {
		v.countRange(idx(p+".qps", i), n, 1, maxBenchQPs)
		if n >= 1 && b.Depth >= 1 && n*b.Depth > maxBenchCQEs {
			v.bad(idx(p+".qps", i), "%d QPs x depth %d completions exceed a CQ (at most %d)", n, b.Depth, maxBenchCQEs)
		}
	}
	if b.Through == ThroughCore {
		if b.Message <= 32 || b.Message > 4*KiB {
			v.bad(p+".message", "%s is out of range through the core (allowed: 33B, above the 32-byte answer, to 4KiB, the core's small-message limit)", b.Message)
		}
		v.knobPositive(p+".delay", b.Delay == 0, b.Delay < 0, b.Delay)
	}
	if len(b.ThreadDomains) == 0 {
		v.bad(p+".thread_domains", "empty list (give [false], [true] or both, or omit the key for both)")
	}
	if len(b.ThreadDomains) == 2 && b.ThreadDomains[0] == b.ThreadDomains[1] || len(b.ThreadDomains) > 2 {
		v.bad(p+".thread_domains", "each of false and true at most once")
	}
	if len(b.QPs)*len(b.ThreadDomains) > maxBenchRuns {
		v.bad(p+".qps", "%d runs is too many (at most %d)", len(b.QPs)*len(b.ThreadDomains), maxBenchRuns)
	}
	if b.Message <= 0 {
		v.bad(p+".message", "%s is not allowed (must be > 0)", b.Message)
	}
	v.benchRate(p+".rate", b.Rate)
	v.countRange(p+".depth", b.Depth, 1, maxQueueDepth)
	if b.Through != ThroughCore && (b.SignalEvery < 1 || (b.Depth >= 1 && b.SignalEvery > b.Depth)) {
		v.bad(p+".signal_every", "%d is out of range (allowed: 1 to depth %d)", b.SignalEvery, b.Depth)
	}
	if b.AppWork <= 0 {
		v.bad(p+".app_work", "%s is not allowed (must be > 0)", b.AppWork)
	}
	if !(b.Jitter > 0 && b.Jitter <= 1) {
		v.bad(p+".jitter", "%s is out of range (allowed: above 0%%, at most 100%%)", b.Jitter)
	}
}
