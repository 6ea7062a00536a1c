package plan

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/besim/besim/berun/wire"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
)

// psKinds are the parameter-server roles a host may be restricted to.
var psKinds = []string{"server", "ranker", "trainer"}

// FromScenario turns a besim scenario with a ps-cluster workload into a
// run plan, so that the file besim simulates is the file berun replays:
// besim's server i becomes role instance serverI (role ps-server), its
// client i (rankers first, then trainers) becomes rankerI or trainerI (role
// ps-client) with every server as a peer. Instances go round-robin, in
// hosts-file order, over the hosts whose ps_roles allow them (all hosts by
// default). The whole scenario travels to the agents (Plan.Raw), where the
// roles read the workload from it.
//
// The scenario's duration is virtual time for besim, usually a few
// milliseconds; on real hosts a longer interval is usually wanted, so dur
// (if > 0) replaces it. The scenario's warmup is kept.
func FromScenario(file string, data []byte, hs *Hosts, dur time.Duration) (*Plan, error) {
	s, err := scenarios.Parse(file, data)
	if err != nil {
		return nil, err
	}
	w := s.Workload
	if w == nil || w.Kind != "ps-cluster" {
		kind := "flows"
		switch {
		case s.Benchmark != nil:
			kind = "a benchmark"
		case w != nil:
			kind = "workload " + string(w.Kind)
		}
		return nil, fmt.Errorf("%s: berun replays ps-cluster workloads; this scenario has %s (simulate it with besim)", file, kind)
	}
	p := &Plan{Name: s.Name, File: file, Raw: data, GraceDur: DefaultGrace}
	p.Dur = time.Duration(s.Duration.Time() / sim.Nanosecond)
	if dur > 0 {
		p.Dur = dur
	}
	if p.Dur <= 0 || p.Dur > wire.MaxDuration {
		return nil, fmt.Errorf("%s: duration %v: want more than 0 and at most %v (use --duration)", file, p.Dur, wire.MaxDuration)
	}
	if warm := time.Duration(w.Warmup.Time() / sim.Nanosecond); warm >= p.Dur {
		return nil, fmt.Errorf("%s: workload.warmup %v is not shorter than the duration %v (use --duration)", file, warm, p.Dur)
	}
	p.Duration = p.Dur.String()
	take := map[string][]string{}
	for _, h := range hs.Hosts {
		for _, k := range psKinds {
			if len(h.PSRoles) == 0 || slices.Contains(h.PSRoles, k) {
				take[k] = append(take[k], h.Name)
			}
		}
	}
	var errs []error
	for _, k := range psKinds {
		n := map[string]int{"server": w.Servers, "ranker": w.Rankers, "trainer": w.Trainers}[k]
		if n > 0 && len(take[k]) == 0 {
			errs = append(errs, fmt.Errorf("%s: %d %ss but no host in the hosts file takes them (ps_roles)", file, n, k))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	servers := make([]string, w.Servers)
	for i := range servers {
		servers[i] = "server" + strconv.Itoa(i)
		p.Roles = append(p.Roles, RoleEntry{ID: servers[i], Role: "ps-server", Host: take["server"][i%len(take["server"])],
			Params: map[string]string{"index": strconv.Itoa(i)}})
	}
	for i := range w.Rankers + w.Trainers {
		k, j := "ranker", i
		if i >= w.Rankers {
			k, j = "trainer", i-w.Rankers
		}
		p.Roles = append(p.Roles, RoleEntry{ID: k + strconv.Itoa(j), Role: "ps-client", Host: take[k][j%len(take[k])],
			Peers: servers, Params: map[string]string{"index": strconv.Itoa(i)}})
	}
	return p, nil
}
