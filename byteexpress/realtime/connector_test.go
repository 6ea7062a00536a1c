package realtime_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/byteexpress/internal/testalloc"
	"github.com/besim/besim/byteexpress/realtime"
	"github.com/besim/besim/verbs/fakeverbs"
)

// TestTCPConnector sets engines up through the TCP exchange, as berun does
// on real hosts: two listening endpoints and one that is not, each with an
// exchange listener on loopback; messages flow a -> b, a dial to the
// non-listening c is refused, and a malformed request is answered with an
// error and logged, without harming later exchanges.
func TestTCPConnector(t *testing.T) {
	clock := realtime.NewClock()
	fnet := fakeverbs.New(fakeverbs.Config{Latency: 2000})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrs := map[byteexpress.Addr]string{}
	var mu sync.Mutex
	conn := &realtime.TCPConnector{Timeout: 5 * time.Second, Resolve: func(a byteexpress.Addr) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if s, ok := addrs[a]; ok {
			return s, nil
		}
		return "", errors.New("unknown")
	}}
	var logs []string
	var logMu sync.Mutex
	logf := func(f string, a ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		logs = append(logs, f)
	}
	events := make(chan byteexpress.Event, 256)
	var serveWG, runWG sync.WaitGroup
	mk := func(name string, listen bool) *byteexpress.Endpoint {
		c := fnet.NewContext(name)
		pd, _ := c.AllocPD()
		ep, err := byteexpress.NewEndpoint(byteexpress.Params{Context: c, PD: pd, Allocator: testalloc.New(pd, true),
			Connector: conn, Local: byteexpress.Addr(name)}, byteexpress.Config{KeepaliveInterval: 20 * time.Millisecond, KeepaliveTimeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		realtime.Attach(ep)
		if listen {
			ep.Listen()
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		addrs[byteexpress.Addr(name)] = ln.Addr().String()
		mu.Unlock()
		serveWG.Add(1)
		go func() { defer serveWG.Done(); _ = realtime.Serve(ctx, ln, ep, 5*time.Second, logf) }()
		for _, th := range ep.Threads() {
			runWG.Add(1)
			go func() {
				defer runWG.Done()
				realtime.Run(ctx, th, realtime.Options{Clock: clock, IdleSpins: 10}, func(ev byteexpress.Event) {
					if ev.Kind == byteexpress.EvMessage || ev.Kind == byteexpress.EvSendFailed || ev.Kind == byteexpress.EvBufferReturned {
						ep.Free(ev.Buf)
					}
					events <- ev
				})
			}()
		}
		return ep
	}
	stopNIC := fnet.RunClock(func() int64 { return clock.Now().Nanoseconds() }, 5*time.Microsecond)
	a := mk("a", true)
	mk("b", true)
	mk("c", false) // does not listen: a's dial to it is refused

	// A malformed request first: answered with an error, logged.
	raw, err := net.Dial("tcp", addrs["b"])
	if err != nil {
		t.Fatal(err)
	}
	raw.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
	reply := make([]byte, 64)
	n, _ := raw.Read(reply)
	raw.Close()
	if !bytes.HasPrefix(reply[:n], []byte("BEX1\x02")) {
		t.Errorf("malformed request answered %q, want an error reply", reply[:n])
	}

	sock, err := a.Dial("b")
	if err != nil {
		t.Fatal(err)
	}
	const msgs = 20
	for k := range msgs {
		buf, err := a.Allocate(64 << 10)
		if err != nil {
			t.Fatal(err)
		}
		binary.LittleEndian.PutUint64(buf.Bytes(), uint64(k))
		if err := sock.Send(buf, 64<<10); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Dial("c"); err != nil {
		t.Fatal(err)
	}
	got, refused := 0, false
	deadline := time.After(2 * time.Minute) // a hang guard, not a speed bound
	for got < msgs || !refused {
		select {
		case ev := <-events:
			switch ev.Kind {
			case byteexpress.EvMessage:
				got++
			case byteexpress.EvSocketFailed, byteexpress.EvEngineError:
				if ev.Remote == "c" && ev.Err != nil && strings.Contains(ev.Err.Error(), "refused") {
					refused = true
				} else {
					t.Errorf("%v from %s: %v", ev.Kind, ev.Remote, ev.Err)
				}
			}
		case <-deadline:
			t.Fatalf("after 2 minutes (hung?): %d of %d messages, refusal seen %v", got, msgs, refused)
		}
	}
	cancel()
	runWG.Wait()
	stopNIC()
	serveWG.Wait()
	logMu.Lock()
	defer logMu.Unlock()
	if len(logs) == 0 {
		t.Error("the malformed request was not logged")
	}
}
