package experiment

import (
	"math"
	"math/big"

	"github.com/besim/besim/dcqcn"
	"github.com/besim/besim/fabric"
	"github.com/besim/besim/rnic"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/simhost"
	"github.com/besim/besim/tcpsim"
	"github.com/besim/besim/units"
)

// One declaration per knob. A model's Config holds each default with its
// source (rnic.DefaultConfig, dcqcn.DefaultConfig and ConnectXConfig,
// tcpsim.DefaultConfig); the tables below bind each scenario key to the
// Config field it sets, once, for both directions: ModelDefaults shows the
// model's value in the resolved scenario (besim validate --print, every
// result's resolved_scenario), and NICConfig and TCPConfig overlay what the
// file sets onto the model's Config. The fabric values the format shares
// with fabric.DefaultConfig, and the benchmark delays, are read from the
// models in ModelDefaults (fabricDefaults) and mapped back by FabricConfig
// and the benchmark drivers. Package scenarios imports no model, so this
// package registers ModelDefaults with it at init.

func init() { scenarios.SetModelDefaults(ModelDefaults) }

// knob binds one scenario key of section S to a field of model config M.
type knob[S, M any] struct {
	key string
	// show writes the model's value into the section (a fresh one), unless
	// it is zero: a zero default is left unset (it prints absent).
	show func(m *M, s *S)
	// set writes the section's value into the model config, if the key is
	// set.
	set func(s *S, m *M)
	// isZero reports whether the model's value is zero.
	isZero func(m *M) bool
	// value is the model's value in the scenario's type, zero or not.
	value func(m *M) any
}

// val binds a key whose zero is not a value (a plain field) to a model
// field, converting with to and from.
func val[S, M any, SV, MV comparable](key string, sf func(*S) *SV, mf func(*M) *MV, to func(SV) MV, from func(MV) SV) knob[S, M] {
	var sz SV
	var mz MV
	return knob[S, M]{key: key,
		show: func(m *M, s *S) {
			if v := *mf(m); v != mz {
				*sf(s) = from(v)
			}
		},
		set: func(s *S, m *M) {
			if v := *sf(s); v != sz {
				*mf(m) = to(v)
			}
		},
		isZero: func(m *M) bool { return *mf(m) == mz },
		value:  func(m *M) any { return from(*mf(m)) },
	}
}

// ptr binds a key whose zero is a value (a pointer field, nil when unset).
func ptr[S, M any, SV any, MV comparable](key string, sf func(*S) **SV, mf func(*M) *MV, to func(SV) MV, from func(MV) SV) knob[S, M] {
	var mz MV
	return knob[S, M]{key: key,
		show: func(m *M, s *S) {
			if v := *mf(m); v != mz {
				x := from(v)
				*sf(s) = &x
			}
		},
		set: func(s *S, m *M) {
			if p := *sf(s); p != nil {
				*mf(m) = to(*p)
			}
		},
		isZero: func(m *M) bool { return *mf(m) == mz },
		value:  func(m *M) any { return from(*mf(m)) },
	}
}

// Conversions between the scenario's types and the models'.
func durTo(d scenarios.Duration) sim.Time         { return d.Time() }
func durFrom(t sim.Time) scenarios.Duration       { return scenarios.Duration(t) }
func rateTo(r scenarios.Rate) units.Rate          { return units.Rate(r) }
func rateFrom(r units.Rate) scenarios.Rate        { return scenarios.Rate(r) }
func sizeTo(s scenarios.Size) units.Size          { return units.Size(s) }
func sizeFrom(s units.Size) scenarios.Size        { return scenarios.Size(s) }
func same[T any](v T) T                           { return v }
func u8To(v int) uint8                            { return uint8(v) }
func u8From(v uint8) int                          { return int(v) }
func ratioTo(r scenarios.Ratio) float64           { return r.Float64() }
func ratioFrom(f float64) scenarios.Ratio         { return ratioOf(f) }
func alphaTo(a scenarios.AlphaUpdate) bool        { return a == scenarios.AlphaPerPeriod }
func clampTo(c scenarios.TargetClamp) dcqcn.Clamp { return clamps[c] }

func alphaFrom(sampled bool) scenarios.AlphaUpdate {
	if sampled {
		return scenarios.AlphaPerPeriod
	}
	return scenarios.AlphaOnCNP
}

