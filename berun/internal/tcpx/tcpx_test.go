package tcpx

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

func tcpPair(tb testing.TB) (a, b net.Conn) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	ch := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			ch <- nil
			return
		}
		ch <- c
	}()
	a, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	b = <-ch
	if b == nil {
		tb.Fatal("accept failed")
	}
	tb.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func framedPair(tb testing.TB, o Options) (*Conn, *Conn) {
	a, b := tcpPair(tb)
	ca, err := New(a, o)
	if err != nil {
		tb.Fatal(err)
	}
	cb, err := New(b, o)
	if err != nil {
		tb.Fatal(err)
	}
	return ca, cb
}

func TestMessages(t *testing.T) {
	a, b := framedPair(t, Options{MaxMessage: 4 << 20})
	sizes := []int{0, 1, 100, smallMsg, smallMsg + 1, 1 << 20, 4 << 20}
	go func() {
		for i, n := range sizes {
			p := bytes.Repeat([]byte{byte(i + 1)}, n)
			if err := a.WriteMsg(p); err != nil {
				t.Error(err)
				return
			}
		}
		a.CloseWrite()
	}()
	var buf []byte
	for i, n := range sizes {
		got, err := b.ReadMsg(buf)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if len(got) != n || (n > 0 && (got[0] != byte(i+1) || got[n-1] != byte(i+1))) {
			t.Fatalf("message %d: %d bytes, want %d", i, len(got), n)
		}
		buf = got
	}
	if _, err := b.ReadMsg(buf); err != io.EOF {
		t.Fatalf("after the last message: %v, want io.EOF", err)
	}
	st := b.Stats()
	if st.MsgsRecv != int64(len(sizes)) || st.BytesRecv != int64(1+100+smallMsg+smallMsg+1+1<<20+4<<20) {
		t.Fatalf("stats %+v", st)
	}
}

func TestBounds(t *testing.T) {
	a, b := framedPair(t, Options{MaxMessage: 1000})
	if err := a.WriteMsg(make([]byte, 1001)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("send over the bound: %v", err)
	}
	// A peer announcing 4 GiB is refused without allocating it.
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], 0xffffffff)
	a.NetConn().Write(hdr[:])
	if _, err := b.ReadMsg(nil); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversize announce: %v", err)
	}
	if _, err := New(nil, Options{MaxMessage: HardMaxMessage + 1}); err == nil {
		t.Fatal("MaxMessage over the hard bound accepted")
	}
}

func TestTruncated(t *testing.T) {
	a, b := framedPair(t, Options{})
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], 10)
	a.NetConn().Write(append(hdr[:], "abc"...))
	a.CloseWrite()
	if _, err := b.ReadMsg(nil); err != io.ErrUnexpectedEOF {
		t.Fatalf("truncated message: %v", err)
	}
}

func TestDialLocal(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := Dial(ctx, ln.Addr().String(), "127.0.0.1", Options{})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := Dial(ctx, ln.Addr().String(), "not-an-ip", Options{}); err == nil {
		t.Fatal("bad local address accepted")
	}
}
