package faults

import (
	"github.com/besim/besim/units"
	"strings"
	"testing"

	"github.com/besim/besim/fabric"
	"github.com/besim/besim/sim"
)

// storm is the pfc-storm scenario's fabric: host 0 storms, host 4 sends
// to it and to a victim, host 3.
func storm(t *testing.T, watchdog bool) (victim, stormed int64, in *Injector, net *fabric.Network) {
	fc := fabric.DefaultConfig()
	fc.Topology = fabric.Topology{Kind: fabric.Star, Hosts: 6}
	fc.Switch.Buffer = 4 << 20
	fc.Switch.PFC.Watchdog.Enabled = watchdog
	k := sim.NewKernel()
	net, err := fabric.New(k, fc)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []fabric.Flow{{Src: 4, Dst: 0, Prio: 3, Rate: 10 * units.Gbps}, {Src: 4, Dst: 3, Prio: 3, Rate: 10 * units.Gbps}} {
		if _, err := net.AddFlow(f); err != nil {
			t.Fatal(err)
		}
	}
	in, err = Schedule(k, net, nil, 1, []Spec{{Kind: PFCStorm, At: 10 * sim.Millisecond, Host: 0, Switch: -1, Prio: 3}})
	if err != nil {
		t.Fatal(err)
	}
	net.Run(300 * sim.Millisecond)
	fl := net.Flows()
	return fl[1].DeliveredBytes, net.Report().Totals.StormTrips, in, net
}

// A storm spreads by pause propagation and stalls the victim for good; the
// watchdog contains it.
func TestPFCStormWatchdog(t *testing.T) {
	off, trips0, _, _ := storm(t, false)
	on, trips, in, net := storm(t, true)
	full := int64(10e9 / 8 * 0.3) // the victim's 10 Gb/s for 300 ms, in wire-ish bytes
	t.Logf("victim delivered %d B without the watchdog, %d B with it (%d trips); unfaulted about %d B; %v", off, on, trips, full, in.Log)
	if off > full/20 {
		t.Errorf("without the watchdog the victim got %d B of about %d: the storm did not spread", off, full)
	}
	if on < full*4/10 || trips == 0 || trips0 != 0 {
		t.Errorf("with the watchdog the victim got %d B (want >= 40%% of %d), trips %d/%d", on, full, trips, trips0)
	}
	if rep := net.Report(); rep.Totals.HeadroomDrops != 0 {
		t.Errorf("%d lossless drops outside the watchdog", rep.Totals.HeadroomDrops)
	}
}

