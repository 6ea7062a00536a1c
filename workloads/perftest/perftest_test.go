package perftest

import (
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/verbs"
	"github.com/besim/besim/verbs/fakeverbs"
)

// TestFromScenario: table2's eight runs, in the scenario's order, with the
// names besim reports and the scenario's depths.
func TestFromScenario(t *testing.T) {
	data, err := scenarios.Builtin("table2")
	if err != nil {
		t.Fatal(err)
	}
	s, err := scenarios.Parse("table2.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := FromScenario(s)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, r := range runs {
		keys = append(keys, r.Key)
		c := r.Config.WithDefaults()
		if c.TxDepth != 128 || c.RxDepth != 512 || c.CQMod != 100 || c.Warmup != 50*sim.Microsecond || c.Duration != 500*sim.Microsecond {
			t.Errorf("%s: %+v", r.Key, c)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", r.Key, err)
		}
		if want := map[verbs.QPType]int{verbs.RC: 65536, verbs.UD: int(c.MTU)}[c.Transport]; c.MsgSize != want {
			t.Errorf("%s: message %d, want %d", r.Key, c.MsgSize, want)
		}
	}
	want := "25G/1024B/rc 25G/1024B/ud 100G/1024B/rc 100G/1024B/ud 100G/4096B/rc 100G/4096B/ud 200G/4096B/rc 200G/4096B/ud"
	if got := strings.Join(keys, " "); got != want {
		t.Errorf("keys %s\nwant %s", got, want)
	}
	if ts := Transports(s); len(ts) != 2 || ts[0] != verbs.RC || ts[1] != verbs.UD {
		t.Errorf("transports %v", ts)
	}
	if m := Metric(runs[0].Key); m != "perftest/25G/1024B/rc/gbps" {
		t.Errorf("metric %s", m)
	}
	if k := RateKey(12_500_000_000); k == "12G" || k == "" {
		t.Errorf("12.5 Gb/s keyed %q", k)
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []Config{
		{Transport: verbs.UD, MTU: 1024, MsgSize: 2048},
		{Transport: 3},
		{MTU: 1500},
	} {
		if err := c.WithDefaults().Validate(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if l := LinePayloadGbps(verbs.RC, 100e9, 4096); l < 98 || l > 98.1 {
		t.Errorf("RC line rate at 100G/4096B: %.3f", l)
	}
}

// fakePair opens a sender and a receiver of cfg on two in-memory NICs
// (verbs/fakeverbs, RC only) and connects them as the runners do.
func fakePair(t *testing.T, cfg Config) (*fakeverbs.Network, *Endpoint, *Endpoint) {
	t.Helper()
	n := fakeverbs.New(fakeverbs.Config{Latency: 1000, BytesPerNs: 12})
	snd, rcv := NewSender(cfg), NewReceiver(cfg)
	for i, e := range []*Endpoint{snd, rcv} {
		mem, err := syscall.Mmap(-1, 0, e.Config().BufferSize(), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Munmap(mem) })
		if err := e.Open(n.NewContext([]string{"client", "server"}[i]), uintptr(unsafe.Pointer(&mem[0]))); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := e.Close(); err != nil {
				t.Error(err)
			}
		})
	}
	if err := snd.Connect(rcv.Info()); err != nil {
		t.Fatal(err)
	}
	if err := rcv.Connect(snd.Info()); err != nil {
		t.Fatal(err)
	}
	if err := rcv.PostReceives(); err != nil {
		t.Fatal(err)
	}
	return n, snd, rcv
}

// TestEndpointsRC: the endpoints over an RC QP pair on fakeverbs (96
// Gb/s of payload, 1 us): the receiver counts whole 64 KiB messages in its interval,
// near the link rate (to one message of quantization); after Stop the sender drains (a final signalled
// SEND covers the unsignalled tail) and every SEND posted was received.
func TestEndpointsRC(t *testing.T) {
	cfg := Config{Transport: verbs.RC, MTU: 4096, TxDepth: 16, CQMod: 5, RxDepth: 32,
		Warmup: 20 * sim.Microsecond, Duration: sim.Millisecond}
	n, snd, rcv := fakePair(t, cfg)
	now := func() sim.Time { return sim.Time(n.Now()) * sim.Nanosecond }
	step := func() {
		if err := snd.Step(now()); err != nil {
			t.Fatal(err)
		}
		if err := rcv.Step(now()); err != nil {
			t.Fatal(err)
		}
	}
	end := int64((cfg.Warmup + cfg.Duration + 10*sim.Microsecond) / sim.Nanosecond)
	for n.Now() < end {
		step()
		n.Advance(n.Now() + 500)
	}
	snd.Stop()
	for i := 0; !snd.Drained(); i++ {
		if i > 10000 {
			t.Fatalf("sender not drained: %+v", snd.Stats())
		}
		step()
		n.Advance(n.Now() + 500)
	}
	step()
	ss, rs := snd.Stats(), rcv.Stats()
	gbps := float64(rs.Bytes) * 8 / cfg.Duration.Seconds() / 1e9
	t.Logf("sent %d, received %d completions, %d in the interval: %.2f Gb/s", ss.Posted, rs.Completions, rs.Msgs, gbps)
	if rs.Completions != ss.Posted {
		t.Errorf("sender posted %d SENDs, receiver completed %d", ss.Posted, rs.Completions)
	}
	if rs.Bytes != rs.Msgs*65536 || gbps < 80 || gbps > 96*1.01 {
		t.Errorf("receiver: %d messages, %d bytes in the interval, %.2f Gb/s", rs.Msgs, rs.Bytes, gbps)
	}
}
