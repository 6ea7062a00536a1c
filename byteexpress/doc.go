// Package byteexpress is the ByteExpress (BE) core: the software
// communication layer over RC RDMA described in sections 4 to 7 of the
// paper "Deploying RDMA for Large-Scale Inference and Training Workloads"
// (the layers around it: docs/ARCHITECTURE.md), written once and run either
// over the simulated RNIC (virtual time) or over real libibverbs (wall
// time).
//
// # What it models
//
//   - Engines (§5.4, Figure 7): one RC QP each, with a work-request ring of
//     SQ depth (default 32) split into in-flight, pending and free segments;
//     doorbell batching (all pending WRs posted with one PostSend chain per
//     engine per step) and selective signalling (only the last WR of a
//     batch is signalled; its completion frees it and every earlier slot,
//     RC completing in order).
//   - Receive credits (§5.4.2): the initial count (the peer's RQ depth d)
//     is exchanged at setup; SEND and WRITE_WITH_IMM take one credit, plain
//     WRITE none. The receiver re-posts k = d/2 receives with one PostRecv
//     after consuming k, and reports them in the 4-byte credit field that
//     heads every SEND (piggybacked on data when any is going, otherwise a
//     header-only credit-update SEND). The sender waits when out of credit.
//   - Send window Cwnd (§6.3): bytes posted and not yet completed, per
//     engine; off by default (the paper's baseline). With a window set,
//     fragments and SENDs are capped at Cwnd so the bound is strict.
//   - Messages (§5.3): up to SmallMsgMax bytes (default 4 KiB) a message is
//     copied into a SEND (several small messages and control records share
//     one SEND) and copied out of the receive buffer into a bemalloc buffer
//     at the receiver. Larger messages are zero-copy (Figure 6): a metadata
//     request/response over SEND/RECV obtains a destination the receiver
//     allocates from bemalloc, then WRITEs of at most S bytes (FragSize,
//     default 4 KiB) go to p, p+S, ..., the last one a WRITE_WITH_IMM whose
//     immediate names the destination; its completion tells the receiver the
//     whole message is visible (valid under relaxed ordering). A buffer the
//     receiver exposed in advance (Socket.Expose / SendTo) skips the
//     metadata round trip. Metadata requests are pipelined up to
//     MetaLookahead messages per socket.
//   - Sockets (§6.1): logical connections multiplexed onto engines through
//     a connection table keyed by remote address. Dial attaches to the
//     existing engine or creates one; success is reported asynchronously
//     (EvConnected) after the QP information exchange through a pluggable
//     Connector. Each socket has its own FIFO; a round-robin scheduler over
//     the sendable sockets of an engine gives each at most one fragment per
//     turn while ring slots are free, so between two turns of a socket at
//     most (n-1)S bytes of other sockets are scheduled.
//   - I/O threads (§6.2): each owns engines (assigned round-robin), one CQ
//     for all their queues polled in batches and dispatched by WC.QPN, one
//     thread domain (none with NoThreadDomains, the paper's Figure 11
//     baseline: QPs then take the provider's lock-free doorbell registers
//     while they last and shared, locked ones after), and with UseSRQ one
//     SRQ. In SRQ mode credits are not
//     used (an engine advertises 0 and its peer does not count); RNR is
//     mitigated by the queue size and the MinRNRTimer/RNRRetry settings.
//   - Keepalive (§7.2): each engine sends its peer an increasing sequence
//     number every KeepaliveInterval; if the peer's number has not advanced
//     for KeepaliveTimeout the engine enters the error state, tells the
//     upper layer (EvEngineError, EvSocketFailed, EvSendFailed) and reclaims
//     its resources: the QP is moved to ERR and destroyed first, so the NIC
//     no longer touches any buffer, then receive, staging and destination
//     buffers go back to the allocator. QP errors seen in completions or
//     verbs return values take the same path.
//
// # Driven core
//
// Following etcd-raft, the core is a thread-unsafe state machine with no
// goroutines or timers of its own. (*IOThread).Poll(now) is the only place
// work happens: it takes queued API commands, drains completions, fires due
// timers, runs the scheduler, posts one batch per engine, and returns a
// Ready: the events for the application, the time by which it must run
// again (Ready.Next) and the operations it performed (Ready.Ops: doorbells,
// WRs, CQ polls, CQEs, bytes copied, allocator calls, records) so a
// simulator can charge modelled CPU time. Completions appearing in the CQ
// and API calls (see IOThread.SetWakeup) are reasons to poll earlier.
//
// Time is a time.Duration since an arbitrary epoch (int64 nanoseconds,
// monotonic): the simulator adapter passes virtual time (sim.Time
// picoseconds / 1000), package realtime the process's monotonic clock.
// Poll's argument is the core's only clock.
//
// # Ownership and concurrency
//
//   - The core is single-owner, like raft's RawNode: Endpoint and Socket
//     methods queue commands for the owning I/O thread, and each IOThread
//     is driven by one goroutine. In the simulator one goroutine does
//     everything and no lock is taken. Calls from other goroutines
//     (application threads, a side channel) need the thread's Mailbox,
//     the only cross-goroutine state: package realtime provides it
//     (realtime.Attach), so only the wall-clock runner pays for it.
//     Endpoint.Close must not run concurrently with Poll.
//   - Send/SendTo transfer the Buffer to the core, which frees it when the
//     NIC is done with it or returns it in EvSendFailed. Small messages are
//     freed as soon as they are copied.
//   - EvMessage transfers the received Buffer to the application
//     (zero-copy for large messages): it frees it later, possibly from
//     another goroutine (bemalloc's cross-heap free). Exposed buffers return
//     in the EvMessage that fills them, or in EvBufferReturned.
//   - Ready.Events is reused by the next Poll.
//
// # Credit updates cannot deadlock
//
// Credit updates travel in SENDs, which need credits themselves. The rule:
// a SEND that carries a nonzero credit return may take the last credit;
// every other credit-consuming WR needs at least two; and an engine with
// unreported re-posted receives sends an update as soon as it has one
// credit and a ring slot (ring slots and window space always come back,
// because RC acknowledgements need no credits). Suppose both sides were
// stuck with nothing in flight. The last SEND either side posted took its
// sender's last credit, so it carried a nonzero return; its receiver then
// gained credits and has sent nothing since, so it still has them, and
// (counting the d receives per side: what one side cannot send the other
// has consumed, and with fewer than k unre-posted, re-posted and must
// report) it has an update or data to send: not stuck. Updates do not
// ping-pong forever because one is sent per k >= 2 receives re-posted
// (RQDepth >= 4). TestRandomMix's tiny-queues case drives credits to zero.
//
// # Wire protocol and limits
//
// wire.go documents the SEND records and the immediate encoding. A message
// into a pre-known buffer may have at most 65536 fragments; an engine
// holds at most 32768 exposed buffers. Two endpoints dialing each other at
// the same instant get two engines (both kept; the table keeps the first).
//
// # Layering
//
// This package and its subpackages import only verbs, byteexpress/bemalloc
// and the standard library, never sim, rnic, fabric, pfc or dcqcn
// (TestLayering enforces it). The functional fake NIC used by the tests is
// verbs/fakeverbs (the reference model of the verbs conformance suite); the
// wall-clock driver is package realtime.
//
// # Layout
//
// An engine is the composition of small parts, each with its own tests
// (parts_test.go): the WR ring (ring.go), the send window (window.go), the
// credit ledger (credits.go), keepalive (keepalive.go) and the
// large-message tables (large.go). engine.go holds its state and lifecycle;
// send.go, sched.go, recv.go and teardown.go its send path, scheduler,
// receive path and failure handling. testdata/trace holds protocol traces
// (TestTraces; go test -run TestTraces -rewrite regenerates them).
package byteexpress
