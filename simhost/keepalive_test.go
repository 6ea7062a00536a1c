package simhost

import (
	"errors"
	"testing"
	"time"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/sim"
)

// kaApp is the survivor: bulk traffic to two peers, recording failures.
type kaApp struct {
	bulk       *BulkSender
	engineErr  map[byteexpress.Addr]sim.Time
	errs       map[byteexpress.Addr]error
	sockFailed map[byteexpress.Addr]int
	sendFailed int
	connected  int
}

func (a *kaApp) OnEvent(h *Host, ev byteexpress.Event) {
	switch ev.Kind {
	case byteexpress.EvEngineError:
		if _, ok := a.engineErr[ev.Remote]; !ok {
			a.engineErr[ev.Remote] = h.Now()
			a.errs[ev.Remote] = ev.Err
		}
	case byteexpress.EvSocketFailed:
		a.sockFailed[ev.Remote]++
		a.errs[ev.Remote+"/socket"] = ev.Err
	case byteexpress.EvSendFailed:
		a.sendFailed++
		_ = h.Free(ev.Buf)
	case byteexpress.EvConnected:
		a.connected++
	case byteexpress.EvMessage:
		a.bulk.OnEvent(h, ev)
	default:
		FreeApp{}.OnEvent(h, ev)
	}
}

// TestKeepaliveDetectsCrash: a peer that crashes (no NIC, no polling) is
// detected by the survivor within KeepaliveTimeout plus one interval; the
// engine fails with the keepalive error, the application is told, the QP is
// destroyed and every buffer comes back, while the engine to a healthy
// peer keeps working. Dialing the dead host again times out.
func TestKeepaliveDetectsCrash(t *testing.T) {
	const (
		interval = time.Millisecond
		timeout  = 5 * time.Millisecond
		crashAt  = 10 * sim.Millisecond
	)
	cfg := DefaultConfig(3)
	cfg.BE.KeepaliveInterval = interval
	cfg.BE.KeepaliveTimeout = timeout
	cfg.BE.ConnectTimeout = 20 * time.Millisecond
	cfg.CheckInvariants = true
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a, b, d := c.Host(0), c.Host(1), c.Host(2)
	for _, h := range []*Host{b, d} {
		h.SetApp(&BulkReceiver{min: 64 << 10, respSize: 32, to: sim.Never})
		h.Listen()
	}
	sb, err := a.Dial(b)
	if err != nil {
		t.Fatal(err)
	}
	sd, err := a.Dial(d)
	if err != nil {
		t.Fatal(err)
	}
	app := &kaApp{bulk: &BulkSender{size: 64 << 10, window: 4, socks: []*byteexpress.Socket{sb, sd}},
		engineErr: map[byteexpress.Addr]sim.Time{}, errs: map[byteexpress.Addr]error{}, sockFailed: map[byteexpress.Addr]int{}}
	a.SetApp(app)
	app.bulk.start(a)
	b.Crash(crashAt)
	c.Run(crashAt)
	if crashed, at := b.Crashed(); !crashed || at != crashAt {
		t.Fatalf("crash: %v at %v", crashed, at)
	}
	before := a.Stats()
	if before.LiveQPs != 2 || before.Endpoint.KeepalivesRecv == 0 {
		t.Fatalf("before the crash: %d live QPs, %d keepalives received", before.LiveQPs, before.Endpoint.KeepalivesRecv)
	}
	dRx := d.NIC().Stats().RxPayload
	c.Run(crashAt + SimTime(timeout+2*interval))

	at, ok := app.engineErr[b.Addr()]
	if !ok {
		t.Fatalf("no EvEngineError for %s by t=%v", b.Name(), c.Now())
	}
	lo := crashAt + SimTime(timeout-interval)
	hi := crashAt + SimTime(timeout+interval)
	t.Logf("crash at %v, detected at %v (%v after; window [%v, %v])", crashAt, at, at-crashAt, lo, hi)
	if at < lo || at > hi {
		t.Fatalf("detected at %v, want within [%v, %v]", at, lo, hi)
	}
	if err := app.errs[b.Addr()]; !errors.Is(err, byteexpress.ErrKeepaliveTimeout) {
		t.Fatalf("engine error %v, want the keepalive timeout", err)
	}
	if app.sockFailed[b.Addr()] != 1 || app.sendFailed == 0 {
		t.Fatalf("socket failures %v, send failures %d", app.sockFailed, app.sendFailed)
	}
	if _, bad := app.engineErr[d.Addr()]; bad {
		t.Fatalf("healthy peer's engine failed: %v", app.errs[d.Addr()])
	}
	st := a.Stats()
	if st.LiveQPs != 1 || st.Endpoint.Engines != 1 || st.Endpoint.EngineErrors != 1 {
		t.Fatalf("after detection: %d live QPs, %d engines, %d engine errors", st.LiveQPs, st.Endpoint.Engines, st.Endpoint.EngineErrors)
	}
	for _, q := range a.QPs() {
		t.Logf("QP %d destroyed %v, retransmits %d, timeouts %d", q.QPN, q.Destroyed, q.Stats.Retransmits, q.Stats.Timeouts)
	}
	if got := d.NIC().Stats().RxPayload; got <= dRx {
		t.Fatalf("traffic to the healthy peer stopped")
	}

	// Reconnecting to the dead host: no answer on the side channel.
	app.bulk.stop = true
	s2, err := a.Dial(b)
	if err != nil {
		t.Fatal(err)
	}
	t0 := c.Now()
	c.RunFor(30 * sim.Millisecond)
	if app.sockFailed[b.Addr()] != 2 || !errors.Is(app.errs[b.Addr()+"/socket"], byteexpress.ErrConnectTimeout) {
		t.Fatalf("redial: %v (%v)", app.sockFailed, app.errs[b.Addr()+"/socket"])
	}
	_ = s2
	t.Logf("redial at %v failed with %v", t0, app.errs[b.Addr()+"/socket"])

	// Drained: the survivor holds exactly one engine's buffers (its staging
	// and receive rings); everything of the failed engines came back.
	if n := a.Pool().InUse(); n != 2 {
		t.Fatalf("survivor holds %d buffers after draining, want 2 (one engine's staging and receive buffers)", n)
	}
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}