// A flap takes the link down Count times, Duration each, Period apart; a
// loss fault stops after its duration; frames sent while down are lost.
func TestFlapAndLossSchedule(t *testing.T) {
	fc := fabric.DefaultConfig()
	fc.Topology = fabric.Topology{Kind: fabric.Star, Hosts: 2}
	k := sim.NewKernel()
	net, _ := fabric.New(k, fc)
	if _, err := net.AddFlow(fabric.Flow{Src: 0, Dst: 1, Prio: 0, Rate: units.Gbps}); err != nil {
		t.Fatal(err)
	}
	in, err := Schedule(k, net, nil, 1, []Spec{
		{Kind: LinkFlap, At: sim.Millisecond, Host: 1, Switch: -1, Duration: sim.Millisecond, Period: 3 * sim.Millisecond, Count: 2},
		{Kind: Loss, At: 10 * sim.Millisecond, Switch: 0, Port: 0, Drop: 0.5, Duration: 2 * sim.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	net.Run(20 * sim.Millisecond)
	var got []string
	for _, e := range in.Log {
		got = append(got, e.At.String()+" "+e.What)
	}
	want := []string{"1ms link-flap h1: down", "2ms link-flap h1: up", "4ms link-flap h1: down", "5ms link-flap h1: up",
		"10ms loss sw0 port 0: drop 0.5, corrupt 0", "12ms loss sw0 port 0: loss off"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	down := net.Link(net.Switches[0].ID, net.Hosts[1].Node())
	// 2 ms down at 1 Gb/s of 1086-byte frames is about 230 frames; the
	// loss on port 0 (host 0's link) halves 2 ms of them.
	if l := down.Faults.Lost; l < 200 || l > 260 {
		t.Errorf("%d frames lost while down, want about 230", l)
	}
	lossy := net.Link(net.Hosts[0].Node(), net.Switches[0].ID)
	if l := lossy.Faults.Lost; l < 80 || l > 150 {
		t.Errorf("%d frames lost to 50%% loss over 2 ms, want about 115", l)
	}
}

func TestScheduleErrors(t *testing.T) {
	fc := fabric.DefaultConfig()
	fc.Topology = fabric.Topology{Kind: fabric.Star, Hosts: 2}
	k := sim.NewKernel()
	net, _ := fabric.New(k, fc)
	for _, c := range []struct {
		s    Spec
		want string
	}{
		{Spec{Kind: LinkDown, Host: 5, Switch: -1}, "host 5: the fabric has hosts 0..1"},
		{Spec{Kind: LinkDown, Switch: 0, Port: 9}, "port 9: switch 0 has ports 0..1"},
		{Spec{Kind: LinkFlap, Host: 0, Switch: -1, Duration: 2, Period: 1, Count: 1}, "needs 0 < duration < period"},
		{Spec{Kind: Loss, Host: 0, Switch: -1, Drop: 0.7, Corrupt: 0.5}, "need each >= 0 and 0 < sum <= 1"},
		{Spec{Kind: HostCrash, Host: 0, Switch: -1}, "no host model that can crash"},
		{Spec{Kind: QPError, Host: 0, Switch: -1}, "qp-error needs the RDMA transport"},
		{Spec{Kind: "meteor", Host: 0, Switch: -1}, "unknown kind"},
		{Spec{Kind: Loss, Host: 0, Switch: -1, Drop: 0.5, Dir: 7}, "direction 7: must be Both, Out or In"},
		{Spec{Kind: LinkDown, Host: 0, Switch: -1, DataOnly: true}, "DataOnly and Dir apply to loss faults only"},
		{Spec{Kind: LinkDown, Host: 0, Switch: -1, Dir: Out}, "DataOnly and Dir apply to loss faults only"},
	} {
		_, err := Schedule(k, net, nil, 1, []Spec{c.s})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.s, err, c.want)
		}
	}
}

// A loss fault limited to one direction hits only that direction of the
// target's link: a raw flow from host 0 to host 1 loses frames under loss
// out of host 0 or into host 1, and none under loss into host 0 or out of
// host 1 (raw sinks send nothing back).
func TestLossDirection(t *testing.T) {
	for _, c := range []struct {
		host  int
		dir   Dir
		lossy bool
	}{{0, Out, true}, {0, In, false}, {1, In, true}, {1, Out, false}, {0, Both, true}} {
		fc := fabric.DefaultConfig()
		fc.Topology = fabric.Topology{Kind: fabric.Star, Hosts: 2}
		k := sim.NewKernel()
		net, _ := fabric.New(k, fc)
		if _, err := net.AddFlow(fabric.Flow{Src: 0, Dst: 1, Prio: 0, Rate: units.Gbps}); err != nil {
			t.Fatal(err)
		}
		in, err := Schedule(k, net, nil, 1, []Spec{{Kind: Loss, Host: c.host, Switch: -1, Drop: 0.5, Dir: c.dir, DataOnly: true,
			Duration: sim.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		net.Run(2 * sim.Millisecond)
		lost := net.Report().Totals.FaultDrops
		if (lost > 0) != c.lossy {
			t.Errorf("loss on host %d direction %v: %d frames lost, want lost: %v", c.host, c.dir, lost, c.lossy)
		}
		want := "loss h" + string(rune('0'+c.host)) + ": drop 0.5, corrupt 0, data frames only"
		if c.dir != Both {
			want += ", direction " + c.dir.String()
		}
		if len(in.Log) != 2 || in.Log[0].What != want || in.Log[1].What != "loss h"+string(rune('0'+c.host))+": loss off" {
			t.Errorf("log %v, want %q then loss off", in.Log, want)
		}
	}
}
