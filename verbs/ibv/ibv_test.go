//go:build rdma

package ibv

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/besim/besim/verbs"
	"github.com/besim/besim/verbs/verbstest"
)

// Environment knobs for running against a real NIC:
//
//	BESIM_IBV_DEVICE     device name (default: the first one)
//	BESIM_IBV_PORT       port number (default 1)
//	BESIM_IBV_GID_INDEX  GID index, e.g. the RoCEv2 IPv4 one from show_gids (default 0)
func testOptions(t testing.TB) (string, Options) {
	o := Options{}
	if v := os.Getenv("BESIM_IBV_PORT"); v != "" {
		p, err := strconv.ParseUint(v, 10, 8)
		if err != nil {
			t.Fatalf("BESIM_IBV_PORT=%q: %v", v, err)
		}
		o.Port = uint8(p)
	}
	if v := os.Getenv("BESIM_IBV_GID_INDEX"); v != "" {
		g, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("BESIM_IBV_GID_INDEX=%q: %v", v, err)
		}
		o.GIDIndex = g
	}
	return os.Getenv("BESIM_IBV_DEVICE"), o
}

// needDevice skips the test when no RDMA device exists.
func needDevice(t *testing.T) {
	devs, err := Devices()
	if err != nil {
		t.Logf("ibv_get_device_list: %v", err)
	}
	if len(devs) == 0 {
		t.Skip("no RDMA device: ibv_get_device_list found none")
	}
}

func open(t testing.TB) verbs.Context {
	name, o := testOptions(t)
	c, err := OpenWith(name, o)
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := c.(*device); ok && !d.LinkLayerEthernet() {
		c.Close()
		t.Skipf("%s port %d is not RoCE; this backend addresses peers by GID only", d.name, d.port)
	}
	return c
}

// TestConformance runs the shared verbs suite on the device, in loopback:
// two opens of the same device, whose port reaches itself.
func TestConformance(t *testing.T) {
	needDevice(t)
	_, o := testOptions(t)
	port := o.Port
	if port == 0 {
		port = 1
	}
	verbstest.Run(t, verbstest.Backend{
		Name: "ibv",
		Open: func(t testing.TB) (a, b verbs.Context, env verbstest.Env) {
			a = open(t)
			b = open(t)
			return a, b, verbstest.Env{
				Progress: func(d time.Duration) { time.Sleep(d) },
				Port:     port,
				GIDIndex: uint8(o.GIDIndex),
				Timeout:  5 * time.Second,
				Step:     50 * time.Microsecond,
			}
		},
	})
}

// TestPostPollDoNotAllocate checks the hot path: a chained post and a
// batched poll allocate nothing in Go.
func TestPostPollDoNotAllocate(t *testing.T) {
	needDevice(t)
	be := verbstest.Backend{Name: "ibv", Open: func(t testing.TB) (verbs.Context, verbs.Context, verbstest.Env) {
		a, b := open(t), open(t)
		_, o := testOptions(t)
		return a, b, verbstest.Env{Progress: func(d time.Duration) { time.Sleep(d) }, Port: max(o.Port, 1), GIDIndex: uint8(o.GIDIndex)}
	}}
	f := verbstest.NewFixture(t, be)
	cfg := verbstest.DefaultRC()
	cfg.SigAll = false
	a, b := f.RC(cfg)
	src := f.Region(f.PDA, 4096, verbstest.DefaultAccess)
	dst := f.Region(f.PDB, 4096, verbstest.DefaultAccess)
	wrs := make([]verbs.SendWR, 16)
	for i := range wrs {
		wrs[i] = verbs.SendWR{ID: uint64(i), Opcode: verbs.OpWrite, SGL: src.SGL(i*64, 64),
			RemoteAddr: dst.Remote(i * 64), RKey: dst.MR.RKey()}
	}
	wrs[15].Flags = verbs.FlagSignaled
	head := verbstest.ChainSend(wrs)
	wc := make([]verbs.WC, 16)
	allocs := testing.AllocsPerRun(50, func() {
		if _, err := a.QP.PostSend(head); err != nil {
			t.Fatal(err)
		}
		for n := 0; n == 0; {
			n = a.CQ.Poll(wc)
		}
	})
	if allocs != 0 {
		t.Fatalf("post of 16 chained WRs + poll: %.1f allocations, want 0", allocs)
	}
	f.Quiet(b.CQ, 0, "responder of WRITEs")
}

// TestOpenUnknownDevice runs without hardware: asking for a device that
// does not exist fails cleanly.
func TestOpenUnknownDevice(t *testing.T) {
	c, err := Open("no-such-rdma-device")
	if err == nil {
		c.Close()
		t.Fatal("opened a device that does not exist")
	}
	t.Log(err)
}
