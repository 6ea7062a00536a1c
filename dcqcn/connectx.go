package dcqcn

import (
	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
)

// The ConnectX firmware's DCQCN defaults (ConnectX-4 and later; the
// ByteExpress paper's hosts have 25 Gbps ConnectX-5 NICs, §7). Sources:
//
//	[nv]  NVIDIA, "DCQCN CC Parameters", DOCA SDK documentation
//	      (networking-docs.nvidia.com/doca/archive/3-4-0/dcqcn-cc-parameters):
//	      names, units, formulas and defaults of the alpha-update, rate-decrease
//	      and rate-increase parameters.
//	[mc]  Mellanox community, "DCQCN Parameters" (community.mellanox.com,
//	      DOC-2790, version 19): the alpha formulas, alpha updated once per
//	      DcQcnDceAlphaUpdatePeriod "regardless of the reception of a CNP":
//	      with a CNP alpha = (g/1024)·alpha + (1024-g)/1024, without one
//	      alpha = (g/1024)·alpha, g = dce_tcp_g.
//	[cx5] `mlxconfig -d ... q` of a ConnectX-5 Ex (MCX516A-CDA, firmware
//	      16.27.2008), posted to xdp-newbies@vger.kernel.org on 22 June
//	      2020 ("Re: CQ error on CQN 0x43e"): every DCQCN value below, the
//	      rate-increase ones and min_time_between_cnps included.
//
// Modelled as (parameter = value [source]):
const (
	// dce_tcp_g = 1019 [nv, cx5]: the estimator keeps 1019/1024 of alpha
	// per period, so the gain G = (1024-1019)/1024 [mc].
	ConnectXG float64 = 5.0 / 1024
	// dce_tcp_rtt = 1 us [nv, cx5]: the alpha update period.
	ConnectXAlphaTimer sim.Time = 1 * sim.Microsecond
	// initial_alpha_value = 1023 (of 1024) [nv, cx5].
	ConnectXInitialAlpha float64 = 1023.0 / 1024
	// rpg_time_reset = 300 us [cx5]: the rate-increase timer T.
	ConnectXRateTimer sim.Time = 300 * sim.Microsecond
	// rpg_byte_reset = 32767 bytes [cx5]: the byte counter B.
	ConnectXByteCounter units.Size = 32767 * units.Byte
	// rpg_threshold = 1 [cx5]: stages before leaving fast recovery, F.
	ConnectXFastRecoveryStages int = 1
	// rpg_ai_rate = 5 Mb/s, rpg_hai_rate = 50 Mb/s [cx5].
	ConnectXAdditiveIncrease units.Rate = 5 * units.Mbps
	ConnectXHyperIncrease    units.Rate = 50 * units.Mbps
	// rpg_min_rate = 1 Mb/s [nv, cx5].
	ConnectXMinRate units.Rate = 1 * units.Mbps
	// rate_reduce_monitor_period = 4 us [nv, cx5]: at most one decrease
	// per period (Config.DecreasePeriod).
	ConnectXDecreasePeriod sim.Time = 4 * sim.Microsecond
	// min_time_between_cnps = 2 us [cx5]: the notification point's N.
	ConnectXCNPInterval sim.Time = 2 * sim.Microsecond
)

// Not separate parameters of the model, because their defaults need none:
//
//	rpg_gd = 11 [nv, cx5]: the cut is Rc·(1 - alpha/Gd') with alpha in units
//	  of 1/1024 and Gd' = 2^11 = 2·1024, which is the paper's alpha/2.
//	rpg_min_dec_fac = 50 % [nv, cx5]: one decrease keeps at least half the
//	  rate; with alpha <= 1 the cut 1 - alpha/2 never goes below that.
//	rate_to_set_on_first_cnp = 0 [nv, cx5]: 0 keeps the rate (line rate).
//	rpg_max_rate = 0 [cx5]: the port rate (LineRate).
//	clamp_tgt_rate = 0, clamp_tgt_rate_after_time_inc = 1 [cx5]: modelled
//	  as TargetClamp = ClampAfterTimer.
//	cnp_dscp = 48, cnp_802p_prio = 6 [cx5]: the CNP's class belongs to the
//	  NIC and fabric configuration (rnic.Config.CNPPrio), not to DCQCN.

// ConnectXConfig returns the ConnectX firmware defaults for a port of
// lineRate, MinRate capped at lineRate. Its CNP interval (a
// notification-point parameter) is ConnectXCNPInterval.
func ConnectXConfig(lineRate units.Rate) Config {
	return Config{
		LineRate:           lineRate,
		MinRate:            min(ConnectXMinRate, lineRate),
		G:                  ConnectXG,
		InitialAlpha:       ConnectXInitialAlpha,
		AlphaTimer:         ConnectXAlphaTimer,
		RateTimer:          ConnectXRateTimer,
		ByteCounter:        ConnectXByteCounter,
		FastRecoveryStages: ConnectXFastRecoveryStages,
		AdditiveIncrease:   ConnectXAdditiveIncrease,
		HyperIncrease:      ConnectXHyperIncrease,
		DecreasePeriod:     ConnectXDecreasePeriod,
		AlphaSampled:       true,
		TargetClamp:        ClampAfterTimer,
	}
}
