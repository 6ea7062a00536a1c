package ibv

import (
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/besim/besim/verbs"
)

func info(qpn uint32) verbs.QPInfo {
	return verbs.QPInfo{QPN: qpn, PSN: 0xabcde, GID: verbs.GID{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, byte(qpn)},
		MTU: 4096, RKey: 0x1234, Addr: 0x7f0000001000}
}

type result struct {
	q   verbs.QPInfo
	err error
}

func TestExchangeTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback TCP: %v", err)
	}
	defer ln.Close()
	srv := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			srv <- result{err: err}
			return
		}
		defer c.Close()
		q, err := ExchangeQPInfo(c, info(1))
		srv <- result{q, err}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := ExchangeQPInfo(c, info(2))
	if err != nil || got != info(1) {
		t.Fatalf("client got %+v, %v", got, err)
	}
	if r := <-srv; r.err != nil || r.q != info(2) {
		t.Fatalf("server got %+v, %v", r.q, r.err)
	}
	// The deadline is cleared afterwards.
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
}

func TestExchangePipeBothWriteFirst(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	r := make(chan result, 1)
	go func() {
		q, err := ExchangeQPInfo(b, info(7))
		r <- result{q, err}
	}()
	got, err := ExchangeQPInfo(a, info(8))
	if err != nil || got != info(7) {
		t.Fatalf("got %+v, %v", got, err)
	}
	if x := <-r; x.err != nil || x.q != info(8) {
		t.Fatalf("peer got %+v, %v", x.q, x.err)
	}
}

// peer runs fn on the far end of a pipe and returns the near end.
func peer(t *testing.T, fn func(c net.Conn)) net.Conn {
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	go func() {
		fn(b)
	}()
	return a
}

func drain(c net.Conn) {
	buf := make([]byte, ExchangeSize)
	_, _ = c.Read(buf)
}

func TestExchangeShortRead(t *testing.T) {
	c := peer(t, func(c net.Conn) {
		drain(c)
		c.Write([]byte(exchangeMagic + "short"))
		c.Close()
	})
	if _, err := ExchangeQPInfoTimeout(c, info(1), time.Second); err == nil || !strings.Contains(err.Error(), "read") {
		t.Fatalf("short message: err %v", err)
	}
}

func TestExchangeBadMagic(t *testing.T) {
	c := peer(t, func(c net.Conn) {
		drain(c)
		msg := make([]byte, ExchangeSize)
		copy(msg, "HTTP")
		c.Write(msg)
	})
	if _, err := ExchangeQPInfoTimeout(c, info(1), time.Second); err == nil || !strings.Contains(err.Error(), "not a QP info") {
		t.Fatalf("bad magic: err %v", err)
	}
}

func TestExchangeBadPeerInfo(t *testing.T) {
	c := peer(t, func(c net.Conn) {
		drain(c)
		bad := info(3)
		bad.MTU = 1500
		c.Write(append([]byte(exchangeMagic), bad.Marshal()...))
	})
	if _, err := ExchangeQPInfoTimeout(c, info(1), time.Second); err == nil || !strings.Contains(err.Error(), "MTU") {
		t.Fatalf("bad peer MTU: err %v", err)
	}
}

func TestExchangeTimeout(t *testing.T) {
	c := peer(t, func(c net.Conn) { drain(c) }) // reads, never answers
	// The call returning a deadline error is the check (without the
	// timeout it would block until go test's own); how fast is not.
	_, err := ExchangeQPInfoTimeout(c, info(1), 50*time.Millisecond)
	if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("silent peer: err %v, want a deadline error", err)
	}
}

func TestExchangeSilentPeerThatNeverReads(t *testing.T) {
	c := peer(t, func(net.Conn) {}) // neither reads nor writes
	if _, err := ExchangeQPInfoTimeout(c, info(1), 50*time.Millisecond); err == nil {
		t.Fatal("no error from a peer that never reads")
	}
}

func TestExchangeRejectsBadLocal(t *testing.T) {
	c := peer(t, func(c net.Conn) { drain(c) })
	bad := info(1)
	bad.QPN = 1 << 24
	if _, err := ExchangeQPInfoTimeout(c, bad, time.Second); err == nil || !strings.Contains(err.Error(), "local") {
		t.Fatalf("bad local info: err %v", err)
	}
	if _, err := ExchangeQPInfoTimeout(c, info(1), 0); err == nil {
		t.Fatal("zero timeout accepted")
	}
}