var clamps = map[scenarios.TargetClamp]dcqcn.Clamp{
	scenarios.ClampAlways: dcqcn.ClampAlways, scenarios.ClampAfterTimer: dcqcn.ClampAfterTimer, scenarios.ClampNever: dcqcn.ClampNever,
}

func clampFrom(c dcqcn.Clamp) scenarios.TargetClamp {
	for k, v := range clamps {
		if v == c {
			return k
		}
	}
	return scenarios.TargetClamp(c.String())
}

// ratioOf is f as an exact ratio of integers (the models' gains are dyadic:
// 1/256, 5/1024, 1023/1024, 1), or the nearest with a denominator of at
// most 2^20 when f has no exact one that fits.
func ratioOf(f float64) scenarios.Ratio {
	r := new(big.Rat)
	if r.SetFloat64(f) != nil && r.Num().IsInt64() && r.Denom().IsInt64() && r.Denom().Int64() <= 1<<20 {
		return scenarios.Ratio{Num: r.Num().Int64(), Den: r.Denom().Int64()}
	}
	const den = 1 << 20
	return scenarios.Ratio{Num: int64(math.Round(f * den)), Den: den}
}

// rnicKnobs are the rnic section's keys (all but cc and payload, the
// scenario layer's, qp, perftest's attributes, and mr_cache, off unless
// given) and the rnic.Config fields they set.
var rnicKnobs = []knob[scenarios.RNIC, rnic.Config]{
	ptr("wqe_cost", func(r *scenarios.RNIC) **scenarios.Duration { return &r.WQECost }, func(c *rnic.Config) *sim.Time { return &c.WQECost }, durTo, durFrom),
	ptr("packet_cost", func(r *scenarios.RNIC) **scenarios.Duration { return &r.PacketCost }, func(c *rnic.Config) *sim.Time { return &c.PacketCost }, durTo, durFrom),
	val("units", func(r *scenarios.RNIC) *int { return &r.Units }, func(c *rnic.Config) *int { return &c.Units }, same[int], same[int]),
	ptr("cqe_cost", func(r *scenarios.RNIC) **scenarios.Duration { return &r.CQECost }, func(c *rnic.Config) *sim.Time { return &c.CQECost }, durTo, durFrom),
	val("qp_cache_entries", func(r *scenarios.RNIC) *int { return &r.QPCacheEntries }, func(c *rnic.Config) *int { return &c.QPCacheEntries }, same[int], same[int]),
	val("rx_buffer", func(r *scenarios.RNIC) *scenarios.Size { return &r.RxBuffer }, func(c *rnic.Config) *units.Size { return &c.RxBuffer }, sizeTo, sizeFrom),
	val("ack_req_every", func(r *scenarios.RNIC) *int { return &r.AckReqEvery }, func(c *rnic.Config) *int { return &c.AckReqEvery }, same[int], same[int]),
	ptr("cnp_prio", func(r *scenarios.RNIC) **int { return &r.CNPPrio }, func(c *rnic.Config) *uint8 { return &c.CNPPrio }, u8To, u8From),
	val("pcie.bandwidth", func(r *scenarios.RNIC) *scenarios.Rate { return &r.PCIe.Bandwidth }, func(c *rnic.Config) *units.Rate { return &c.DMABandwidth }, rateTo, rateFrom),
	ptr("pcie.read_latency", func(r *scenarios.RNIC) **scenarios.Duration { return &r.PCIe.ReadLatency }, func(c *rnic.Config) *sim.Time { return &c.DMAReadLatency }, durTo, durFrom),
	ptr("pcie.write_latency", func(r *scenarios.RNIC) **scenarios.Duration { return &r.PCIe.WriteLatency }, func(c *rnic.Config) *sim.Time { return &c.DMAWriteLatency }, durTo, durFrom),
	ptr("pcie.mmio_latency", func(r *scenarios.RNIC) **scenarios.Duration { return &r.PCIe.MMIOLatency }, func(c *rnic.Config) *sim.Time { return &c.MMIOLatency }, durTo, durFrom),
	ptr("doorbells.lock_free", func(r *scenarios.RNIC) **int { return &r.Doorbells.LockFree }, func(c *rnic.Config) *int { return &c.DedicatedBFRegs }, same[int], same[int]),
	val("doorbells.shared", func(r *scenarios.RNIC) *int { return &r.Doorbells.Shared }, func(c *rnic.Config) *int { return &c.SharedBFRegs }, same[int], same[int]),
	ptr("cpu.post_send", func(r *scenarios.RNIC) **scenarios.Duration { return &r.CPU.PostSend }, func(c *rnic.Config) *sim.Time { return &c.PostSendCall }, durTo, durFrom),
	ptr("cpu.post_send_per_wqe", func(r *scenarios.RNIC) **scenarios.Duration { return &r.CPU.PostSendPerWQE }, func(c *rnic.Config) *sim.Time { return &c.PostSendPerWQE }, durTo, durFrom),
	ptr("cpu.doorbell", func(r *scenarios.RNIC) **scenarios.Duration { return &r.CPU.Doorbell }, func(c *rnic.Config) *sim.Time { return &c.DoorbellCost }, durTo, durFrom),
	ptr("cpu.post_recv", func(r *scenarios.RNIC) **scenarios.Duration { return &r.CPU.PostRecv }, func(c *rnic.Config) *sim.Time { return &c.PostRecvCall }, durTo, durFrom),
	ptr("cpu.post_recv_per_wqe", func(r *scenarios.RNIC) **scenarios.Duration { return &r.CPU.PostRecvPerWQE }, func(c *rnic.Config) *sim.Time { return &c.PostRecvPerWQE }, durTo, durFrom),
	ptr("cpu.poll", func(r *scenarios.RNIC) **scenarios.Duration { return &r.CPU.Poll }, func(c *rnic.Config) *sim.Time { return &c.PollCall }, durTo, durFrom),
	ptr("cpu.poll_per_cqe", func(r *scenarios.RNIC) **scenarios.Duration { return &r.CPU.PollPerCQE }, func(c *rnic.Config) *sim.Time { return &c.PollPerCQE }, durTo, durFrom),
	ptr("cpu.lock_acquire", func(r *scenarios.RNIC) **scenarios.Duration { return &r.CPU.LockAcquire }, func(c *rnic.Config) *sim.Time { return &c.LockAcquire }, durTo, durFrom),
	ptr("cpu.lock_transfer", func(r *scenarios.RNIC) **scenarios.Duration { return &r.CPU.LockTransfer }, func(c *rnic.Config) *sim.Time { return &c.LockTransfer }, durTo, durFrom),
	ptr("cpu.reg_mr", func(r *scenarios.RNIC) **scenarios.Duration { return &r.CPU.RegMR }, func(c *rnic.Config) *sim.Time { return &c.RegMRBase }, durTo, durFrom),
	ptr("cpu.reg_mr_per_page", func(r *scenarios.RNIC) **scenarios.Duration { return &r.CPU.RegMRPerPage }, func(c *rnic.Config) *sim.Time { return &c.RegMRPerPage }, durTo, durFrom),
}

