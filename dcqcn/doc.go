// Package dcqcn models DCQCN congestion control (Zhu et al., "Congestion
// Control for Large-Scale RDMA Deployments", SIGCOMM 2015, §3) as pure,
// event-fed logic: no timers, goroutines, clocks or allocation inside. The
// ByteExpress paper (§2.2, §6.3) relies on DCQCN to regulate the RNIC's
// per-QP sending rate; this package supplies that regulator to package rnic.
//
// The shape follows quic-go's internal/congestion: a small Controller
// interface that the simulated RNIC feeds with events carrying explicit
// times, and that reports the earliest time it wants to be woken
// (NextTimer). Its boundary is typed: times are sim.Time (picoseconds),
// rates units.Rate (bits/s) and sizes units.Size (bytes), so a caller
// cannot pass a byte count where a time or a rate belongs. It imports only
// those two leaf packages: no event kernel, no other model.
//
// What is modelled:
//
//   - ReactionPoint (sender NIC, per QP): current rate Rc, target rate Rt and
//     alpha. On a CNP: Rt = Rc, Rc = Rc·(1-alpha/2), alpha = (1-g)·alpha + g,
//     and the rate-increase timer, byte counter and stage counts restart.
//     With no CNP for K, alpha = (1-g)·alpha. Rate increase is driven by a
//     timer (period T) and a byte counter (every B bytes); each expiry bumps
//     its stage count and raises the rate: fast recovery (Rc = (Rt+Rc)/2)
//     while both counts are <= F, hyper increase (Rt += i·R_HAI,
//     i = min(T,BC)-F) once both exceed F, additive increase (Rt += R_AI)
//     otherwise; after each Rt update Rc = (Rt+Rc)/2. Rc stays within
//     [MinRate, LineRate].
//   - NotificationPoint (receiver NIC, per flow): at most one CNP per flow per
//     MinInterval (the paper's N), sent on the marked packet that finds the
//     interval expired.
//   - None: no congestion control (always line rate), for comparison runs.
//
// The congestion point (RED-style ECN marking at switch egress) belongs to
// the switch model, not here.
//
// Defaults (DefaultConfig) take every value the paper fixes and fill the rest
// from ConnectX firmware defaults:
//
//	g        1/256       paper (the ns-3 HPCC simulator uses 1/16)
//	K        55 us       paper (alpha timer; must exceed N)
//	T        55 us       paper; ConnectX rpg_time_reset = 300 us, the ns-3
//	                     HPCC simulator's RPTimer = 1500 us
//	B        10 MB       paper (10,000,000 bytes); ConnectX rpg_byte_reset
//	                     default 32767
//	F        5           paper and QCN; ConnectX rpg_threshold = 1
//	R_AI     5 Mb/s      ConnectX rpg_ai_rate (also ns-3 HPCC RateAI)
//	R_HAI    50 Mb/s     ConnectX rpg_hai_rate (also ns-3 HPCC RateHAI)
//	MinRate  100 Mb/s    ns-3 HPCC MinRate; ConnectX rpg_min_rate = 1 Mb/s
//	alpha0   1           paper (ConnectX initial_alpha_value = 1023/1024)
//	N        50 us       paper (ConnectX: min_time_between_cnps)
//
// Choices where sources differ or are silent:
//
//   - Two profiles (ConnectXConfig, scenario key dcqcn.profile): the
//     paper's (DefaultConfig) keeps its RP semantics, alpha rising on each
//     decrease and decaying per quiet K. ConnectXConfig takes the ConnectX
//     firmware defaults with their sources (connectx.go) and the firmware's
//     own mechanisms: alpha sampled once per dce_tcp_rtt (AlphaSampled),
//     at most one decrease per rate_reduce_monitor_period, later CNPs
//     deferred to its end (DecreasePeriod), and the target rate clamped
//     only after a timer increase (TargetClamp). Fixed-point rounding of
//     the firmware's 10-bit alpha is not modelled (alpha is a float64).
//   - Timers start at the first CNP (as in ConnectX and ns-3): a flow that
//     never saw congestion keeps alpha = alpha0 and generates no events.
//   - Once Rc and Rt reach line rate every further increase is a no-op until
//     the next CNP restarts the counters, so the rate timer stops
//     (NextTimer = Never) and bytes are not counted.
//   - Alpha decay is computed lazily on the next event, which gives exactly
//     the value per-K wakeups would; NextTimer therefore reports only the
//     rate-increase timer.
//   - Rc = (Rt+Rc)/2 rounds up, so Rc reaches Rt exactly in integer bits/s.
//   - A CNP arriving at the same instant as a timer expiry is applied after
//     the expiry (events at or before now are processed first).
//
// Arithmetic on alpha uses explicit float64 conversions so that no platform
// fuses multiply-add (the Go spec permits fusion otherwise), keeping runs
// bit-identical across architectures.
package dcqcn
