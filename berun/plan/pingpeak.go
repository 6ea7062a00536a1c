package plan

import (
	"fmt"
	"time"

	"github.com/besim/besim/berun/wire"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/workloads/peak"
	"github.com/besim/besim/workloads/perftest"
)

// pingpongPlan: a pingpong benchmark (Figure 8) runs between the first two
// hosts of the hosts file, pingpong-sender on the first and
// pingpong-server on the second (ps_roles do not apply), over kernel TCP
// or, with `berun run --transport verbs`, the ByteExpress core on the
// hosts' RDMA devices (param transport). The message sizes run one after
// the other as a fragsize sweep's points do: the scenario's duration (or
// dur) is each one's measured interval, after the benchmark's warmup,
// with a tenth of each slot to drain. The hosts' link is one point (the
// roles report which).
func pingpongPlan(file string, data []byte, s *scenarios.Scenario, hs *Hosts, dur time.Duration) (*Plan, error) {
	return sweepPlan(file, data, s, hs, dur, "pingpong", "server", "message sizes", len(s.Benchmark.Messages))
}

// peakPlan: a peak benchmark (Figure 9) runs between the first two hosts
// of the hosts file (ps_roles do not apply), always over verbs, its
// series taking turns on the link (peak.Schedule): peak-sender on the
// first host and peak-receiver on the second (ByteExpress), then, if the
// scenario has transports, peak-perftest-client on the first and
// peak-perftest-server on the second. The scenario's duration (or dur) is
// each series' measured interval, after the benchmark's warmup; the
// hosts' link is one of the scenario's points at most.
func peakPlan(file string, data []byte, s *scenarios.Scenario, hs *Hosts, dur time.Duration) (*Plan, error) {
	if len(hs.Hosts) < 2 {
		return nil, fmt.Errorf("%s: a peak benchmark runs between two hosts; the hosts file has %d", file, len(hs.Hosts))
	}
	b := s.Benchmark
	measure := s.Duration.Time()
	if dur > 0 {
		measure = sim.Time(dur.Nanoseconds()) * sim.Nanosecond
	}
	n := len(perftest.Transports(s))
	p := &Plan{Name: s.Name, File: file, Raw: data, GraceDur: DefaultGrace}
	p.Dur = time.Duration(peak.ScheduleDuration(n, b.Warmup.Time(), measure) / sim.Nanosecond)
	if measure <= 0 || p.Dur > wire.MaxDuration {
		return nil, fmt.Errorf("%s: a measured interval of %v for ByteExpress and each of %d perftest transports (with the warmup %v each and ByteExpress's drain, %v): want more than 0 and at most %v in all (use --duration)",
			file, measure, n, b.Warmup, p.Dur, wire.MaxDuration)
	}
	p.Duration = p.Dur.String()
	tx, rx := hs.Hosts[0].Name, hs.Hosts[1].Name
	p.Roles = append(p.Roles,
		RoleEntry{ID: "peak-receiver", Role: "peak-receiver", Host: rx, Params: map[string]string{}},
		RoleEntry{ID: "peak-sender", Role: "peak-sender", Host: tx, Peers: []string{"peak-receiver"}, Params: map[string]string{}})
	if n > 0 {
		p.Roles = append(p.Roles,
			RoleEntry{ID: "peak-perftest-server", Role: "peak-perftest-server", Host: rx, Params: map[string]string{}},
			RoleEntry{ID: "peak-perftest-client", Role: "peak-perftest-client", Host: tx, Peers: []string{"peak-perftest-server"}, Params: map[string]string{}})
	}
	return p, nil
}
