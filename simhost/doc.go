// Package simhost runs the ByteExpress core (package byteexpress) in
// virtual time: each Host is one simulated machine, an rnic NIC attached to
// a fabric node, a bemalloc pool over the NIC's protection domain and a
// byteexpress Endpoint whose I/O threads are simulator components. It is
// the "besim" half of DESIGN.md's driven-core split (the wall-clock half
// is byteexpress/realtime): the same core code, the real simulated RNIC
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
//   - The paper's Figure 10 (throughput against fragment size on one QP,
//     §6.1) and Figure 13 (small-flow latency against competing large flows,
//     with and without 4 KiB fragments, §6.1) as Fig10 and Fig13.
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
// 540 ns and the receiver's about 280 ns (TestCPUGrowsWithMessageRate).
//
// # Figure 10: what the model produces
//
// Fig10's testbed is two hosts under one ToR (DefaultTestbedLinkDelay =
// 250 ns per link), 1024 B MTU, 1 MiB messages, 8 outstanding, a 32-byte
// response each, SQ depth 32. Efficiency is goodput over the link's payload
// rate (rnic.LinePayloadGbps: 23.15 Gb/s at 25G, 92.59 at 100G):
//
//	fragment   512   1K    2K    4K    8K    16K   32K   64K
//	 25 Gb/s   0.50  0.68  0.81  0.89  0.94  0.97  0.98  0.99
//	100 Gb/s   0.15  0.28  0.43  0.60  0.75  0.86  0.92  0.96
//
// Nothing is fitted to the figure; the curve comes from two costs. (1) The
// work-request ring: with doorbell batching and only the last WR of a batch
// signalled (§5.4.1), a full ring of 32 fragments is posted as one batch
// and no slot frees until its last WR completes, so the NIC idles for one
// refill bubble per 32 fragments: the ACK's return, the CQE write, the
// thread's step (32 x (40 + 20) ns of WR preparation plus the doorbell),
// MMIO, and the NIC's WQE and first payload DMA reads (about 5.3 us in
// all, of which CPU ~2.2 us). 32 fragments of S bytes must cover it:
// 32 x 2 KiB at 25G is 22.6 us of wire time, 32 x 8 KiB at 100G the same,
// which is why 100G needs fragments ~4x larger. (2) The NIC's per-WQE cost
// (rnic WQECost 130 ns plus the first packet's DMA) exceeds a 1 KiB frame's
// 88 ns wire time at 100G but not its 354 ns at 25G, so at 100G every
// fragment also loses ~80 ns: 10% at 8 KiB, on top of the bubble. Removing
// those costs or deepening the ring moves the curve
// (TestFig10ComesFromCosts).
//
// Against the paper: 100G matches (clearly below line rate at 8 KiB, >= 90%
// from 32 KiB). At 25G the model reaches 90% at 4-8 KiB; 2 KiB gives 0.81,
// where the paper reports approximately 2 KiB saturating. Under a strictly
// drained ring that needs a refill bubble under ~2.5 us, less than the
// NIC's own ~1 us doorbell-to-wire latency plus any realistic CPU and RTT
// share (with zero per-WR CPU and NIC WQE costs, 0.87; with SQ depth 64,
// 0.86). The paper's engine presumably keeps the NIC busy across the
// refill in a way the core's policy does not (e.g. signalling before the
// ring is full). TestFig10Shape asserts the model's shape, not the paper's
// 2 KiB point.
//
// # Figure 13: what the model produces
//
// One engine at 25 Gb/s, a 512 B message every 20 us plus n large flows of
// 1 MiB messages (2 outstanding per flow), with 4 KiB fragments or none
// (fragment = message). One-way latency of the small flow, microseconds:
//
//	large flows        0     1      2      4      8
//	4 KiB   mean      2.7   31.9   34.2   41.5   57.8
//	        p99       3.2   54.7   55.9  152.8  267.6
//	none    mean      2.7  365    738   1792   3898
//	        p99       3.2  717   1438   2807   5977
//
// With fragments the small message waits for at most the batch in flight
// (32 x 4 KiB) and then its round-robin turn, (n-1) fragments of other
// sockets (§6.1); without, it waits behind whole 1 MiB WRITEs already in
// the ring, up to ring depth or the flows' outstanding messages. The cost
// is throughput: 20.1 Gb/s with 4 KiB fragments against 23.1 without.
//
// # Determinism and allocation
//
// No map is iterated for output, every run is single-threaded on one
// kernel, and buffer addresses (real mmap'ed bemalloc memory, which the
// RNIC copies payload to and from) influence nothing but bytes: the same
// configuration gives identical results (TestDeterministic). Once the
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
