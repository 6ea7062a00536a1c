// Package simhost runs the ByteExpress core (package byteexpress) in
// virtual time: each Host is one simulated machine, an rnic NIC attached to
// a fabric node, a bemalloc pool over the NIC's protection domain and a
// byteexpress Endpoint whose I/O threads are simulator components. It is
// the "besim" half of the driven-core split of docs/ARCHITECTURE.md (the
// wall-clock half is byteexpress/realtime): the same core code, the real simulated RNIC
// (payload mode) and switch fabric underneath, modelled CPU time on top.
//
// # What it models (paper sections)
//
//   - I/O threads (§6.2, Figure 12): one Thread per byteexpress.IOThread,
//     each on its own simulated core (rnic.CPU) with its own CQ and thread
//     domain; engines are spread over threads by the core (round-robin).
//   - Event-driven polling: a production I/O thread spins on its CQ; the
//     simulation does not simulate the spinning, only the steps that find
//     work. A Thread polls when (a) its CQ's notify hook fires (a CQE landed
//     on the drained CQ, rnic.CQ.SetNotify), (b) the endpoint's wakeup hook
//     fires (the application or the side channel queued a command), (c) at
//     Ready.Next (keepalive and connect timers), and again at once when a
//     step stops early with work left. It never loops idle.
//   - CPU cost (§8.1's CPU accounting): the verbs calls inside a step are
//     charged by the RNIC's provider model (post_send, doorbell, post_recv,
//     poll_cq, reg_mr; rnic.Config), the core's own work by CPUCost from the
//     step's Ready.Ops. A step starts at max(event time, CPU free), so CPU
//     time is a resource that delays work, and busy time / elapsed time is
//     the host's CPU utilisation (HostStats.Util, Host.CPUBusy).
//   - The out-of-band QP exchange (§6.1 asynchronous connect): Cluster is
//     the byteexpress.Connector, a TCP-like side channel with a one-way
//     ControlDelay (default link delay + 10 us: a control RTT of 2 x link
//     delay + 20 us).
//   - Failures (§7.2): Host.Crash(at) models a kernel panic or power loss:
//     the NIC drops every frame and sends nothing (no ACKs), the threads stop
//     polling and the side channel stops answering, so peers find out only
//     through keepalive (or transport retries), and a connect to the dead
//     host times out.
//   - The testbed apps of the paper's §5.5 and §6.1 measurements
//     (BulkSender, BulkReceiver; DefaultTestbedLinkDelay); the Figure 10 and
//     13 experiments that use them are workloads/fragsize and workloads/hol.
//
// # Adapter contract
//
//   - Time: the core's clock is virtual nanoseconds, CoreTime(t) =
//     sim.Time/1000 truncated (sub-nanosecond instants share a step);
//     Ready.Next comes back through SimTime. A step runs at its thread's CPU
//     time: rnic's CQ.Poll sees the CQEs visible at that instant and a
//     doorbell reaches the NIC at the CPU time of the post plus MMIOLatency.
//   - Charging order: the core's work is charged so that a doorbell is rung
//     only after the WRs it carries were prepared. simhost installs the
//     endpoint's Config.Trace hook (a user Trace still runs after it); at
//     each TracePost it charges, before the post call, the step cost, the
//     completions dispatched so far, SendWR per WR of the batch and the
//     small-message copies so far. After Poll returns, the rest of
//     CPUCost.Of(Ready.Ops) is charged, so the step's total is exactly that
//     formula plus the provider's verbs costs.
//   - Events: Ready.Events go to the host's App (OnEvent(h, ev), one
//     long-lived value, no closure per message) right after the step, at
//     the thread's CPU time (Host.Now). The App owns the buffers it is given
//     and frees them (Host.Free); it may call the Socket and Endpoint API;
//     the thread runs again afterwards, never inside OnEvent. The default
//     App (FreeApp) frees everything. With Config.CheckInvariants each
//     step is followed by IOThread.CheckInvariants (credits in range, bytes
//     in flight within Cwnd, ring occupancy within the SQ depth); the first
//     violation is Cluster.Err.
//   - Shutdown: Cluster.Close closes every endpoint (the core returns the
//     buffers it holds) and pool and reports buffers still allocated and
//     QPs not destroyed: the application must have freed what it was given.
//   - simhost wraps the verbs context only to learn each thread's CQ (one
//     CreateCQ per I/O thread, in thread order) and the PD only to count
//     QPs (HostStats.LiveQPs, Host.QPs); it edits no other package.
//
// # CPU cost defaults (DefaultCPUCost)
//
// The paper gives no per-operation CPU profile, so every value is an
// assumption: a short, cache-resident bookkeeping path of a few dozen to a
// hundred-odd instructions on a ~3 GHz core, the order user-space RDMA
// stacks report (eRPC, NSDI 2019: ~100-200 ns of CPU per small RPC end to
// end; Kalia et al., ATC 2016: WQE construction in tens of ns).
//
//	Step      50 ns   per Poll: inbox check, timer-heap peek, loop overhead
//	Command   30 ns   per API command taken (Send, Dial, Close, connect reply)
//	CQE       30 ns   per completion dispatched (QPN lookup, ring/credit update),
//	                  on top of rnic's PollPerCQE 10 ns
//	SendWR    40 ns   per send WR prepared (scheduler turn, WR/SGE fill), on top
//	                  of rnic's PostSendPerWQE 20 ns (building the 64 B WQE)
//	RecvWR     5 ns   per receive re-armed, on top of rnic's PostRecvPerWQE 10 ns
//	Record    15 ns   per record written into or parsed from a SEND
//	Message   50 ns   per message handed to the application
//	Alloc     20 ns   per bemalloc Allocate/Deallocate (rpmalloc's fast path)
//	Timer     20 ns   per timer fired
//	CopyBandwidth 10 GB/s  small-message copies (single-core memcpy, cache-resident)
//
// Registration is charged by rnic (RegMRBase 5 us + 250 ns per page: a
// 4 MiB bemalloc block costs ~261 us) to whichever CPU allocates: pool
// growth in an I/O thread shows up as a long step, as it would in
// production; steady state registers nothing (paper §5.2, Figure 5).
// With these defaults a 512 B message costs the sender's I/O thread about
// 540 ns and the receiver's about 280 ns (TestCPUGrowsWithMessageRate in
// workloads/hol).
//
// # Determinism and allocation
//
// No map is iterated for output, every run is single-threaded on one
// kernel, and buffer addresses (real mmap'ed bemalloc memory, which the
// RNIC copies payload to and from) influence nothing but bytes: the same
// configuration gives identical results (TestDeterministic in
// workloads/fragsize and workloads/hol). Once the
// kernel's timing wheel, pools and rings have grown, a steady stream
// allocates no Go memory per message through the whole stack
// (TestSteadyStateZeroAllocs). BenchmarkStream reports simulator speed.
//
// Not modelled: application threads separate from the I/O threads (the
// App runs on the delivering I/O thread; charge its work with
// Host.CurrentCPU().Charge), interrupts or sleeping threads' wake-up
// latency, per-host configurations (every host gets the same Config), and
// recovery of a crashed host.
package simhost
