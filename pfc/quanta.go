package pfc

import (
	"math/bits"

	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
)

// Frame and timing constants.
const (
	// QuantumBits is one pause quantum: 512 bit times at the port rate
	// (IEEE 802.3 Annex 31B, reused by 802.1Qbb).
	QuantumBits = 512
	// MaxQuanta is the largest pause time a PFC frame can carry.
	MaxQuanta = 0xFFFF
	// PauseFrameWire is a PFC frame on the wire: a 64-byte MAC control frame
	// plus preamble, SFD and inter-frame gap (20 bytes).
	PauseFrameWire = 64 + 20

	// DefaultQuanta is what a switch puts in an XOFF frame: the maximum, then
	// explicit XON (quanta 0) when the PG drains, refreshed before expiry.
	// Source: Cisco "Priority Flow Control: Build Reliable Layer 2
	// Infrastructure" white paper ("setting PAUSE for a large number of quanta
	// and then explicitly resuming"). At 25 Gbps 0xFFFF quanta is 1.342 ms.
	DefaultQuanta = MaxQuanta

	// DefaultResponse is the worst-case time the peer takes to stop after a
	// pause frame has fully arrived, used in headroom sizing. Assumption: 3.84
	// us, conservative against the IEEE 802.3/802.1Qbb upper bounds quoted in
	// vendor headroom guides (higher-layer response 40960 bit times = 1.64 us
	// at 25 GbE, 201728 bit times = 2.02 us at 100 GbE, plus a PHY interface
	// delay of 6144 / 122880 bit times). The simulated ports react at the
	// frame boundary (response 0), so this term is margin in simulation.
	DefaultResponse = 3840 * sim.Nanosecond
)

// QuantaToTime is the pause time q quanta mean at rate, rounded up to a whole
// picosecond.
func QuantaToTime(q uint16, rate units.Rate) sim.Time {
	if q == 0 || rate <= 0 {
		return 0
	}
	// ceil(q * 512 * 1e12 / rate) in 128-bit arithmetic (sim.TxTime overflows
	// int64 for transfers above ~1.15 MB, and 0xFFFF quanta is 4 MB).
	hi, lo := bits.Mul64(uint64(q)*QuantumBits, uint64(sim.Second))
	if hi >= uint64(rate) {
		return sim.Never
	}
	t, r := bits.Div64(hi, lo, uint64(rate))
	if r != 0 {
		t++
	}
	return sim.Time(t)
}

// TimeToQuanta is the smallest number of quanta that pauses for at least d at
// rate, capped at MaxQuanta. A positive d never yields 0 (which would mean
// resume).
func TimeToQuanta(d sim.Time, rate units.Rate) uint16 {
	if d <= 0 || rate <= 0 {
		return 0
	}
	// quanta = ceil(d[ps] * rate / (512 * 1e12)) in 128-bit arithmetic.
	hi, lo := bits.Mul64(uint64(d), uint64(rate))
	den := uint64(QuantumBits) * uint64(sim.Second)
	if hi >= den {
		return MaxQuanta
	}
	q, r := bits.Div64(hi, lo, den)
	if r != 0 {
		q++
	}
	if q > MaxQuanta {
		return MaxQuanta
	}
	return uint16(q)
}

// BytesIn is how many bytes a link of rate carries in d, rounded up.
func BytesIn(d sim.Time, rate units.Rate) units.Size {
	if d <= 0 || rate <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(d), uint64(rate))
	den := uint64(8 * sim.Second)
	if hi >= den {
		return 1<<63 - 1
	}
	q, r := bits.Div64(hi, lo, den)
	if r != 0 {
		q++
	}
	return units.Size(q)
}

// Headroom is the buffer a lossless priority group must keep free above XOFF
// so that nothing is dropped while the pause takes effect:
//
//	Headroom = mtu                       frame the congested port is already sending
//	                                     when it decides to pause (PFC never preempts)
//	         + PauseFrameWire            the pause frame itself (84 B)
//	         + rate × propDelay / 8      pause travelling to the peer
//	         + rate × response / 8       peer response time
//	         + mtu                       frame the peer has started and must finish
//	         + rate × propDelay / 8      data already on the cable toward us
//
// that is 2·mtu + 84 + rate·(2·propDelay + response)/8 bytes, rounded up. mtu
// is the largest frame on the wire in bytes including the 20-byte preamble and
// gap (a RoCEv2 frame with 1024 B payload is 1024+62+20 = 1106 B). The terms
// are those of the Cisco PFC white paper ("MTU on the transmitting end of
// receiver R", "speed of wire", response, "MTU of the sender") and of the
// IEEE 802.1Qbb headroom derivations (D-Max-Frame-Len, D-Pause, D-Cable,
// D-Resp); PHY interface delays, if wanted, belong in response.
//
// Counting wire bytes over-estimates buffer use by the 20-byte gaps, a small
// safety margin. With response 0 the formula is exact for besim's ports,
// which stop at the next frame boundary once a pause has arrived: tests check
// that a PG's headroom use never exceeds Headroom(rate, delay, mtu, 0).
func Headroom(rate units.Rate, propDelay sim.Time, mtu units.Size, response sim.Time) units.Size {
	return 2*mtu + PauseFrameWire + BytesIn(2*propDelay+response, rate)
}
