// Package holsim drives the head-of-line workload (package hol, the
// paper's Figure 13, §6.1, scheduling head-of-line blocking: the one-way
// latency of a small flow on an engine shared with large flows, with and
// without fragmentation) on the ByteExpress core over simhost (Run, on
// the Go API; scenario kind hol and the embedded scenario fig13, through
// the experiment registry). The
// simhost CPU model's linearity test (TestCPUGrowsWithMessageRate) uses
// this experiment's small flow.
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
package holsim
