// Package tcpx, internal to berun (only berun/role uses it), is berun's
// TCP message transport: length-prefixed messages over real kernel TCP
// sockets. It is the baseline the paper compares ByteExpress with (§8:
// "the deployed Linux kernel TCP/IP stack") and the shape of the RPC
// layer's TCP fallback (§7), so berun's tcp roles measure what the kernel
// stack delivers with the least framing on top.
//
// A message is a 4-byte big-endian length followed by that many bytes. The
// length is checked against Options.MaxMessage (default 16 MiB, never more
// than HardMaxMessage) before anything is allocated; a longer one is
// refused with ErrTooLarge and the connection is then unusable. A
// zero-length message is legal (the tcp roles use it as an end marker).
//
// The hot path does not allocate: WriteMsg sends large messages with one
// writev of header and payload (net.Buffers) and copies small ones into a
// per-connection buffer for a single write; ReadMsg reads into the caller's
// buffer through a 4 KiB bufio.Reader, which hands large reads straight to
// the socket. BenchmarkLoopback compares this with a plain Go sender and
// receiver pair writing and reading 1 MiB buffers on the same loopback.
//
// A Conn may be used by one reader and one writer goroutine at the same
// time, not by two of either.
package tcpx

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
)

// Sizes.
const (
	HeaderSize        = 4
	DefaultMaxMessage = 16 << 20
	HardMaxMessage    = 1 << 30
	// smallMsg: messages up to this size are coalesced with their header
	// into one write; larger ones go out with writev.
	smallMsg = 32 << 10
)

// ErrTooLarge is returned for a message over the connection's bound.
var ErrTooLarge = errors.New("tcpx: message larger than the bound")

// Options tune a connection.
type Options struct {
	// MaxMessage bounds received and sent messages (0: DefaultMaxMessage).
	MaxMessage int
	// ReadBuffer and WriteBuffer set SO_RCVBUF and SO_SNDBUF; 0 leaves the
	// kernel's autotuning alone (recommended).
	ReadBuffer, WriteBuffer int
	// BufSize is the size of the read buffer (0: 4 KiB). Small messages are
	// read from it in batches; a large payload beyond what it holds is read
	// straight into the caller's buffer, so a small one copies least.
	BufSize int
}

// Stats counts a connection's messages and payload bytes.
type Stats struct {
	MsgsSent, BytesSent, MsgsRecv, BytesRecv int64
}

// Conn is a framed TCP connection.
type Conn struct {
	nc   net.Conn
	r    *bufio.Reader
	max  int
	rhdr [HeaderSize]byte
	wbuf []byte
	iov  [2][]byte

	msgsSent, bytesSent, msgsRecv, bytesRecv atomic.Int64
}

// New frames an established connection.
func New(nc net.Conn, o Options) (*Conn, error) {
	max := o.MaxMessage
	if max == 0 {
		max = DefaultMaxMessage
	}
	if max < 0 || max > HardMaxMessage {
		return nil, fmt.Errorf("tcpx: MaxMessage %d, want 1..%d", max, HardMaxMessage)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		if o.ReadBuffer > 0 {
			if err := tc.SetReadBuffer(o.ReadBuffer); err != nil {
				return nil, err
			}
		}
		if o.WriteBuffer > 0 {
			if err := tc.SetWriteBuffer(o.WriteBuffer); err != nil {
				return nil, err
			}
		}
	}
	bs := o.BufSize
	if bs <= 0 {
		bs = 4 << 10
	}
	return &Conn{nc: nc, r: bufio.NewReaderSize(nc, bs), max: max, wbuf: make([]byte, 0, HeaderSize+smallMsg)}, nil
}

// Dial connects to addr (host:port) from local ("" or an IP to bind the
// source address, port 0), bounded by ctx.
func Dial(ctx context.Context, addr, local string, o Options) (*Conn, error) {
	d := net.Dialer{}
	if local != "" {
		ip := net.ParseIP(local)
		if ip == nil {
			return nil, fmt.Errorf("tcpx: local address %q is not an IP", local)
		}
		d.LocalAddr = &net.TCPAddr{IP: ip}
	}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c, err := New(nc, o)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

// WriteMsg sends p as one message.
func (c *Conn) WriteMsg(p []byte) error {
	if len(p) > c.max {
		return fmt.Errorf("%w: sending %d bytes, at most %d", ErrTooLarge, len(p), c.max)
	}
	if len(p) <= smallMsg {
		b := binary.BigEndian.AppendUint32(c.wbuf[:0], uint32(len(p)))
		b = append(b, p...)
		if _, err := c.nc.Write(b); err != nil {
			return err
		}
	} else {
		var hdr [HeaderSize]byte
		binary.BigEndian.PutUint32(hdr[:], uint32(len(p)))
		c.iov[0], c.iov[1] = hdr[:], p
		bufs := net.Buffers(c.iov[:])
		_, err := bufs.WriteTo(c.nc)
		c.iov[0], c.iov[1] = nil, nil
		if err != nil {
			return err
		}
	}
	c.msgsSent.Add(1)
	c.bytesSent.Add(int64(len(p)))
	return nil
}

// ReadMsg reads one message into buf (reallocated when too small) and
// returns it. io.EOF means the peer closed between messages;
// io.ErrUnexpectedEOF, inside one.
func (c *Conn) ReadMsg(buf []byte) ([]byte, error) {
	if _, err := io.ReadFull(c.r, c.rhdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(c.rhdr[:])
	if uint64(n) > uint64(c.max) {
		return nil, fmt.Errorf("%w: peer sent a %d-byte message, at most %d", ErrTooLarge, n, c.max)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(c.r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	c.msgsRecv.Add(1)
	c.bytesRecv.Add(int64(n))
	return buf, nil
}

// Stats returns the connection's counts so far.
func (c *Conn) Stats() Stats {
	return Stats{MsgsSent: c.msgsSent.Load(), BytesSent: c.bytesSent.Load(),
		MsgsRecv: c.msgsRecv.Load(), BytesRecv: c.bytesRecv.Load()}
}

// CloseWrite shuts down the sending side (the peer reads io.EOF).
func (c *Conn) CloseWrite() error {
	if tc, ok := c.nc.(interface{ CloseWrite() error }); ok {
		return tc.CloseWrite()
	}
	return nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }

// NetConn is the underlying connection, for deadlines and addresses.
func (c *Conn) NetConn() net.Conn { return c.nc }
