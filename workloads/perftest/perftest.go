// Package perftest is the ib_send_bw-like bandwidth benchmark of the
// paper's §5.1 (Table 2: RC against UD), written once for both runners and
// free of the simulator. It holds the configuration and its translation
// from a benchmark scenario (FromScenario), the metric names (Key,
// Metric), the link's payload line rate (LinePayloadGbps), and the
// application logic, driven step by step over the verbs port alone
// (package verbs): an Endpoint sets up one QP given a verbs.Context and a
// registered-memory address, connects it from the peer's verbs.QPInfo,
// and on every Step polls its CQ and either keeps TxDepth SENDs
// outstanding (every CQMod-th signalled) or keeps RxDepth receives posted
// and counts what arrives in the measured interval.
//
// besim drives two Endpoints on simulated RNICs back to back in virtual
// time (package perftestsim); berun's perftest-server and perftest-client
// roles drive one each on a real RDMA device in wall-clock time, with the
// QP information exchanged over TCP. It imports no simulator model (sim's
// Time only).
package perftest

import (
	"errors"
	"fmt"

	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/verbs"
)

// GRHBytes is the Global Routing Header a NIC writes in front of every UD
// receive (RoCE and InfiniBand alike): a UD receive buffer is this much
// larger than the message, and a UD receive completion's byte count
// includes it.
const GRHBytes = 40

// QKey is the Q_Key both UD QPs use.
const QKey = 0x1111

// Config is one ib_send_bw-like measurement: one QP per side, SENDs of
// MsgSize with TxDepth outstanding, every CQMod-th signalled, RxDepth
// receives kept posted; the receiver counts what completes in
// [Warmup, Warmup+Duration) of its clock.
type Config struct {
	Transport verbs.QPType // verbs.RC (default) or verbs.UD
	MTU       verbs.MTU    // path MTU (default 4096); UD sends at the port MTU
	// MsgSize defaults to 65536 bytes for RC (perftest's default size) and
	// to the MTU for UD (a UD message cannot exceed it).
	MsgSize  int
	TxDepth  int      // default 128 (perftest -t)
	RxDepth  int      // default 512 (perftest -r)
	CQMod    int      // default 100 (perftest --cq-mod), at most TxDepth
	Warmup   sim.Time // default 50 us
	Duration sim.Time // measured interval, default 500 us

	// Addressing on a real device (zero in simulation): the QPs' port
	// (0: 1), source GID index, traffic class (DSCP << 2) and service
	// level (802.1p priority).
	Port         uint8
	GIDIndex     uint8
	TrafficClass uint8
	ServiceLevel uint8
}

// WithDefaults returns c with its zero fields set to the defaults noted
// on Config.
func (c Config) WithDefaults() Config {
	if c.Transport == 0 {
		c.Transport = verbs.RC
	}
	if c.MTU == 0 {
		c.MTU = 4096
	}
	if c.MsgSize == 0 {
		c.MsgSize = 65536
		if c.Transport == verbs.UD {
			c.MsgSize = int(c.MTU)
		}
	}
	if c.TxDepth == 0 {
		c.TxDepth = 128
	}
	if c.RxDepth == 0 {
		c.RxDepth = 512
	}
	if c.CQMod == 0 {
		c.CQMod = 100
	}
	c.CQMod = min(c.CQMod, c.TxDepth)
	if c.Warmup == 0 {
		c.Warmup = 50 * sim.Microsecond
	}
	if c.Duration == 0 {
		c.Duration = 500 * sim.Microsecond
	}
	if c.Port == 0 {
		c.Port = 1
	}
	return c
}

// Validate checks a configuration with its defaults filled in.
func (c Config) Validate() error {
	switch {
	case c.Transport != verbs.RC && c.Transport != verbs.UD:
		return fmt.Errorf("perftest: transport %v (want RC or UD)", c.Transport)
	case !c.MTU.Valid():
		return fmt.Errorf("perftest: MTU %d (want 256, 512, 1024, 2048 or 4096)", c.MTU)
	case c.Transport == verbs.UD && c.MsgSize > int(c.MTU):
		return fmt.Errorf("perftest: UD message %d exceeds the MTU %d", c.MsgSize, c.MTU)
	case c.MsgSize < 1 || c.MsgSize > 1<<30:
		return fmt.Errorf("perftest: message %d bytes (want 1..1GiB)", c.MsgSize)
	case c.TxDepth < 1 || c.RxDepth < 1 || c.CQMod < 1:
		return fmt.Errorf("perftest: tx_depth %d, rx_depth %d, cq_mod %d (each at least 1)", c.TxDepth, c.RxDepth, c.CQMod)
	case c.Warmup < 0 || c.Duration <= 0:
		return fmt.Errorf("perftest: warmup %v and duration %v (want >= 0 and > 0)", c.Warmup, c.Duration)
	}
	return nil
}

