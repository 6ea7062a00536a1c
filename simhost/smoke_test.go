package simhost

import (
	"errors"
	"strings"
	"testing"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/sim"
)

type countApp struct {
	msgs  int
	bytes int64
	evs   [16]int
	errs  []error
}

func (a *countApp) OnEvent(h *Host, ev byteexpress.Event) {
	a.evs[ev.Kind]++
	if ev.Err != nil {
		a.errs = append(a.errs, ev.Err)
	}
	if ev.Kind == byteexpress.EvMessage {
		a.msgs++
		a.bytes += int64(ev.Len)
	}
	FreeApp{}.OnEvent(h, ev)
}

// TestDeliveryAndConnect: messages of every size class arrive; the
// connection is set up one control RTT plus the first poll after the dial.
func TestDeliveryAndConnect(t *testing.T) {
	cfg := DefaultConfig(2)
	cfg.CheckInvariants = true
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if want := cfg.Fabric.HostLink.Delay + 10*sim.Microsecond; c.Config().ControlDelay != want {
		t.Fatalf("control delay %v, want %v", c.Config().ControlDelay, want)
	}
	a, b := c.Host(0), c.Host(1)
	rx, tx := &countApp{}, &countApp{}
	b.SetApp(rx)
	a.SetApp(tx)
	b.Listen()
	s, err := a.Dial(b)
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	for i := 0; i < 12; i++ {
		n := 100 << i
		buf, err := a.Allocate(n)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Send(buf, n); err != nil {
			t.Fatal(err)
		}
		want += int64(n)
	}
	c.Run(sim.Millisecond)
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
	if rx.msgs != 12 || rx.bytes != want || tx.evs[byteexpress.EvConnected] != 1 || rx.evs[byteexpress.EvAccepted] != 1 {
		t.Fatalf("received %d messages, %d bytes (want 12, %d); events tx %v rx %v", rx.msgs, rx.bytes, want, tx.evs, rx.evs)
	}
	st := a.Stats()
	t.Logf("sender: %d polls, busy %v, %d WRs in %d posts; receiver busy %v", st.Polls, st.Busy,
		st.Endpoint.SendWRs, st.Endpoint.PostSends, b.Stats().Busy)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestDialUnknownAndRefused: an address that is no host fails after one
// control RTT; a host that does not listen refuses.
func TestDialUnknownAndRefused(t *testing.T) {
	c, err := New(DefaultConfig(2))
	if err != nil {
		t.Fatal(err)
	}
	a, b := c.Host(0), c.Host(1)
	app := &countApp{}
	a.SetApp(app)
	if _, err := a.Endpoint().Dial("nowhere"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Dial(b); err != nil { // b does not listen
		t.Fatal(err)
	}
	c.Run(sim.Millisecond)
	if app.evs[byteexpress.EvSocketFailed] != 2 || app.evs[byteexpress.EvEngineError] != 2 {
		t.Fatalf("events %v", app.evs)
	}
	var noHost, refused bool
	for _, e := range app.errs {
		noHost = noHost || errors.Is(e, ErrNoHost)
		refused = refused || errors.Is(e, byteexpress.ErrRefused)
	}
	if !noHost || !refused {
		t.Fatalf("errors %v", app.errs)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestConfigErrors(t *testing.T) {
	cfg := DefaultConfig(2)
	cfg.NIC.SizesOnly = true
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "SizesOnly") {
		t.Fatalf("SizesOnly: %v", err)
	}
	cfg = DefaultConfig(2)
	cfg.CPU.SendWR = -1
	if _, err := New(cfg); err == nil {
		t.Fatal("negative cost accepted")
	}
	if _, err := New(Config{}); err == nil {
		t.Fatal("zero hosts accepted")
	}
	c, err := New(Config{Hosts: 3}) // everything else defaulted
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Hosts()) != 3 || c.Config().CPU != DefaultCPUCost() {
		t.Fatalf("defaults: %d hosts, %+v", len(c.Hosts()), c.Config().CPU)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestServiceLevelSelectsPriority: the engines' ServiceLevel reaches every
// QP's address vector, and the simulated RNIC sends on that priority
// instead of its default TrafficPrio, as a ConnectX trusting PCP would.
func TestServiceLevelSelectsPriority(t *testing.T) {
	for _, sl := range []uint8{0, 5} {
		cfg := DefaultConfig(2)
		cfg.BE.ServiceLevel = sl
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		a, b := c.Host(0), c.Host(1)
		b.SetApp(FreeApp{})
		a.SetApp(FreeApp{})
		b.Listen()
		s, err := a.Dial(b)
		if err != nil {
			t.Fatal(err)
		}
		c.Run(100 * sim.Microsecond)
		buf, err := a.Allocate(64 << 10)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Send(buf, 64<<10); err != nil {
			t.Fatal(err)
		}
		c.Run(sim.Millisecond)
		want := cfg.NIC.TrafficPrio
		if sl != 0 {
			want = sl
		}
		var on, off int64
		for _, sw := range c.Network().Report().Switches {
			for _, p := range sw.Ports {
				for _, q := range p.Prios {
					prio := q.Prio
					if uint8(prio) == want {
						on += q.TxBytes
					} else if prio != int(cfg.NIC.CNPPrio) {
						off += q.TxBytes
					}
				}
			}
		}
		if on < 64<<10 || off != 0 {
			t.Errorf("service level %d: %d bytes on priority %d, %d on other data priorities", sl, on, want, off)
		}
		_ = c.Close()
	}
}
