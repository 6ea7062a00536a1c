// Package workloads drives the ByteExpress core over the simulated cluster
// (package simhost) with the paper's application traffic:
//
//   - RunIncast: the synthetic incast of Figure 14 (§6.3): workers pulling
//     from many parameter servers (closed loop or open-loop Poisson), a
//     victim flow exposed to PFC propagation, and bandwidth-test flows; it
//     reports pull latency, worker and victim goodput, PFC counters and
//     simulated CPU.
//   - RunPS: the parameter-server cluster of §2.1 (Figure 1): shards hashed
//     over servers, rankers with fan-out fetches, trainers that fetch,
//     compute and push.
//
// Applications are one long-lived value per host (simhost.App) and timers
// are sim.Timer values: no closure or goroutine per message. Every random
// choice comes from a sim.Stream named after its component, so a run is
// deterministic for a seed.
package workloads
