// Package pfc is the pure logic of IEEE 802.1Qbb Priority-based Flow Control:
// switch ingress accounting with XOFF/XON thresholds and headroom, pause
// frame generation with refresh, the receiver's per-priority pause state with
// quanta expiry, a PFC storm watchdog, and the counters and time series the
// ByteExpress paper reports (pause frames, pause duration; paper §2.2, §3,
// §6.3 and Table 7 "PFC duration").
//
// The package knows nothing about packets, ports or links: package fabric
// owns those and calls in here on enqueue, dequeue, frame transmit and frame
// receive, with explicit times (the quic-go congestion style: no timers or
// goroutines inside; the caller keeps one sim.Timer per port and asks
// NextDeadline/NextRefresh when to fire it). It imports only sim and the
// standard library.
//
// # Model
//
// A switch's packet memory is a [Buffer]: a shared pool plus a headroom pool
// carved out of it, one reservation per lossless (ingress port, priority)
// "priority group" (PG), as in Broadcom/Mellanox MMUs and the HPCC ns-3
// switch MMU (switch-mmu.cc). An [Ingress] accounts one PG:
//
//   - a frame is charged to the shared pool while the PG is below XOFF (or
//     has not asserted pause yet), otherwise to the PG's headroom;
//   - the PG asserts pause (send XOFF) once its shared bytes reach XOFF or it
//     holds anything in headroom;
//   - it releases pause (send XON, quanta 0) when its headroom is empty and
//     its shared bytes are at or below XON;
//   - a lossless frame that fits neither is a headroom-overflow drop: it can
//     only happen when headroom is misconfigured, and is counted loudly.
//
// XOFF is static (bytes) or dynamic: XOFF = Alpha × free shared bytes, the
// Choudhury-Hahne dynamic threshold that Broadcom and Mellanox ASICs use for
// PGs; XON = XOFF − XONOffset.
//
// A frame that crosses XOFF is admitted whole, so shared bytes can exceed
// XOFF by less than one frame; headroom then absorbs what arrives after the
// pause decision, which [Headroom] sizes.
//
// A [Tx] is the pause generator of one port: it remembers which priorities
// are asserted, builds the frame's class-enable vector and quanta when the
// port gets to send it (PFC frames jump the data queues but never preempt a
// frame already on the wire), and refreshes an asserted pause before it
// expires (default: every half pause time), the "XOFF with large quanta,
// explicit XON" behaviour of real switches (Cisco PFC white paper).
//
// An [Rx] is the receiving side: per priority it keeps the pause expiry
// (quanta × 512 bit times at the port rate; quanta 0 resumes at once), the
// accumulated pause duration, and the storm watchdog (Guo et al., "RDMA over
// Commodity Ethernet at Scale", SIGCOMM 2016 — the approach ByteExpress §7.2
// cites): a priority paused continuously for longer than Detection is
// declared stormed, its pauses are ignored (and with ActionDrop its queued and
// arriving frames dropped by the port) until Restore has passed.
//
// # Units
//
// Times are sim.Time (ps). At the boundary (Thresholds, Buffer.Init and
// Reserve, Headroom, the quanta conversions, Rx/Tx.Init) rates are
// units.Rate (bits/s) and sizes units.Size (bytes); the accounting that the
// packet path updates (Buffer's and Ingress's byte counts, Admit's and
// Release's frame sizes) is plain int64 bytes. One pause quantum is 512 bit
// times at the port rate (802.3 Annex 31B/802.1Qbb).
package pfc
