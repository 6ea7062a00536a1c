// Package fabric models the RoCEv2 data-center network under the simulated
// RNIC: hosts' NIC uplinks, links with rate and propagation delay, output-
// queued switches with a shared buffer, 8 priorities per port, strict or DWRR
// egress scheduling, lossy classes with dynamic-threshold drop, lossless
// classes with PFC (package pfc: per ingress (port, priority) XOFF/XON,
// headroom, pause propagation and the head-of-line blocking of victims, storm
// watchdog), RED/ECN marking as DCQCN's congestion point, ECMP routing over
// BFS shortest paths (a frame's Path pins it to the Path-th equal-cost port
// after its hash's choice, the model of a host pinning a connection's paths
// by source-port entropy), and star, leaf-spine and fat-tree topologies.
//
// It is the fabric of the ByteExpress paper: §2.2 (DCQCN and PFC beneath RC),
// §3 and §6.3 (incast: many senders overwhelming one receiver path; PFC
// pauses propagating to victim flows, Figure 14), §7.2 (mini-pods inside a
// lossless big-pod; a PFC storm watchdog), §8 (25 Gbps ConnectX-5 hosts;
// "PFC duration", pause frames). Standards and models: IEEE 802.1Qbb (PFC),
// 802.3 (framing), DCQCN (Zhu et al., SIGCOMM 2015) for RED marking, htsim
// for the event structure.
//
// # Building and running
//
//	k := sim.NewKernel()
//	cfg := fabric.DefaultConfig() // 25G hosts, 12 MiB buffer, prio 3 lossless
//	cfg.Topology = fabric.Topology{Kind: fabric.LeafSpine, Leaves: 4, HostsPerLeaf: 8, Spines: 2}
//	net, err := fabric.New(k, cfg) // validates; errors name the bad field
//	net.Attach(3, myRNIC)          // replace host 3's RawHost with a custom Host
//	id, err := net.AddFlow(fabric.Flow{Src: 0, Dst: 9, Prio: 3, Size: 1 << 20})
//	net.Run(10 * sim.Millisecond)
//	rep := net.Report()            // every counter, from one place
//
// # Model
//
// Time is sim.Time (ps); Config's rates are units.Rate (bits/s) and its
// MTU (payload bytes), buffer and thresholds units.Size (bytes), while the
// packet path counts plain integer bytes (HostPort.MTU, Packet.Size,
// queue depths, the reports' counters). A frame occupies the wire
// for Packet.WireBytes (frame + 20 B preamble/SFD/IFG) at the link rate; a
// RoCEv2 data frame is payload + 62 B (RoCEv2Extra), so one line-rate flow's
// goodput is rate × MTU/(MTU+82). Switches are store-and-forward, with no
// pipeline latency of their own (fold it into the link delay). A frame holds
// switch buffer from its arrival until it starts transmission.
//
// Switch admission of a data frame arriving at port in for egress queue
// (out, prio):
//   - lossless prio: pfc.Ingress.Admit on (in, prio); XOFF when the group
//     reaches its threshold (static, or dynamic alpha × free shared buffer),
//     its headroom absorbs what is in flight; a frame that fits neither is a
//     "headroom overflow drop", counted per port and reported as a warning,
//     because it means headroom is misconfigured. Lossless frames are never
//     dropped otherwise (except by the storm watchdog's drop action).
//   - lossy prio: dropped if the egress queue would exceed alpha × free
//     shared buffer (dynamic threshold) or the shared buffer is full.
//   - ECN: an ECT frame is marked CE with the RED probability of the egress
//     queue's current bytes (ECN.Probability), drawn from the switch's own
//     sim.Stream("fabric/switch/NAME").
//
// PFC frames are sent ahead of queued data (never preempting a frame on the
// wire), consumed by the receiving port and never routed. A port honours
// pauses only for priorities with PFC enabled (Config.Switch.PFC.Lossless),
// host NICs included.
//
// # Events and allocation
//
// Every component is a long-lived sim.Handler; there is no closure or
// goroutine per packet or event. A port has at most one transmit-complete
// event plus two timers (pause expiry/watchdog, pause refresh); a link has at
// most one pending arrival (htsim's pipe: in-flight frames wait in an
// intrusive FIFO and only the head is scheduled). Frames come from the
// network's Pool and go back at their sink, so the steady state allocates
// nothing (TestSteadyStateAllocs).
//
// # Hosts
//
// A Host is pulled by its HostPort (see host.go): the port calls Next when it
// is free, telling the host which priorities are paused. RawHost, attached to
// every host by default, sends paced raw flows (AddFlow) and counts what it
// receives; the RNIC model replaces it through Network.Attach.
package fabric
