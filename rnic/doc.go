// Package rnic is besim's simulated RDMA NIC: a RoCEv2 RC/UD transport,
// a NIC resource and cost model, and the host-side provider costs (doorbells,
// their locks) that the paper's I/O threads pay, behind the verbs port. It
// passes the verbs/verbstest conformance suite, so the ByteExpress core runs
// on it exactly as on libibverbs (docs/ARCHITECTURE.md "Network models").
//
// # Using it
//
// A NIC is a fabric.Host. Build one, attach it to a fabric host port (or to
// a back-to-back Wire), then open verbs contexts on it:
//
//	nic, _ := rnic.New(k, "h0", rnic.DefaultConfig())
//	_ = network.Attach(0, nic)       // fabric.Network; or rnic.NewWire(...).Connect(a, 1, b, 2)
//	ctx, _ := nic.Open()             // *rnic.Context implements verbs.Context
//
// CPU cost: provider calls are charged to the Context's current CPU (a
// simulated core, rnic.CPU). The simulator running an I/O thread calls
// ctx.SetCPU(thread.cpu) before the thread's step; posts, polls and
// registrations advance cpu.Now() by their modelled cost (spinning on a
// contended doorbell lock included, reported as CPUStats.Spin/Lock), a
// doorbell reaches the NIC at cpu.Now()+MMIOLatency, and the thread's next
// step is due at cpu.Now(). Application work is cpu.Charge(d).
//
// Completion hook: (*CQ).SetNotify(h, tag) makes the NIC call
// h.OnEvent(now, tag) when a CQE lands on a CQ its poller drained (a Poll
// that returned fewer entries than asked), so an I/O thread can sleep until
// there is work. CQEs are pollable from the instant the NIC's write of them
// reaches host memory.
//
// The measurements built on this model live with their experiments:
// workloads/perftest (ib_send_bw-like, paper §5.1 and Table 2) and
// workloads/msgrate (eight I/O threads, QP count, with or without thread
// domains: paper §6.2.1 and Figure 11); LinePayloadGbps is the line payload
// rate they compare with.
//
// # Transport (IBTA vol. 1 ch. 9, RoCEv2 annex A17)
//
// QPs follow the ibverbs state machine through verbs.CheckModify. RC: the
// requester segments SEND, WRITE (with immediate) and READ requests into
// MTU-sized packets with 24-bit PSNs and first/middle/last/only opcodes; it
// sets the ACK-request flag on the last packet of every message and on every
// AckReqEvery-th packet of long ones, and the responder acknowledges exactly
// those (and duplicates); an ACK waiting for the wire is replaced by a newer
// one (coalescing), so under load one ACK covers many packets. That is the
// documented ACK policy. The responder checks PSNs: a gap draws one NAK
// (sequence error) per episode and later packets are dropped until the
// expected one arrives; the requester goes back to the NAK'd PSN (go-back-N,
// packets are re-read from host memory, nothing is buffered). The
// retransmission timer is 4.096 us x 2^timeout; a timeout or sequence NAK
// without progress uses up one of retry_cnt retries (progress restores
// them); when they are gone the QP enters ERR, the WQE at the head completes
// with WCRetryExcErr and the rest with WCWRFlushErr. At most 2^23 PSNs are
// unacknowledged (half the PSN space, so PSN comparisons never wrap): a WQE
// that would pass that waits for acknowledgements, and the timer stays armed
// while WQEs are outstanding, so a QP that cannot progress ends in
// WCRetryExcErr, never a silent stall. A SEND or
// WRITE_WITH_IMM that finds no posted receive (own RQ or SRQ) draws an RNR
// NAK carrying the responder's min_rnr_timer; the requester waits that long
// (verbs.RNRTimerNS) and retries, rnr_retry times (7: forever), then
// WCRNRRetryExcErr. READ responses are implicit ACKs; a lost response makes
// the requester re-request from the missing PSN, and responses and ACKs
// leave the responder in PSN order. Remote access checks (rkey, PD, bounds,
// MR and QP access flags) fail with NAK remote access error: WCRemAccessErr
// at the requester, the responder QP enters ERR (IBTA responder class B).
// A SEND longer than the receive is WCLocLenErr at the responder and
// WCRemInvReqErr at the requester. Send completions follow selective
// signalling (errors always complete); receive completions carry QPN, and
// for UD the source QP, with the 40-byte GRH placed in front of the data.
// UD datagrams are at most the port MTU (longer ones are refused at post
// time) and are dropped when no receive is posted or the Q_Key differs.
//
// Payloads: by default bytes really move between registered regions at the
// process addresses given to RegMR (tests map them with syscall.Mmap outside
// the Go heap, as bemalloc does); Config.SizesOnly moves lengths only, for
// large simulations. Between the two, for a consumer that parses its SENDs
// but not the application payload it WRITEs (the ByteExpress core):
// Config.RecvView hands a received SEND's bytes to the poller with its
// completion (verbs.WC.Data) instead of writing the receive buffer, and
// Config.RDMAHead moves only a message's first bytes in WRITEs and READs
// (the rest is timed and counted, not copied). Relaxed ordering is visible only through completions:
// WRITE packets into an MR registered with AccessRelaxedOrdering reach
// memory only together with (after) the message's last packet, so a reader
// polling the buffer sees it out of order, while any completion that follows
// the WRITE implies all of it is visible.
//
// Congestion control (Config.CC) is pluggable behind dcqcn.Controller:
// "none" or "dcqcn". With DCQCN every RC QP has a reaction point that paces
// its packets (requests and READ responses) and data packets are sent
// ECN-capable; the receiving NIC's notification point answers CE-marked
// packets with CNPs (fabric.KindCNP, priority CNPPrio, at most one per QP per
// CNPInterval). The congestion point is the switch's ECN marking.
//
// # NIC resource and cost model
//
// Each QP is bound to one of Units processing units (QPN mod Units). A unit
// is a serial server: per send WQE (or READ served, or receive WQE consumed)
// it spends WQECost, and per packet it gathers the payload at DMABandwidth
// (the PCIe read channel is also shared NIC-wide); it prepares a QP's next
// packet while the previous one serializes, so a QP's packet period is
// max(unit time, wire time). An idle QP additionally waits DMAReadLatency
// for the WQE fetch (not for a single WR posted to an empty SQ: BlueFlame
// pushes it with the doorbell) and DMAReadLatency for the first payload
// read. Every packet also occupies the NIC-wide TX or RX pipeline for
// PacketCost (the datasheet packet rate). The receive side charges the unit
// WQECost per receive WQE consumed and CQECost per CQE, and writes data at
// DMABandwidth; arrivals that would queue more than RxBuffer bytes' worth of
// line-rate time are dropped (RxBufferDrops). The QP context cache is an
// LRU of QPCacheEntries; a miss costs the unit a DMA read round trip.
//
// Memory translation caches (off by default): with MPTCacheEntries or
// MTTCacheEntries > 0 the NIC looks up the MR (MPT entry: key, bounds,
// access) and every MTTPage-byte page (MTT entry) a packet's payload
// touches, when it gathers the payload (send WQEs, READ responses) and when
// it places one (a SEND's receive buffer, a WRITE's target). The caches are
// set-associative (MRCacheWays ways, LRU in a set); a miss costs the unit
// one DMA read round trip, an MPT miss and the packet's MTT misses two
// dependent ones; deregistration invalidates the MR's entries, so a region
// registered per message misses every time. Counted in Stats.MPTCache* and
// MTTCache*. Not translated: the READ requester's placement of responses.
//
// Paper Table 2 follows from these costs rather than from constants. For RC,
// ib_send_bw's 64 KiB message is one WQE segmented by the NIC: 130 ns once,
// then 64 packets at 1 KiB/212 Gb/s = 38.6 ns each, below the 88.5 ns a
// 1 KiB frame takes on a 100 Gb/s wire, so RC is wire-bound everywhere. UD
// needs one send WQE per MTU datagram (and at the receiver one receive WQE
// and one CQE each): 130 + 38.6 ns = 168.6 ns per 1 KiB datagram, i.e. 48.6
// Gb/s at 100G/1KB, and 130 + 154.6 ns per 4 KiB datagram, i.e. 115 Gb/s at
// 200G/4KB, while 25G/1KB and 100G/4KB stay wire-bound. The model gives
// (Gb/s, paper in brackets): RC 23.15 (23.15), 91.3 (92.26), 98.0 (97.03),
// 187.8 (191.36); UD 22.97 (22.97), 48.5 (48.29), 97.9 (95.74), 115.1
// (114.70). DMABandwidth is physical; WQECost is the one value chosen within
// the public range (see below), and the same pair fits all four UD rows,
// which suggests the paper measured one PCIe Gen4 NIC at several link
// speeds (an assumption).
//
// Provider doorbells (paper §6.2.1, Figure 11): a Context hands each new QP
// one of DedicatedBFRegs lock-free doorbell registers, then one of
// SharedBFRegs shared ones (least used first), as mlx5's mlx5_get_qp_uar
// does. Ringing a shared register takes its spin lock: wait for the holder,
// then one cache-line transfer per CPU contending at the handoff if another
// CPU held it last (a test-and-set lock's handoff), then DoorbellCost (the
// BlueFlame copy and store fence are done under the lock). A thread domain
// has its own register and also skips the QP's SQ lock. So with eight
// threads, QPs beyond the dedicated registers share locks across threads
// and the message rate falls; with one TD per thread it does not. The model
// gives 20.7 Mmsg/s up to 64 QPs, then 17.0, 15.0 and 14.1 at 128, 256 and
// 512 QPs (31.7% of CPU time in doorbell locks), and a flat 21.3 with TDs.
//
// # Defaults and their sources
//
//	PortMTU        4096 B   IB maximum; ConnectX reports active_mtu 4096 with a jumbo netdev. Clamped at
//	                        Attach to the largest IB MTU within the fabric's Ethernet MTU (1024 for 1500).
//	TrafficPrio    3        NVIDIA RoCE configuration guides (lossless priority 3; fabric.DefaultLosslessPrio).
//	                        AH ServiceLevel != 0 selects the priority instead.
//	FlowLabel      0        the QP's ECMP entropy is per QP. An AH flow label L != 0 (RoCEv2 NICs derive the
//	                        UDP source port from it) pins the path: frames carry entropy L>>8 and
//	                        fabric.Packet.Path L&0xff (byteexpress.PathLabel).
//	CNPPrio        6        ConnectX default cnp_802p_prio (CNP DSCP 48).
//	AckReqEvery    16       assumption (IBTA leaves ACK coalescing to the implementation).
//	RxBuffer       512 KiB  assumption (port receive buffers are not documented per model).
//	WQECost        130 ns   assumption: 7.7 M WQE/s per queue, the order of public single-queue rates
//	                        (e.g. Snabb's ConnectX-4 single send queue tests stay far below line rate
//	                        for small packets). With DMABandwidth it fits Table 2's UD column.
//	PacketCost     5 ns     ConnectX-5 product brief: up to 200 M messages/s.
//	Units          16       assumption: 16 x 7.7 M WQE/s stays under the 200 Mpps datasheet rate.
//	DMABandwidth   212 Gb/s PCIe Gen4 x16: 16 GT/s x 16 x 128/130 = 252 Gb/s raw; 256 B TLP payloads with
//	                        ~24 B header/framing/LCRC and DLLP/completion overhead leave ~84% (Neugebauer et
//	                        al., "Understanding PCIe performance for end host networking", SIGCOMM 2018).
//	                        Gen3 x16 is half (~106 Gb/s): set it for a ConnectX-5 in a Gen3 slot.
//	DMAReadLatency 500 ns   Neugebauer et al. measure PCIe DMA read round trips of about 0.5 us.
//	DMAWriteLatency 250 ns  assumption: half a round trip (posted write).
//	MMIOLatency    150 ns   assumption: a posted MMIO write crossing the root complex.
//	CQECost        20 ns    assumption.
//	QPCacheEntries 1024     assumption: context cache sizes are unpublished; RC studies (FaSST OSDI 2016,
//	                        ScaleRPC EuroSys 2019) see ConnectX throughput fall past hundreds to thousands
//	                        of active QPs. Miss: one DMAReadLatency of unit time.
//	MPTCacheEntries, MTTCacheEntries 0 (not modelled): the sizes of ConnectX's on-chip MPT/MTT caches are
//	                        unpublished. The published evidence is qualitative: LITE (Tsai and Zhang,
//	                        SOSP 2017, §2.4) reports RDMA performance falling with the number and total size
//	                        of MRs as the RNIC's SRAM caches of MR metadata and page translations miss,
//	                        and FaRM (NSDI 2014) registers 2 GB pages to keep translations in the NIC.
//	                        Default off keeps every committed result unchanged; a scenario that turns them
//	                        on gives sizes as parameters and sweeps them (results/mr-cache).
//	MRCacheWays    8        assumption. MTTPage 4096: the host page size (no huge pages).
//	PostSendCall   40 ns    assumption (mlx5_post_send bookkeeping).
//	PostSendPerWQE 20 ns    assumption (building one 64 B WQE).
//	DoorbellCost   150 ns   assumption: BlueFlame write-combined copy plus sfence (mmio_flush_writes),
//	                        done under the bfreg lock.
//	PostRecvCall   20 ns, PostRecvPerWQE 10 ns, PollCall 15 ns, PollPerCQE 10 ns: assumptions.
//	LockAcquire    10 ns    uncontended atomic on a cached line (assumption).
//	LockTransfer   150 ns   a cache line moving between cores, 100-300 ns across sockets (David,
//	                        Guerraoui, Trigonakis, "Everything you always wanted to know about
//	                        synchronization but were afraid to ask", SOSP 2013).
//	DedicatedBFRegs 64      mlx5: max(MLX5_NUM_LOW_LAT_UUARS = 4, MLX5_TOTAL_UUARS - 12) dedicated
//	SharedBFRegs   12       bfregs and MLX5_MED_BFREGS_TSHOLD = 12 shared ones; assumption:
//	                        MLX5_TOTAL_UUARS = 76 (64 dedicated), where Figure 11 bends (stock: 16 -> 4).
//	RegMRBase      5 us, RegMRPerPage 250 ns: assumption (4 MiB registers in ~0.26 ms, the order
//	                        reported for ibv_reg_mr page pinning).
//	CC             none; DCQCN from dcqcn.DefaultConfig(port rate); CNPInterval 50 us (dcqcn).
//
// Device limits reported by Attr are a ConnectX-5's (max_qp_wr 32768,
// max_sge 30, max_cqe 4194303, max_mr 2^24, max_srq_wr 32767).
//
// # Events and memory
//
// No closure or goroutine per packet: the NIC has one wake-up timer for its
// uplink, each QP one retransmission timer, each CQ one notify timer;
// packets come from the fabric pool and go back at their sink; transmit
// packets are built when the uplink asks (fabric.Host.Next), CNPs first,
// then ACK/NAKs, then data round-robin over QPs whose packet is prepared and
// whose DCQCN pacing allows, skipping PFC-paused priorities. The steady WRITE
// stream allocates nothing (TestSteadyWriteZeroAllocs).
//
// Not modelled: UC, atomics, SQD/SQE, fences, memory windows, asynchronous
// events, NIC-generated PFC (receive overflow drops
// instead), multiple ports; a full CQ drops CQEs (counted) instead of
// raising an error.
package rnic
