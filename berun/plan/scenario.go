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
	"github.com/besim/besim/workloads/fragsize"
)

// psKinds are the scenario roles a host may be restricted to (ps_roles):
// a ps-cluster's servers, rankers and trainers, an incast-pull's servers
// and workers, a failover scenario's servers and clients.
var psKinds = []string{"server", "ranker", "trainer", "worker", "client"}

// FromScenario turns a besim scenario with a ps-cluster, incast-pull or
// failover workload, a perftest, fragsize, hol, msgrate (through the NIC
// or the core), mrcache, pingpong or peak benchmark (perftestPlan,
// fragsizePlan, holPlan, msgratePlan, msgrateCorePlan, mrcachePlan,
// pingpongPlan, peakPlan), or a flow scenario
// (flowsPlan), into a run
// plan, so that the file besim simulates is the file berun replays (see
// psPlan, incastPlan and failoverPlan for the instances). Instances
// go round-robin, in hosts-file order, over the hosts whose ps_roles allow
// them (all hosts by default). The whole scenario travels to the agents
// (Plan.Raw), where the roles read the workload from it.
//
// The scenario's duration is virtual time for besim, usually a few
// milliseconds; on real hosts a longer interval is usually wanted, so dur
// (if > 0) replaces it. The scenario's warmup is kept.
func FromScenario(file string, data []byte, hs *Hosts, dur time.Duration) (*Plan, error) {
	s, err := scenarios.Parse(file, data)
	if err != nil {
		return nil, err
	}
	if s.Benchmark != nil && s.Benchmark.Kind == scenarios.Perftest {
		return perftestPlan(file, data, s, hs, dur)
	}
	if s.Benchmark != nil && s.Benchmark.Kind == scenarios.Fragsize {
		return fragsizePlan(file, data, s, hs, dur)
	}
	if s.Benchmark != nil && s.Benchmark.Kind == scenarios.HOL {
		return holPlan(file, data, s, hs, dur)
	}
	if s.Benchmark != nil && s.Benchmark.Kind == scenarios.PingPong {
		return pingpongPlan(file, data, s, hs, dur)
	}
	if s.Benchmark != nil && s.Benchmark.Kind == scenarios.Peak {
		return peakPlan(file, data, s, hs, dur)
	}
	if s.Benchmark != nil && s.Benchmark.Kind == scenarios.MsgRate {
		if s.Benchmark.Through == scenarios.ThroughCore {
			return msgrateCorePlan(file, data, s, hs, dur)
		}
		return msgratePlan(file, data, s, hs, dur)
	}
	if s.Benchmark != nil && s.Benchmark.Kind == scenarios.MRCacheBench {
		return mrcachePlan(file, data, s, hs, dur)
	}
	w := s.Workload
	if w == nil && s.Benchmark == nil {
		return flowsPlan(file, data, s, hs, dur)
	}
	if w == nil || w.Kind != scenarios.PSCluster && w.Kind != scenarios.IncastPull && w.Kind != scenarios.Failover {
		kind := "a benchmark"
		switch {
		case s.Benchmark != nil && Refused[string(s.Benchmark.Kind)] != "":
			return nil, fmt.Errorf("%s: benchmark.kind %s: %s", file, s.Benchmark.Kind, Refused[string(s.Benchmark.Kind)])
		case s.Benchmark != nil:
			kind = "benchmark " + string(s.Benchmark.Kind)
		case w != nil:
			kind = "workload " + string(w.Kind)
		}
		return nil, fmt.Errorf("%s: berun replays ps-cluster, incast-pull and failover workloads, perftest, fragsize, hol, msgrate, mrcache, pingpong and peak benchmarks and flow scenarios; this scenario has %s (simulate it with besim)", file, kind)
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
	if w.Kind == scenarios.IncastPull {
		return incastPlan(p, file, w, hs)
	}
	if w.Kind == scenarios.Failover {
		return failoverPlan(p, file, s, hs)
	}
	return psPlan(p, file, w, hs)
}

// takers lists, per scenario role kind, the hosts that take it.
func takers(hs *Hosts) map[string][]string {
	take := map[string][]string{}
	for _, h := range hs.Hosts {
		for _, k := range psKinds {
			if len(h.PSRoles) == 0 || slices.Contains(h.PSRoles, k) {
				take[k] = append(take[k], h.Name)
			}
		}
	}
	return take
}

// psPlan: besim's server i becomes role instance serverI (role ps-server),
// its client i (rankers first, then trainers) rankerI or trainerI (role
// ps-client) with every server as a peer, in server order: with
// workload.rpc, a client's RPC layer takes peer i as server i, so shard
// group g's replicas are ps.ReplicaSet's servers, as in besim (the roles
// run the layer over verbs only: cmd/berun refuses rpc with --transport
// tcp).
func psPlan(p *Plan, file string, w *scenarios.Workload, hs *Hosts) (*Plan, error) {
	take := takers(hs)
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

// incastPlan: besim's server i becomes serverI (role incast-server), its
// worker i workerI (role incast-worker) with every server as a peer. The
// servers avoid the workers' hosts where other hosts take servers, as
// besim puts them on other leaves. The victim flow becomes a tcp-bulk pair
// (victim-tx on the first server's host, victim-rx on the first worker's),
// bandwidth flow i a pair bwI-tx (on server hosts, round-robin) into
// bwI-rx on worker i mod workers' host: kernel TCP where besim runs
// perftest-like RC streams, so on hardware they measure what PFC pauses
// do to a TCP flow sharing the path, in the lossy class unless the hosts
// map TCP to the lossless one.
func incastPlan(p *Plan, file string, w *scenarios.Workload, hs *Hosts) (*Plan, error) {
	take := takers(hs)
	var errs []error
	if len(take["worker"]) == 0 {
		errs = append(errs, fmt.Errorf("%s: %d workers but no host in the hosts file takes them (ps_roles)", file, w.Workers))
	}
	if w.Servers > 0 && len(take["server"]) == 0 {
		errs = append(errs, fmt.Errorf("%s: %d servers but no host in the hosts file takes them (ps_roles)", file, w.Servers))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	workerHosts := map[string]bool{}
	workers := make([]string, w.Workers)
	for i := range workers {
		workers[i] = "worker" + strconv.Itoa(i)
		workerHosts[take["worker"][i%len(take["worker"])]] = true
	}
	srvHosts := slices.DeleteFunc(slices.Clone(take["server"]), func(h string) bool { return workerHosts[h] })
	if len(srvHosts) == 0 {
		srvHosts = take["server"]
	}
	servers := make([]string, w.Servers)
	for i := range servers {
		servers[i] = "server" + strconv.Itoa(i)
		p.Roles = append(p.Roles, RoleEntry{ID: servers[i], Role: "incast-server", Host: srvHosts[i%len(srvHosts)],
			Params: map[string]string{"index": strconv.Itoa(i)}})
	}
	for i, id := range workers {
		p.Roles = append(p.Roles, RoleEntry{ID: id, Role: "incast-worker", Host: take["worker"][i%len(take["worker"])],
			Peers: servers, Params: map[string]string{"index": strconv.Itoa(i)}})
	}
	msg := strconv.FormatInt(int64(w.VictimMessage), 10)
	if w.VictimMessage == 0 {
		msg = strconv.Itoa(64 << 10)
	}
	pair := func(name, src, dst string) {
		p.Roles = append(p.Roles,
			RoleEntry{ID: name + "-rx", Role: "tcp-bulk", Host: dst, Params: map[string]string{"mode": "sink"}},
			RoleEntry{ID: name + "-tx", Role: "tcp-bulk", Host: src, Peers: []string{name + "-rx"},
				Params: map[string]string{"mode": "send", "message_size": msg}})
	}
	if w.VictimOn() {
		pair("victim", srvHosts[0], take["worker"][0])
	}
	for i := range w.BandwidthFlows {
		pair("bw"+strconv.Itoa(i), srvHosts[i%len(srvHosts)], take["worker"][i%w.Workers%len(take["worker"])])
	}
	return p, nil
}

// perftestPlan: a perftest benchmark (Table 2) runs between the first two
// hosts of the hosts file, perftest-client on the first and
// perftest-server on the second (ps_roles do not apply). The scenario's
// duration (or dur) is the measured interval of each transport; the run
// lasts, per transport, the benchmark's warmup and that interval. The
// roles measure at the hosts' own link rate and MTU and report which of
// the scenario's points that is.
func perftestPlan(file string, data []byte, s *scenarios.Scenario, hs *Hosts, dur time.Duration) (*Plan, error) {
	if len(hs.Hosts) < 2 {
		return nil, fmt.Errorf("%s: a perftest benchmark runs between two hosts; the hosts file has %d", file, len(hs.Hosts))
	}
	measure := time.Duration(s.Duration.Time() / sim.Nanosecond)
	if dur > 0 {
		measure = dur
	}
	warm := time.Duration(s.Benchmark.Warmup.Time() / sim.Nanosecond)
	var ts []scenarios.Transport
	for _, r := range s.Benchmark.PerfRuns() {
		if !slices.Contains(ts, r.Transport) {
			ts = append(ts, r.Transport)
		}
	}
	p := &Plan{Name: s.Name, File: file, Raw: data, GraceDur: DefaultGrace}
	p.Dur = time.Duration(len(ts)) * (warm + measure)
	if measure <= 0 || p.Dur > wire.MaxDuration {
		return nil, fmt.Errorf("%s: a measured interval of %v for each of %d transports (with the warmup %v each, %v): want more than 0 and at most %v in all (use --duration)",
			file, measure, len(ts), warm, p.Dur, wire.MaxDuration)
	}
	p.Duration = p.Dur.String()
	client, server := hs.Hosts[0].Name, hs.Hosts[1].Name
	p.Roles = append(p.Roles,
		RoleEntry{ID: "perftest-server", Role: "perftest-server", Host: server, Params: map[string]string{}},
		RoleEntry{ID: "perftest-client", Role: "perftest-client", Host: client, Peers: []string{"perftest-server"}, Params: map[string]string{}})
	return p, nil
}

// failoverPlan: besim's replica hosts become serverN (role
// failover-server, N the host index of the scenario's layout: replica A of
// shard s is L+s, replica B 2L+s), its client i clientI (role
// failover-client) with every server as a peer, replica A of each shard
// first. The fault is a host crash berun can cause: the scenario's
// host-crash (without a restart) of a replica host becomes crash_at on
// that server, the warmup plus the fault's at after the start, and the
// clients measure from it; without faults, as in besim, replica A of
// shard 0 crashes 5 ms after the warmup. Any other fault is refused, and
// so is tcp_fallback (the roles have no second transport).
func failoverPlan(p *Plan, file string, s *scenarios.Scenario, hs *Hosts) (*Plan, error) {
	w := s.Workload
	take := takers(hs)
	var errs []error
	if len(take["server"]) == 0 {
		errs = append(errs, fmt.Errorf("%s: %d replica servers but no host in the hosts file takes servers (ps_roles)", file, 2*w.Shards))
	}
	if len(take["client"]) == 0 {
		errs = append(errs, fmt.Errorf("%s: %d clients but no host in the hosts file takes clients (ps_roles)", file, w.Clients))
	}
	if w.TCPFallback {
		errs = append(errs, fmt.Errorf("%s: workload.tcp_fallback: the failover roles have one transport (--transport); berun cannot replay the fallback to TCP", file))
	}
	L := max(w.Shards, w.Clients, w.HostsPerLeaf)
	crashHost, crashAt := L, 5*time.Millisecond // besim's default fault
	for i, f := range s.Faults {
		at := fmt.Sprintf("%s: faults[%d]", file, i)
		switch {
		case i > 0:
			errs = append(errs, fmt.Errorf("%s: berun replays one fault, a host crash; this scenario has %d (simulate the others with besim)", at, len(s.Faults)))
		case f.Kind != scenarios.FaultHostCrash:
			errs = append(errs, fmt.Errorf("%s: kind %s: berun can cause a host crash (the server closes its endpoint) and nothing else; simulate %s with besim", at, f.Kind, f.Kind))
		case f.Duration > 0:
			errs = append(errs, fmt.Errorf("%s: duration %s: a crashed server does not come back in berun; drop the duration", at, f.Duration))
		case f.Host == nil || (*f.Host < L || *f.Host >= L+w.Shards) && (*f.Host < 2*L || *f.Host >= 2*L+w.Shards):
			errs = append(errs, fmt.Errorf("%s: host: berun crashes a replica server (hosts %d..%d and %d..%d)", at, L, L+w.Shards-1, 2*L, 2*L+w.Shards-1))
		default:
			crashHost, crashAt = *f.Host, time.Duration(f.At.Time()/sim.Nanosecond)
		}
		if i > 0 {
			break
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	crash := time.Duration(w.Warmup.Time()/sim.Nanosecond) + crashAt
	if crash >= p.Dur {
		return nil, fmt.Errorf("%s: the crash at %v (warmup and fault) is not before the end of the run, %v (use --duration)", file, crash, p.Dur)
	}
	var servers []string
	for _, base := range []int{L, 2 * L} {
		for sh := range w.Shards {
			id := "server" + strconv.Itoa(base+sh)
			servers = append(servers, id)
			params := map[string]string{"index": strconv.Itoa(base + sh)}
			if base+sh == crashHost {
				params["crash_at"] = crash.String()
			}
			p.Roles = append(p.Roles, RoleEntry{ID: id, Role: "failover-server", Host: take["server"][(len(servers)-1)%len(take["server"])], Params: params})
		}
	}
	for i := range w.Clients {
		p.Roles = append(p.Roles, RoleEntry{ID: "client" + strconv.Itoa(i), Role: "failover-client", Host: take["client"][i%len(take["client"])],
			Peers: servers, Params: map[string]string{"index": strconv.Itoa(i), "fault_at": crash.String(), "crashed": strconv.Itoa(crashHost)}})
	}
	return p, nil
}

// fragsizePlan: a fragsize benchmark (Figure 10) runs between the first
// two hosts of the hosts file, fragsize-sender on the first and
// fragsize-receiver on the second (ps_roles do not apply), always over
// verbs. The fragment sizes run one after the other (fragsize.Sweep): the
// scenario's duration (or dur) is each one's measured interval, after the
// benchmark's warmup, with a tenth of each slot to drain. The hosts' link
// is one rate: the receiver reads its port's, which names the point in
// besim's metrics.
func fragsizePlan(file string, data []byte, s *scenarios.Scenario, hs *Hosts, dur time.Duration) (*Plan, error) {
	return sweepPlan(file, data, s, hs, dur, "fragsize", "receiver", "fragment sizes", len(s.Benchmark.Fragments))
}

// holPlan: a hol benchmark (Figure 13) runs between the first two hosts of
// the hosts file, hol-sender on the first and hol-receiver on the second
// (ps_roles do not apply), always over verbs. Its points (each large-flow
// count, with fragmentation and without) run one after the other as a
// fragsize sweep's do: the scenario's duration (or dur) is each one's
// measured interval, after the benchmark's warmup, with a tenth of each
// slot to drain.
func holPlan(file string, data []byte, s *scenarios.Scenario, hs *Hosts, dur time.Duration) (*Plan, error) {
	return sweepPlan(file, data, s, hs, dur, "hol", "receiver", "points (large-flow counts, fragmented and whole)", 2*len(s.Benchmark.LargeFlows))
}

// msgratePlan: a msgrate benchmark (Figure 11) runs between the first two
// hosts of the hosts file, msgrate-sender (the I/O threads) on the first
// and msgrate-target (the memory the WRITEs land in) on the second
// (ps_roles do not apply), always over verbs. Its points (each QP count,
// with and without thread domains) run one after the other as a fragsize
// sweep's do: the scenario's duration (or dur) is each one's measured
// interval, after the benchmark's warmup, with a tenth of each slot to
// drain.
func msgratePlan(file string, data []byte, s *scenarios.Scenario, hs *Hosts, dur time.Duration) (*Plan, error) {
	return sweepPlan(file, data, s, hs, dur, "msgrate", "target", "points (QP counts, with and without thread domains)", len(s.Benchmark.QPs)*len(s.Benchmark.ThreadDomains))
}

// sweepPlan is a two-host benchmark whose n points run one after the
// other in slots (fragsize.Sweep): KIND-sender on the first host of the
// hosts file, KIND-RECEIVER (its peer) on the second.
func sweepPlan(file string, data []byte, s *scenarios.Scenario, hs *Hosts, dur time.Duration, kind, receiver, what string, n int) (*Plan, error) {
	if len(hs.Hosts) < 2 {
		return nil, fmt.Errorf("%s: a %s benchmark runs between two hosts; the hosts file has %d", file, kind, len(hs.Hosts))
	}
	b := s.Benchmark
	measure := s.Duration.Time()
	if dur > 0 {
		measure = sim.Time(dur.Nanoseconds()) * sim.Nanosecond
	}
	p := &Plan{Name: s.Name, File: file, Raw: data, GraceDur: DefaultGrace}
	p.Dur = time.Duration(fragsize.SweepDuration(n, b.Warmup.Time(), measure) / sim.Nanosecond)
	if measure <= 0 || p.Dur > wire.MaxDuration {
		return nil, fmt.Errorf("%s: a measured interval of %v for each of %d %s (with the warmup %v and the drain, %v): want more than 0 and at most %v in all (use --duration)",
			file, measure, n, what, b.Warmup, p.Dur, wire.MaxDuration)
	}
	p.Duration = p.Dur.String()
	rx := kind + "-" + receiver
	p.Roles = append(p.Roles,
		RoleEntry{ID: rx, Role: rx, Host: hs.Hosts[1].Name, Params: map[string]string{}},
		RoleEntry{ID: kind + "-sender", Role: kind + "-sender", Host: hs.Hosts[0].Name, Peers: []string{rx}, Params: map[string]string{}})
	return p, nil
}

// Replayed are the scenario kinds (experiment.Kind: a workload kind, a
// benchmark kind, or "flows") berun replays on real hosts; Refused the
// kinds it refuses, with the reason FromScenario gives. Every kind besim
// registers is in one of them (berun/e2e's TestEveryKindReplayedOrRefused).
var (
	Replayed = []string{"ps-cluster", "incast-pull", "failover", "perftest", "fragsize", "hol", "msgrate", "mrcache", "pingpong", "peak", "flows"}
	Refused  = map[string]string{}
)

// flowsPlan: a flow scenario (a flows section, no workload or benchmark)
// replays each flow instance (scenarios.ExpandFlows, in file order) as a
// pair fN-rx (role flow-receiver) on the flow's destination host and fN-tx
// (role flow-sender) on its source host, the scenario's host i being the
// hosts file's i-th host (so the file needs as many hosts as the flows
// use: an incast of 16 senders needs its 16 hosts, or a cut-down copy of
// the scenario). Each sender gets the flow's start, size, rate (none for
// rate: line) and message size; the flows are kernel TCP streams
// (cmd/berun says so for --transport verbs). A scenario with faults is
// refused: its point is a fault injected into the simulated fabric (a
// PFC storm, link loss, a crash mid-flow) that berun cannot cause on a
// real one.
func flowsPlan(file string, data []byte, s *scenarios.Scenario, hs *Hosts, dur time.Duration) (*Plan, error) {
	if len(s.Faults) > 0 {
		return nil, fmt.Errorf("%s: faults[0] kind %s: the point of this flow scenario is a fault injected into the simulated fabric, which berun cannot cause on a real one (it replays a flow scenario's flows, without faults; simulate it with besim)", file, s.Faults[0].Kind)
	}
	fis := s.ExpandFlows()
	if len(fis) == 0 {
		return nil, fmt.Errorf("%s: the scenario has no flows, no workload and no benchmark: nothing to replay", file)
	}
	need := 0
	for _, fi := range fis {
		need = max(need, fi.Src+1, fi.Dst+1)
	}
	if len(hs.Hosts) < need {
		return nil, fmt.Errorf("%s: the flows use scenario hosts 0..%d, and scenario host i runs on the hosts file's i-th host; the hosts file has %d (add hosts, or cut the scenario's flows down)", file, need-1, len(hs.Hosts))
	}
	p := &Plan{Name: s.Name, File: file, Raw: data, GraceDur: DefaultGrace}
	p.Dur = time.Duration(s.Duration.Time() / sim.Nanosecond)
	if dur > 0 {
		p.Dur = dur
	}
	if p.Dur <= 0 || p.Dur > wire.MaxDuration {
		return nil, fmt.Errorf("%s: duration %v: want more than 0 and at most %v (use --duration)", file, p.Dur, wire.MaxDuration)
	}
	p.Duration = p.Dur.String()
	for i, fi := range fis {
		start := time.Duration(fi.Start.Time() / sim.Nanosecond)
		if start >= p.Dur {
			return nil, fmt.Errorf("%s: flow %s starts at %v, not before the run's end %v (use --duration)", file, fi.Name, start, p.Dur)
		}
		id := "f" + strconv.Itoa(i)
		rate := "0"
		if !fi.Line {
			rate = strconv.FormatInt(int64(fi.Rate), 10)
		}
		msg := int64(64 << 10)
		if fi.Message > 0 {
			msg = int64(fi.Message)
		}
		p.Roles = append(p.Roles,
			RoleEntry{ID: id + "-rx", Role: "flow-receiver", Host: hs.Hosts[fi.Dst].Name, Params: map[string]string{"name": fi.Name, "message": strconv.FormatInt(msg, 10)}},
			RoleEntry{ID: id + "-tx", Role: "flow-sender", Host: hs.Hosts[fi.Src].Name, Peers: []string{id + "-rx"},
				Params: map[string]string{"name": fi.Name, "start": start.String(), "size": strconv.FormatInt(int64(fi.Size), 10), "rate": rate, "message": strconv.FormatInt(msg, 10)}})
	}
	return p, nil
}
