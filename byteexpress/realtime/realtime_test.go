package realtime_test

import (
	"context"
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/byteexpress/internal/testalloc"
	"github.com/besim/besim/byteexpress/realtime"
	"github.com/besim/besim/verbs/fakeverbs"
)

// directConnector hands the exchange straight to the peer endpoint.
type directConnector struct {
	mu  sync.Mutex
	eps map[byteexpress.Addr]*byteexpress.Endpoint
}

func (d *directConnector) Connect(from, remote byteexpress.Addr, local byteexpress.ConnInfo, done func(byteexpress.ConnInfo, error)) {
	d.mu.Lock()
	ep := d.eps[remote]
	d.mu.Unlock()
	ep.HandleConnect(from, local, done)
}

// TestRunWallClock runs two endpoints with two I/O threads each on locked
// goroutines, over a fake NIC advanced by the wall clock, with application
// goroutines sending concurrently and freeing received buffers on yet other
// goroutines (run it with -race).
func TestRunWallClock(t *testing.T) {
	clock := realtime.NewClock()
	net := fakeverbs.New(fakeverbs.Config{Latency: 2000})
	conn := &directConnector{eps: map[byteexpress.Addr]*byteexpress.Endpoint{}}
	mk := func(name string) (*byteexpress.Endpoint, *testalloc.Pool) {
		ctx := net.NewContext(name)
		pd, _ := ctx.AllocPD()
		pool := testalloc.New(pd, true)
		ep, err := byteexpress.NewEndpoint(byteexpress.Params{Context: ctx, PD: pd, Allocator: pool,
			Connector: conn, Local: byteexpress.Addr(name)}, byteexpress.Config{Threads: 2,
			// Generous: under -race on a small machine a runner can be descheduled
			// for tens of milliseconds (§7.2: the timeout must accommodate
			// scheduling delays).
			KeepaliveInterval: 20 * time.Millisecond, KeepaliveTimeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		realtime.Attach(ep)
		ep.Listen()
		conn.mu.Lock()
		conn.eps[byteexpress.Addr(name)] = ep
		conn.mu.Unlock()
		return ep, pool
	}
	a, poolA := mk("a")
	b, poolB := mk("b")

	ctx, cancel := context.WithCancel(context.Background())
	// The "NIC": advance the fake network with the wall clock.
	stopNIC := net.RunClock(func() int64 { return clock.Now().Nanoseconds() }, 5*time.Microsecond)
	const socks, msgs = 4, 50
	received := make(chan [2]uint64, socks*msgs)
	var freeWG sync.WaitGroup
	handler := func(ep *byteexpress.Endpoint) func(byteexpress.Event) {
		return func(ev byteexpress.Event) {
			switch ev.Kind {
			case byteexpress.EvMessage:
				p := ev.Buf.Bytes()[:ev.Len]
				received <- [2]uint64{binary.LittleEndian.Uint64(p), binary.LittleEndian.Uint64(p[8:])}
				freeWG.Add(1)
				go func() { defer freeWG.Done(); ep.Free(ev.Buf) }()
			case byteexpress.EvSendFailed, byteexpress.EvBufferReturned:
				ep.Free(ev.Buf)
			case byteexpress.EvSocketFailed, byteexpress.EvEngineError:
				t.Errorf("%v: %v", ev.Kind, ev.Err)
			}
		}
	}
	var runners sync.WaitGroup
	for _, ep := range []*byteexpress.Endpoint{a, b} {
		for _, th := range ep.Threads() {
			runners.Add(1)
			go func() {
				defer runners.Done()
				realtime.Run(ctx, th, realtime.Options{Clock: clock, IdleSpins: 10}, handler(ep))
			}()
		}
	}
	var senders sync.WaitGroup
	for s := range socks {
		senders.Add(1)
		go func() {
			defer senders.Done()
			sock, err := a.Dial("b")
			if err != nil {
				t.Error(err)
				return
			}
			for k := range msgs {
				n := 16 + (k*7919)%(200<<10)
				buf, err := a.Allocate(n)
				if err != nil {
					t.Error(err)
					return
				}
				binary.LittleEndian.PutUint64(buf.Bytes(), uint64(s))
				binary.LittleEndian.PutUint64(buf.Bytes()[8:], uint64(k))
				if err := sock.Send(buf, n); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	senders.Wait()
	next := make([]uint64, socks)
	deadline := time.After(2 * time.Minute) // a hang guard, not a speed bound
	for got := 0; got < socks*msgs; got++ {
		select {
		case m := <-received:
			if m[0] >= socks || m[1] != next[m[0]] {
				t.Fatalf("socket %d: message %d out of order (want %d)", m[0], m[1], next[min(m[0], socks-1)])
			}
			next[m[0]]++
		case <-deadline:
			t.Fatalf("only %d of %d messages after 2 minutes (hung?)", got, socks*msgs)
		}
	}
	cancel()
	runners.Wait()
	stopNIC()
	freeWG.Wait()
	a.Close()
	b.Close()
	for _, p := range []*testalloc.Pool{poolA, poolB} {
		if n := p.Outstanding(); n != 0 {
			t.Errorf("%d buffers leaked", n)
		}
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	}
}

// TestRunNeedsAttach: a thread without a mailbox would be polled while other
// goroutines touch its queue unsynchronised, so Run refuses it.
func TestRunNeedsAttach(t *testing.T) {
	net := fakeverbs.New(fakeverbs.Config{})
	ctx := net.NewContext("a")
	pd, _ := ctx.AllocPD()
	pool := testalloc.New(pd, true)
	ep, err := byteexpress.NewEndpoint(byteexpress.Params{Context: ctx, PD: pd, Allocator: pool,
		Connector: &directConnector{}, Local: "a"}, byteexpress.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	defer ep.Close()
	if err := realtime.Run(context.Background(), ep.Threads()[0], realtime.Options{}, nil); err != realtime.ErrNotAttached {
		t.Fatalf("Run on an unattached thread: %v, want ErrNotAttached", err)
	}
	realtime.Attach(ep)
	c, cancel := context.WithCancel(context.Background())
	cancel()
	if err := realtime.Run(c, ep.Threads()[0], realtime.Options{}, nil); err != context.Canceled {
		t.Fatalf("Run on an attached thread: %v, want context.Canceled", err)
	}
}
