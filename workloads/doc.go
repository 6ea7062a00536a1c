// Package workloads sits above the models and below the command lines: it
// is the index of the paper's experiments, one package each, that turn a
// scenario into traffic on a model and the measurements into a
// report.Result. This package holds no code; each subpackage registers its
// scenario kinds with the experiment registry (experiment.Register) in its
// init, and workloads/all links them all (cmd/besim imports it).
//
//	package      paper                     scenario kind         runs on
//	perftest     Table 2 (§5.1)            benchmark perftest    simulator-free: config, keys, the endpoints over verbs
//	perftest/perftestsim                   benchmark perftest    two simulated RNICs back to back (rnic)
//	pingpong     Figure 8 (§5.5)           benchmark pingpong    the core over simhost: one socket, one message outstanding
//	peak         Figure 9 (§5.5)           benchmark peak        fragsize's engine at one fragment size, beside perftestsim
//	fragsize     Figure 10 (§6.1)          benchmark fragsize    the core over simhost: two hosts, one switch
//	msgrate      Figure 11 (§6.2.1)        benchmark msgrate     one RNIC pair, I/O threads, doorbell locks (rnic); through: core, the core over simhost
//	hol          Figure 13 (§6.1)          benchmark hol         the core over simhost: one engine, small and large flows
//	incast       Table 4, Figures 14-15    workload incast-pull  simulator-free: config, worker and server machines
//	incast/incastsim                       workload incast-pull  incast over simhost on a leaf-spine, victim flows on RNICs
//	ps           Tables 5-7 (§2.1, §8)     workload ps-cluster   simulator-free: config, shards, client and server machines
//	ps/pssim     Tables 5-7 (§2.1, §8)     workload ps-cluster   ps over simhost (ByteExpress) or tcpsim (kernel TCP)
//	failover     §7.2                      workload failover     the core and byteexpress/rpc over simhost, with faults
//	flows        §3, §5 (PFC, ECN, DCQCN)  flows                 raw flows on the fabric, or rc/ud flows on RNICs
//
// Shared pieces: workloads/app (simulator-free: size distributions, the
// scenario's engine settings, the default leaf size), workloads/internal/
// simrun (the simulation drivers' error list and setup bound) and
// workloads/internal/wltest (test helpers).
//
// The simulator-free packages (this one, app, ps, incast and perftest) import no
// simulator model: they hold each workload's application logic once, as
// driven state machines (times and events in, sends and measurements out),
// which besim's drivers (pssim, incastsim, perftestsim) run in virtual time and berun's
// roles in wall-clock time over verbs or kernel TCP. The layering test
// (internal/layering) keeps it so.
package workloads
