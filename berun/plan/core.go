package plan

import (
	"fmt"
	"time"

	"github.com/besim/besim/berun/wire"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/workloads/fragsize"
)

// msgrateCorePlan: a msgrate benchmark through the core (fig11-core)
// runs between the first two hosts of the hosts file, msgrate-core-sender
// (the client's I/O threads, one engine per QP) on the first and
// msgrate-core-target (the server answering every message) on the second
// (ps_roles do not apply), always over verbs. Its points (each QP count,
// with and without thread domains) run one after the other in slots as a
// fragsize sweep's do; each slot's warm-up is the engines' set-up (besim
// starts its warmup once every engine is connected; here 250 ms and 2 ms
// per QP of the largest point, parameter setup) and the benchmark's
// warmup. The scenario's duration (or dur) is each point's measured
// interval.
func msgrateCorePlan(file string, data []byte, s *scenarios.Scenario, hs *Hosts, dur time.Duration) (*Plan, error) {
	b := s.Benchmark
	most := 0
	for _, q := range b.QPs {
		most = max(most, q)
	}
	setup := 250*time.Millisecond + time.Duration(most)*2*time.Millisecond
	return setupSweepPlan(file, data, s, hs, dur, "msgrate-core", "target", "points (QP counts, with and without thread domains)",
		len(b.QPs)*len(b.ThreadDomains), setup)
}

// mrcachePlan: a mrcache benchmark (§5.2) runs between the first two
// hosts of the hosts file, mrcache-sender (the I/O thread registering
// and posting) on the first and mrcache-target (the WRITEs' slots) on the
// second (ps_roles do not apply), always over verbs. The registrations run
// one after the other in slots; each slot's warm-up is the set-up (the
// one-time registrations and the QP exchange, which besim does at
// instant zero; here 250 ms and 50 us per buffer, parameter setup) and
// the benchmark's warmup. The scenario's duration (or dur) is each
// registration's measured interval.
func mrcachePlan(file string, data []byte, s *scenarios.Scenario, hs *Hosts, dur time.Duration) (*Plan, error) {
	b := s.Benchmark
	setup := 250*time.Millisecond + time.Duration(b.Buffers)*50*time.Microsecond
	return setupSweepPlan(file, data, s, hs, dur, "mrcache", "target", "registrations", len(b.Registrations), setup)
}

// setupSweepPlan is sweepPlan with a set-up before each slot's warm-up,
// given to both roles as parameter setup.
func setupSweepPlan(file string, data []byte, s *scenarios.Scenario, hs *Hosts, dur time.Duration, kind, receiver, what string, n int, setup time.Duration) (*Plan, error) {
	if len(hs.Hosts) < 2 {
		return nil, fmt.Errorf("%s: a %s benchmark runs between two hosts; the hosts file has %d", file, kind, len(hs.Hosts))
	}
	measure := s.Duration.Time()
	if dur > 0 {
		measure = sim.Time(dur.Nanoseconds()) * sim.Nanosecond
	}
	warm := sim.Time(setup.Nanoseconds())*sim.Nanosecond + s.Benchmark.Warmup.Time()
	p := &Plan{Name: s.Name, File: file, Raw: data, GraceDur: DefaultGrace}
	p.Dur = time.Duration(fragsize.SweepDuration(n, warm, measure) / sim.Nanosecond)
	if measure <= 0 || p.Dur > wire.MaxDuration {
		return nil, fmt.Errorf("%s: a measured interval of %v for each of %d %s (with the set-up %v, the warmup %v and the drain, %v): want more than 0 and at most %v in all (use --duration)",
			file, measure, n, what, setup, s.Benchmark.Warmup, p.Dur, wire.MaxDuration)
	}
	p.Duration = p.Dur.String()
	rx := kind + "-" + receiver
	p.Roles = append(p.Roles,
		RoleEntry{ID: rx, Role: rx, Host: hs.Hosts[1].Name, Params: map[string]string{"setup": setup.String()}},
		RoleEntry{ID: kind + "-sender", Role: kind + "-sender", Host: hs.Hosts[0].Name, Peers: []string{rx}, Params: map[string]string{"setup": setup.String()}})
	return p, nil
}