// tcpKnobs are workload.tcp's keys and the tcpsim.Config fields they set.
// prio's default is 0 (tcpsim.DefaultPrio, the lossy default class): it
// prints as 0, not absent.
var tcpKnobs = []knob[scenarios.TCP, tcpsim.Config]{
	val("cc", func(t *scenarios.TCP) *string { return &t.CC }, func(c *tcpsim.Config) *tcpsim.CC { return &c.CC },
		func(s string) tcpsim.CC { return tcpsim.CC(s) }, func(c tcpsim.CC) string { return string(c) }),
	val("mss", func(t *scenarios.TCP) *scenarios.Size { return &t.MSS }, func(c *tcpsim.Config) *units.Size { return &c.MSS }, sizeTo, sizeFrom),
	val("prio", func(t *scenarios.TCP) *int { return &t.Prio }, func(c *tcpsim.Config) *uint8 { return &c.Prio }, u8To, u8From),
	val("init_cwnd", func(t *scenarios.TCP) *int { return &t.InitCwnd }, func(c *tcpsim.Config) *int { return &c.InitCwnd }, same[int], same[int]),
	val("min_rto", func(t *scenarios.TCP) *scenarios.Duration { return &t.MinRTO }, func(c *tcpsim.Config) *sim.Time { return &c.MinRTO }, durTo, durFrom),
	val("delayed_ack", func(t *scenarios.TCP) *scenarios.Duration { return &t.DelayedAck }, func(c *tcpsim.Config) *sim.Time { return &c.DelAck }, durTo, durFrom),
	val("ack_every", func(t *scenarios.TCP) *int { return &t.AckEvery }, func(c *tcpsim.Config) *int { return &c.AckEvery }, same[int], same[int]),
	val("threads", func(t *scenarios.TCP) *int { return &t.Threads }, func(c *tcpsim.Config) *int { return &c.Threads }, same[int], same[int]),
	ptr("rx_usecs", func(t *scenarios.TCP) **scenarios.Duration { return &t.RxUsecs }, func(c *tcpsim.Config) *sim.Time { return &c.RxUsecs }, durTo, durFrom),
	val("rx_frames", func(t *scenarios.TCP) *int { return &t.RxFrames }, func(c *tcpsim.Config) *int { return &c.RxFrames }, same[int], same[int]),
}

