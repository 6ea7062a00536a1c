// Package hol is the paper's Figure 13 workload (§6.1, scheduling
// head-of-line blocking), written once for both runners and free of the
// simulator: one engine between two hosts carries a small flow (a
// SmallSize-byte message every Interval, stamped with its sequence number
// and send time) and 0..8 large flows (fragsize's Sender and Receiver:
// LargeSize messages, LargeWindow outstanding, a 32-byte response each),
// with fragmentation or without. It holds the configuration and its
// translation from a scenario, the small flow's state machines
// (SmallSender: when to send and with what header; LatencyReceiver: the
// one-way latency of the messages sent in the measured interval, and their
// order), the latency statistics, and the reduction to the hol table and
// metrics. besim drives it over simhost (package holsim, which also holds
// what the model produces). It imports no simulator model.
package hol