// BufferSize is the registered memory an Endpoint of c needs: one message,
// plus the GRH for UD (every WR of a side uses the same buffer, as
// ib_send_bw does with one buffer per QP).
func (c Config) BufferSize() int {
	n := c.MsgSize
	if c.Transport == verbs.UD {
		n += GRHBytes
	}
	return n
}

// Packets is the number of MTU-sized packets of one message.
func (c Config) Packets() int64 {
	if c.Transport == verbs.UD {
		return 1
	}
	return (int64(c.MsgSize) + int64(c.MTU) - 1) / int64(c.MTU)
}

// Run is one measurement of a benchmark scenario: a point's rate, MTU and
// transport, its metric key, and the Config the scenario gives it.
type Run struct {
	Key    string
	Rate   int64 // link rate of the point, bits/s (a property of the hardware)
	Config Config
}

// FromScenario lists the measurements of a perftest benchmark scenario in
// the scenario's order (scenarios.Benchmark.PerfRuns): one per point and
// transport, each with the top-level duration as its measured interval.
func FromScenario(s *scenarios.Scenario) ([]Run, error) {
	b := s.Benchmark
	if b == nil || b.Kind != scenarios.Perftest {
		return nil, errors.New("perftest: the scenario has no perftest benchmark")
	}
	var out []Run
	for _, r := range b.PerfRuns() {
		out = append(out, Run{Key: Key(int64(r.Rate), verbs.MTU(r.MTU), Transport(r.Transport)), Rate: int64(r.Rate),
			Config: ScenarioConfig(s, Transport(r.Transport), verbs.MTU(r.MTU), int(r.Message))})
	}
	return out, nil
}

// ScenarioConfig is the Config the benchmark scenario s gives one
// transport at path MTU mtu; msg 0 takes the transport's default message.
func ScenarioConfig(s *scenarios.Scenario, t verbs.QPType, mtu verbs.MTU, msg int) Config {
	b := s.Benchmark
	return Config{Transport: t, MTU: mtu, MsgSize: msg, TxDepth: b.TxDepth, RxDepth: b.RxDepth, CQMod: b.CQMod,
		Warmup: b.Warmup.Time(), Duration: s.Duration.Time()}
}

// Transports lists the transports a benchmark scenario measures, each
// once, in the order of their first run.
func Transports(s *scenarios.Scenario) []verbs.QPType {
	var out []verbs.QPType
	for _, r := range s.Benchmark.PerfRuns() {
		t := Transport(r.Transport)
		seen := false
		for _, o := range out {
			seen = seen || o == t
		}
		if !seen {
			out = append(out, t)
		}
	}
	return out
}

// Transport is the verbs QP type of a scenario transport (rc or ud).
func Transport(t scenarios.Transport) verbs.QPType {
	if t == scenarios.UD {
		return verbs.UD
	}
	return verbs.RC
}

// TransportName is "rc" or "ud", as scenarios spell them.
func TransportName(t verbs.QPType) string {
	if t == verbs.UD {
		return "ud"
	}
	return "rc"
}

// RateKey is "25G" for a whole number of Gb/s, else the rate in bits/s
// as scenarios spell it.
func RateKey(rate int64) string {
	if rate%1e9 == 0 {
		return fmt.Sprintf("%dG", rate/1e9)
	}
	return scenarios.Rate(rate).String()
}

// Key names one measurement, "100G/4096B/rc": link rate, path MTU and
// transport.
func Key(rate int64, mtu verbs.MTU, t verbs.QPType) string {
	return fmt.Sprintf("%s/%dB/%s", RateKey(rate), mtu, TransportName(t))
}

// Metric is the result metric holding a measurement's throughput in Gb/s:
// "perftest/KEY/gbps", the same name in besim's and berun's results.
func Metric(key string) string { return "perftest/" + key + "/gbps" }

// Header bytes of a RoCE v2 data packet beyond its payload, on the wire
// (Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + ICRC 4 + FCS 4), the
// preamble, start delimiter and inter-frame gap (20), and UD's DETH (8).
const (
	roceV2Extra = 62
	wireGap     = 20
	dethBytes   = 8
)

// LinePayloadGbps is the payload rate a link of rate bits/s carries with
// full MTU-sized packets of the transport (RoCE v2 headers, UD's DETH and
// the Ethernet preamble and gap removed): the most ib_send_bw can report.
func LinePayloadGbps(t verbs.QPType, rate int64, mtu verbs.MTU) float64 {
	hdr := int64(roceV2Extra + wireGap)
	if t == verbs.UD {
		hdr += dethBytes
	}
	return float64(rate) / 1e9 * float64(mtu) / float64(int64(mtu)+hdr)
}
