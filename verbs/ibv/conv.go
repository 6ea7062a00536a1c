package ibv

import "github.com/besim/besim/verbs"

// mtuEnum converts an MTU in bytes to enum ibv_mtu (IBV_MTU_256 = 1 ...
// IBV_MTU_4096 = 5).
func mtuEnum(m verbs.MTU) (int, bool) {
	switch m {
	case 256:
		return 1, true
	case 512:
		return 2, true
	case 1024:
		return 3, true
	case 2048:
		return 4, true
	case 4096:
		return 5, true
	}
	return 0, false
}

// mtuBytes converts enum ibv_mtu to bytes; 0 for an unknown value.
func mtuBytes(e int) verbs.MTU {
	if e < 1 || e > 5 {
		return 0
	}
	return verbs.MTU(128 << e)
}

// portRate is the nominal data rate of a port in bits/s from
// ibv_port_attr.active_speed and active_width: lanes x per-lane rate, so
// EDR 4x is 100 Gb/s and HDR 2x 100 Gb/s, as ibv_devinfo and perftest
// report. Unknown encodings give 0.
func portRate(speed, width uint8) int64 {
	var lanes int64
	switch width {
	case 1:
		lanes = 1
	case 2:
		lanes = 4
	case 4:
		lanes = 8
	case 8:
		lanes = 12
	case 16:
		lanes = 2
	}
	var mbps int64
	switch speed {
	case 1: // SDR
		mbps = 2500
	case 2: // DDR
		mbps = 5000
	case 4: // QDR
		mbps = 10000
	case 8: // FDR10
		mbps = 10000
	case 16: // FDR
		mbps = 14000
	case 32: // EDR
		mbps = 25000
	case 64: // HDR
		mbps = 50000
	case 128: // NDR
		mbps = 100000
	}
	return lanes * mbps * 1_000_000
}