// TCPConfig is every host's TCP stack for workload.tcp:
// tcpsim.DefaultConfig with the keys set. rx_usecs 0 turns interrupt
// moderation off.
func TCPConfig(t *scenarios.TCP) tcpsim.Config {
	c := tcpsim.DefaultConfig()
	if t == nil {
		return c
	}
	for _, k := range tcpKnobs {
		k.set(t, &c)
	}
	c.NoRxModeration = t.RxUsecs != nil && *t.RxUsecs == 0
	return c
}

// dcqcnModel is what the dcqcn section sets: the reaction point's
// dcqcn.Config and the notification point's CNP interval (an rnic.Config
// field, but a DCQCN parameter with a value per profile).
type dcqcnModel struct {
	dcqcn.Config
	CNPInterval sim.Time
}

// dcqcnKnobs are the dcqcn section's keys (all but profile, which picks
// the model's defaults) and the fields they set.
var dcqcnKnobs = []knob[scenarios.DCQCN, dcqcnModel]{
	val("g", func(d *scenarios.DCQCN) *scenarios.Ratio { return &d.G }, func(m *dcqcnModel) *float64 { return &m.G }, ratioTo, ratioFrom),
	val("initial_alpha", func(d *scenarios.DCQCN) *scenarios.Ratio { return &d.InitialAlpha }, func(m *dcqcnModel) *float64 { return &m.InitialAlpha }, ratioTo, ratioFrom),
	val("alpha_timer", func(d *scenarios.DCQCN) *scenarios.Duration { return &d.AlphaTimer }, func(m *dcqcnModel) *sim.Time { return &m.AlphaTimer }, durTo, durFrom),
	val("rate_timer", func(d *scenarios.DCQCN) *scenarios.Duration { return &d.RateTimer }, func(m *dcqcnModel) *sim.Time { return &m.RateTimer }, durTo, durFrom),
	val("byte_counter", func(d *scenarios.DCQCN) *scenarios.Size { return &d.ByteCounter }, func(m *dcqcnModel) *units.Size { return &m.ByteCounter }, sizeTo, sizeFrom),
	ptr("fast_recovery", func(d *scenarios.DCQCN) **int { return &d.FastRecovery }, func(m *dcqcnModel) *int { return &m.FastRecoveryStages }, same[int], same[int]),
	val("ai_rate", func(d *scenarios.DCQCN) *scenarios.Rate { return &d.AIRate }, func(m *dcqcnModel) *units.Rate { return &m.AdditiveIncrease }, rateTo, rateFrom),
	val("hai_rate", func(d *scenarios.DCQCN) *scenarios.Rate { return &d.HAIRate }, func(m *dcqcnModel) *units.Rate { return &m.HyperIncrease }, rateTo, rateFrom),
	val("min_rate", func(d *scenarios.DCQCN) *scenarios.Rate { return &d.MinRate }, func(m *dcqcnModel) *units.Rate { return &m.MinRate }, rateTo, rateFrom),
	ptr("cnp_interval", func(d *scenarios.DCQCN) **scenarios.Duration { return &d.CNPInterval }, func(m *dcqcnModel) *sim.Time { return &m.CNPInterval }, durTo, durFrom),
	ptr("decrease_period", func(d *scenarios.DCQCN) **scenarios.Duration { return &d.DecreasePeriod }, func(m *dcqcnModel) *sim.Time { return &m.DecreasePeriod }, durTo, durFrom),
	val("alpha_update", func(d *scenarios.DCQCN) *scenarios.AlphaUpdate { return &d.AlphaUpdate }, func(m *dcqcnModel) *bool { return &m.AlphaSampled }, alphaTo, alphaFrom),
	val("target_clamp", func(d *scenarios.DCQCN) *scenarios.TargetClamp { return &d.TargetClamp }, func(m *dcqcnModel) *dcqcn.Clamp { return &m.TargetClamp }, clampTo, clampFrom),
}

