package selftest

import (
	"testing"
	"time"

	"github.com/besim/besim/fabric"
	"github.com/besim/besim/rnic"
	"github.com/besim/besim/sim"
)

// TestLoopbackOnSimulatedRNIC runs every check against two simulated NICs
// back to back, since CI has no RDMA device.
func TestLoopbackOnSimulatedRNIC(t *testing.T) {
	k := sim.NewKernel()
	a, err := rnic.New(k, "nicA", rnic.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	b, err := rnic.New(k, "nicB", rnic.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	rnic.NewWire(k, &fabric.Pool{}, 25_000_000_000, sim.Microsecond).Connect(a, 1, b, 2)
	ca, err := a.Open()
	if err != nil {
		t.Fatal(err)
	}
	cb, err := b.Open()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Loopback(ca, cb, Options{Iters: 50, Size: 64 << 10, Writes: 32, Progress: func(d time.Duration) {
		k.RunUntil(k.Now() + sim.Time(d.Nanoseconds())*sim.Nanosecond)
	}})
	if err != nil {
		t.Fatalf("%v (report %+v)", err, rep)
	}
	if len(rep.Checks) != 5 || rep.PingIters != 50 || rep.WriteBytes != 32*64<<10 {
		t.Fatalf("report %+v", rep)
	}
	for _, c := range rep.Checks {
		t.Log(c)
	}
}
