// Package berun is the real-host side of besim: it replays runs on hosts
// with real NICs and kernel stacks, so that what is tuned in simulation
// (send window, fragment size, credits; paper §5-§6) is confirmed on
// hardware, and it measures the paper's kernel-TCP baseline (§8) the same
// way. The command is cmd/berun; this package only documents the pieces:
//
//	berun/wire                   control protocol: bounded frames, strict messages, HMAC token handshake (fuzzed)
//	berun/internal/tcpx          framed messages over kernel TCP: the transport of the tcp roles (internal: only berun/role uses it)
//	berun/role                   the Role plug-in interface and registry; tcp-bulk, tcp-echo, and the scenario roles (ps, incast, failover, perftest, fragsize, hol, msgrate, pingpong, peak, flow)
//	berun/counters               NIC/fabric counters before and after a run (sysfs, ethtool -S, DCQCN sysfs)
//	berun/plan                   hosts file and run plan, turned into per-host assignments
//	berun/agent                  `berun agent`: one controller session at a time, roles at the start instant
//	berun/controller             `berun run`: connect, push, synchronized start, liveness, one result file
//	cmd/berun/internal/selftest  `berun selftest`: verbs loopback between two QPs on one device (internal to the command)
//	berun/e2e                    end-to-end tests with agents as processes (loopback, shaped netns)
//
// A run goes: the controller authenticates to every agent (mutual HMAC
// challenge-response; the token never crosses the network), pushes the plan
// and each host's role instances, waits until all are prepared (listeners
// bound), estimates each agent's clock offset from heartbeat round trips,
// and sends every agent the same start instant in the agent's own clock.
// Agents read counters, run their roles for the duration, read counters
// again and upload results; the controller keeps heartbeating, reports a
// host that dies or hangs as failed (host, phase, reason) and keeps the
// others' results. Every wait on either side is bounded.
//
// besim scenarios with a ps-cluster, incast-pull or failover workload, or
// a perftest, fragsize, hol, msgrate (through the NIC or the core),
// mrcache, pingpong or peak benchmark, or flows, run unedited (plan.FromScenario maps the scenario's servers,
// clients, workers and victim flows onto the hosts file): the roles replay
// the workload with the state machines besim simulates (workloads/ps,
// workloads/incast, workloads/failover, workloads/perftest, workloads/fragsize,
// workloads/hol, workloads/msgrate, workloads/mrcache, workloads/pingpong;
// peak is fragsize's and perftest's machines in turn: the same shard
// placement, draws,
// sizes and random streams), and the controller also writes the run in
// besim's result format (controller.Report) so `besim compare` puts
// simulation and hardware side by side. With `--transport verbs` the
// workload roles run the ByteExpress core on each host's RDMA device
// (role/fanverbs.go: bemalloc on the device's PD, the engine exchange over
// TCP, one wall-clock driver per I/O thread, the RoCE v2 GID and the
// scenario's lossless priority); agents need -tags rdma, and refuse
// without a device. A failover scenario's host crash becomes the crashed
// server closing its endpoint; its other fault kinds, and the other
// scenario kinds, are refused with a message saying why (plan.Refused;
// none at present). A flow scenario's flows replay as
// flow-sender/flow-receiver pairs over kernel TCP, one per flow, on the
// hosts the scenario names (role/flow.go); one whose point is an injected
// fault (pfc-storm) is refused.
//
// `berun run SCENARIO --search KEY=LO..HI --until PRED` is besim's search
// (package sweep, whose simulator is pluggable) with one run on the hosts
// per probe (controller.Search): the Table 4 search on hardware, reading
// the NICs' pause counters through the report.
package berun
