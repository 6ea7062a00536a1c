package perftestsim

import (
	"errors"
	"github.com/besim/besim/units"

	"github.com/besim/besim/sim"
	"testing"

	"github.com/besim/besim/rnic"
	"github.com/besim/besim/verbs"
	"github.com/besim/besim/workloads/perftest"
)

// TestTable2Shape: paper Table 2 from the cost model, not from constants:
// RC within 10% of the line payload rate everywhere; UD close to RC at
// 25G/1KB and 100G/4KB, about half the line at 100G/1KB and about 115 Gb/s
// at 200G/4KB, where one WQE, one receive and one CQE per MTU-sized
// datagram make UD packet-rate-limited.
func TestTable2Shape(t *testing.T) {
	rows := Table2(nil)
	for _, r := range rows {
		t.Logf("%3dG/%4dB  RC %7.2f (paper %6.2f, line %6.2f)   UD %7.2f (paper %6.2f, line %6.2f)",
			r.Rate/units.Gbps, r.MTU, r.ModelRC, r.PaperRC, r.LineRC, r.ModelUD, r.PaperUD, r.LineUD)
		if r.RCErr != nil || r.UDErr != nil {
			t.Fatalf("errors: %v %v", r.RCErr, r.UDErr)
		}
		if r.ModelRC < 0.9*r.LineRC || r.ModelRC > r.LineRC*1.001 {
			t.Errorf("%dG/%d: RC %.2f Gb/s, want within 90%%..100%% of %.2f", r.Rate/units.Gbps, r.MTU, r.ModelRC, r.LineRC)
		}
	}
	within := func(name string, v, lo, hi float64) {
		if v < lo || v > hi {
			t.Errorf("%s: %.2f Gb/s, want %.0f..%.0f", name, v, lo, hi)
		}
	}
	within("UD 25G/1KB", rows[0].ModelUD, 0.95*rows[0].ModelRC, rows[0].LineUD*1.001)
	within("UD 100G/1KB", rows[1].ModelUD, 35, 65)
	within("UD 100G/4KB", rows[2].ModelUD, 0.95*rows[2].ModelRC, rows[2].LineUD*1.001)
	within("UD 200G/4KB", rows[3].ModelUD, 90, 140)
}

// TestPerfTestDefaults: a deeper send queue keeps RC at line rate with
// consistent message and packet rates, and a UD message above the MTU is
// refused.
func TestPerfTestDefaults(t *testing.T) {
	r, err := Run(Config{Config: perftest.Config{Transport: verbs.RC, MTU: 1024, TxDepth: 256}, Rate: 25 * units.Gbps})
	if err != nil {
		t.Fatal(err)
	}
	if r.Gbps < 0.97*r.LineGbps || r.MsgRate <= 0 || r.PacketRate < r.MsgRate {
		t.Fatalf("%+v", r)
	}
	if _, err := Run(Config{Config: perftest.Config{Transport: verbs.UD, MTU: 1024, MsgSize: 2048}}); err == nil {
		t.Fatal("UD message above the MTU accepted")
	}
}

// TestLineRateOneFormula: the simulator-free line rate berun reports is
// the NIC model's, for every transport, MTU and the paper's rates.
func TestLineRateOneFormula(t *testing.T) {
	for _, tr := range []verbs.QPType{verbs.RC, verbs.UD} {
		for _, mtu := range []verbs.MTU{256, 512, 1024, 2048, 4096} {
			for _, rate := range []int64{10, 25, 40, 50, 100, 200, 400} {
				a, b := perftest.LinePayloadGbps(tr, rate*units.Gbps, mtu), rnic.LinePayloadGbps(tr, units.Rate(rate*units.Gbps), mtu)
				if a != b {
					t.Errorf("%v %dG/%dB: perftest %v, rnic %v", tr, rate, mtu, a, b)
				}
			}
		}
	}
}

// TestUDStopDrains: the endpoints over UD on the simulated NICs, stopped
// as berun's client stops: the sender drains, and the receiver's count of
// payload bytes in its interval (the endpoint's, which berun reports)
// matches the NIC's counter to within a few datagrams at the edges (the
// CQE follows the packet), and every datagram sent was received or
// dropped for want of a receive.
func TestUDStopDrains(t *testing.T) {
	k := sim.NewKernel()
	ncfg := rnic.DefaultConfig()
	ncfg.SizesOnly, ncfg.PortMTU = true, 4096
	na, _ := rnic.New(k, "a", ncfg)
	nb, _ := rnic.New(k, "b", ncfg)
	rnic.NewWire(k, nil, 25*units.Gbps, sim.Microsecond).Connect(na, 1, nb, 2)
	ca, _ := na.Open()
	cb, _ := nb.Open()
	cfg := perftest.Config{Transport: verbs.UD, MTU: 4096, Warmup: 20 * sim.Microsecond, Duration: 200 * sim.Microsecond}
	snd := &app{ep: perftest.NewSender(cfg), ctx: ca, cpu: rnic.NewCPU(k, "client")}
	rcv := &app{ep: perftest.NewReceiver(cfg), ctx: cb, cpu: rnic.NewCPU(k, "server")}
	for _, a := range []*app{snd, rcv} {
		if err := a.ep.Open(a.ctx, simBase); err != nil {
			t.Fatal(err)
		}
		a.ep.CQ().(*rnic.CQ).SetNotify(a, 0)
	}
	if err := errors.Join(snd.ep.Connect(rcv.ep.Info()), rcv.ep.Connect(snd.ep.Info()), rcv.ep.PostReceives()); err != nil {
		t.Fatal(err)
	}
	k.At(0, snd, 0)
	k.RunUntil(cfg.Warmup)
	from := nb.Stats().RxPayload
	k.RunUntil(cfg.Warmup + cfg.Duration)
	nic := nb.Stats().RxPayload - from
	snd.ep.Stop()
	k.RunUntil(cfg.Warmup + cfg.Duration + 100*sim.Microsecond)
	if !snd.ep.Drained() || snd.ep.Err() != nil || rcv.ep.Err() != nil {
		t.Fatalf("drained %v, errors %v %v, sender %+v", snd.ep.Drained(), snd.ep.Err(), rcv.ep.Err(), snd.ep.Stats())
	}
	st := rcv.ep.Stats()
	t.Logf("sender posted %d, receiver %d completions, %d datagrams (%d B) in the interval, NIC %d B", snd.ep.Stats().Posted, st.Completions, st.Msgs, st.Bytes, nic)
	// Datagrams that found no receive posted (the sender starts while the
	// receiver's CPU is still posting its first receives) are dropped.
	drops := nb.Stats().UDNoRecvDrops
	if st.Bytes != st.Msgs*4096 || st.Bytes+8*4096 < nic || st.Bytes > nic+8*4096 || st.Completions+drops != snd.ep.Stats().Posted {
		t.Errorf("receiver %+v, NIC %d B in the interval, %d dropped, sender posted %d", st, nic, drops, snd.ep.Stats().Posted)
	}
}