// dcqcnProfile is the model's DCQCN for a port of lineRate under the
// scenario's dcqcn.profile: dcqcn.DefaultConfig and the CNP interval of
// rnic.DefaultConfig, or dcqcn.ConnectXConfig and ConnectXCNPInterval.
func dcqcnProfile(d *scenarios.DCQCN, lineRate units.Rate) dcqcnModel {
	if d != nil && d.Profile == scenarios.ProfileConnectX {
		return dcqcnModel{dcqcn.ConnectXConfig(lineRate), dcqcn.ConnectXCNPInterval}
	}
	return dcqcnModel{dcqcn.DefaultConfig(lineRate), rnic.DefaultConfig().CNPInterval}
}

// dcqcnFor is the model's DCQCN with the scenario's dcqcn keys set.
func dcqcnFor(s *scenarios.Scenario, lineRate units.Rate) dcqcnModel {
	m := dcqcnProfile(s.DCQCN, lineRate)
	if d := s.DCQCN; d != nil {
		for _, k := range dcqcnKnobs {
			k.set(d, &m)
		}
	}
	m.MinRate = min(m.MinRate, lineRate)
	return m
}

// ModelDefaults are the model's values of the scenario's rnic, dcqcn and
// workload.tcp keys (see scenarios.ModelDefaults): rnic.DefaultConfig's,
// the dcqcn profile's for a port at the host link rate (a benchmark's
// min_rate is not capped: its points run at several rates), and
// tcpsim.DefaultConfig's.
func ModelDefaults(s *scenarios.Scenario) scenarios.ModelDefaults {
	var out scenarios.ModelDefaults
	if s.RNIC != nil {
		c := rnic.DefaultConfig()
		r := new(scenarios.RNIC)
		for _, k := range rnicKnobs {
			k.show(&c, r)
		}
		out.RNIC = r
	}
	if s.DCQCN != nil {
		line := units.Rate(math.MaxInt64)
		if hr := s.Fabric.Links.HostRate; hr > 0 && s.Benchmark == nil {
			line = units.Rate(hr)
		}
		m := dcqcnProfile(s.DCQCN, line)
		d := new(scenarios.DCQCN)
		for _, k := range dcqcnKnobs {
			k.show(&m, d)
		}
		out.DCQCN = d
	}
	if w := s.Workload; w != nil && w.TCP != nil {
		c := tcpsim.DefaultConfig()
		t := new(scenarios.TCP)
		for _, k := range tcpKnobs {
			k.show(&c, t)
		}
		out.TCP = t
	}
	fabricDefaults(&out)
	out.WireDelay = scenarios.Duration(rnic.DefaultWireDelay)
	out.TestbedDelay = scenarios.Duration(simhost.DefaultTestbedLinkDelay)
	return out
}

// fabricDefaults sets the fabric model's values of the keys whose default
// the scenario format shares with fabric.DefaultConfig (the others are the
// format's own choices, in package scenarios). FabricConfig maps them back.
func fabricDefaults(out *scenarios.ModelDefaults) {
	c := fabric.DefaultConfig()
	out.Links = &scenarios.Links{Rate: scenarios.Rate(c.HostLink.Rate), Delay: scenarios.Duration(c.HostLink.Delay)}
	out.Switch = &scenarios.Switch{Buffer: scenarios.Size(c.Switch.Buffer)}
	out.Hosts = &scenarios.Hosts{MTU: scenarios.Size(c.MTU)}
	out.PriorityPFC = &scenarios.PriorityPFC{Alpha: ratioOf(c.Switch.PFC.Alpha)}
	out.ECN = &scenarios.ECN{Pmax: scenarios.Fraction(c.Switch.ECN[fabric.DefaultLosslessPrio].Pmax)}
	out.PFC = &scenarios.PFC{Quanta: int(c.Switch.PFC.Quanta)}
	out.Watchdog = &scenarios.Watchdog{Detect: scenarios.Duration(c.Switch.PFC.Watchdog.Detection)}
}
