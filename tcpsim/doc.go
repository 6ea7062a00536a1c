// Package tcpsim models the Linux kernel TCP stack that the paper's
// production comparisons use as their baseline (§8: "the deployed Linux
// kernel TCP/IP stack"), so that the same parameter-server workload can run
// over RDMA or over TCP on the same simulated fabric (package fabric).
//
// What it models, per connection:
//   - a byte stream on a lossy traffic class (default priority 0): frames
//     the switches drop when their shared buffer is full, never pause;
//   - DCTCP congestion control (Alizadeh et al., SIGCOMM 2010; RFC 8257),
//     the data-center choice of Linux (net.ipv4.tcp_congestion_control =
//     dctcp): ECN-capable data, a receiver that echoes CE exactly (an
//     immediate ACK whenever the CE state flips), alpha updated once per
//     window with gain g = 1/16 and cwnd cut by alpha/2 once per window;
//     with CC NewReno instead, data is not ECN-capable and only loss
//     signals congestion;
//   - slow start from an initial window of 10 segments (RFC 6928) up to
//     ssthresh, then congestion avoidance (one MSS per RTT);
//   - delayed ACKs: one ACK per two full segments, or after DelAck
//     (Linux's 40 ms TCP_DELACK_MIN); immediate ACKs for out-of-order data;
//   - loss recovery by NewReno fast retransmit (three duplicate ACKs) and by
//     retransmission timeout with RFC 6298 estimation, a minimum RTO (Linux's
//     200 ms TCP_RTO_MIN by default) and exponential backoff. There is no
//     SACK: a window with several losses recovers one hole per RTT, or by
//     timeout (Linux has SACK; this makes recovery somewhat slower).
//
// Receive interrupts are moderated as a ConnectX port's are by default
// (Config.RxUsecs, RxFrames): frames wait for the interrupt before softirq
// processing sees them.
//
// What it models per host: CPU time in the three classes of the paper's
// Table 5, each charged to a simulated core (rnic.CPU) so that it also
// delays the work it stands for: system time for send/recv system calls
// and the copies between user and kernel memory, softirq time for
// per-frame receive processing and ACK handling, user time for the
// application's per-message framing. CPUCost documents every default.
//
// Simplifications, each a conscious choice: connections are established
// without a handshake (their first RTO is MinRTO, as after a SYN's RTT
// sample); the receive window never limits the sender (autotuned buffers
// large enough for the workload); ACKs are never piggybacked on reverse
// data (a pure ACK is a 64-byte frame); segments carry sizes, not bytes:
// message boundaries are known to both ends, as with length-prefixed RPC
// framing, and a message is delivered once every byte of it has arrived in
// order.
package tcpsim
