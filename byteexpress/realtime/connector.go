package realtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/besim/besim/byteexpress"
)

// TCPConnector carries ByteExpress's out-of-band connection exchange
// (byteexpress.Connector) over TCP, the way real deployments bootstrap RC
// QPs before any RDMA path exists (perftest's exchange; RDMA CM is the
// other way): the dialing side connects to the peer's exchange listener
// (Serve), sends its address and ConnInfo, and reads the peer's ConnInfo or
// refusal. Every exchange runs on its own goroutine, bounded by Timeout.
type TCPConnector struct {
	// Resolve maps a ByteExpress address to the host:port of its Serve
	// listener.
	Resolve func(byteexpress.Addr) (string, error)
	// Timeout bounds one whole exchange, dial included (default 10 s).
	Timeout time.Duration
}

// Wire format, all integers big-endian. Request: "BEX1", u8 address
// length, address, ConnInfo (byteexpress.ConnInfoSize bytes). Reply:
// "BEX1", u8 status; status 0 is followed by the ConnInfo, others by u8
// length and a message.
const (
	exchangeMagic = "BEX1"
	maxAddr       = 255
	maxReplyMsg   = 255
	statusOK      = 0
	statusRefused = 1
	statusError   = 2
	// DefaultExchangeTimeout bounds one exchange.
	DefaultExchangeTimeout = 10 * time.Second
)

// ErrRefused is a peer's refusal (not listening, closing).
var ErrRefused = errors.New("realtime: connection refused by peer endpoint")

// Connect implements byteexpress.Connector.
func (c *TCPConnector) Connect(from, remote byteexpress.Addr, local byteexpress.ConnInfo, done func(byteexpress.ConnInfo, error)) {
	go func() { done(c.exchange(from, remote, local)) }()
}

func (c *TCPConnector) exchange(from, remote byteexpress.Addr, local byteexpress.ConnInfo) (byteexpress.ConnInfo, error) {
	var none byteexpress.ConnInfo
	if len(from) == 0 || len(from) > maxAddr {
		return none, fmt.Errorf("realtime: address %q: length must be 1..%d", from, maxAddr)
	}
	to, err := c.Resolve(remote)
	if err != nil {
		return none, fmt.Errorf("realtime: resolve %s: %w", remote, err)
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultExchangeTimeout
	}
	conn, err := net.DialTimeout("tcp", to, timeout)
	if err != nil {
		return none, fmt.Errorf("realtime: exchange with %s at %s: %w", remote, to, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	req := append([]byte(exchangeMagic), byte(len(from)))
	req = append(req, from...)
	req = append(req, local.Marshal()...)
	if _, err := conn.Write(req); err != nil {
		return none, fmt.Errorf("realtime: exchange with %s: %w", remote, err)
	}
	info, err := readReply(conn)
	if err != nil {
		return none, fmt.Errorf("realtime: exchange with %s: %w", remote, err)
	}
	return info, nil
}

// readRequest decodes one request; every length is bounded.
func readRequest(r io.Reader) (byteexpress.Addr, byteexpress.ConnInfo, error) {
	var none byteexpress.ConnInfo
	var hdr [len(exchangeMagic) + 1]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return "", none, err
	}
	if string(hdr[:len(exchangeMagic)]) != exchangeMagic {
		return "", none, fmt.Errorf("not a ByteExpress exchange (magic %q)", hdr[:len(exchangeMagic)])
	}
	n := int(hdr[len(exchangeMagic)])
	if n == 0 {
		return "", none, errors.New("empty address")
	}
	buf := make([]byte, n+byteexpress.ConnInfoSize)
	if _, err := io.ReadFull(r, buf); err != nil {
		return "", none, err
	}
	info, err := byteexpress.UnmarshalConnInfo(buf[n:])
	if err != nil {
		return "", none, err
	}
	return byteexpress.Addr(buf[:n]), info, nil
}

// readReply decodes one reply.
func readReply(r io.Reader) (byteexpress.ConnInfo, error) {
	var none byteexpress.ConnInfo
	var hdr [len(exchangeMagic) + 1]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return none, err
	}
	if string(hdr[:len(exchangeMagic)]) != exchangeMagic {
		return none, fmt.Errorf("not a ByteExpress exchange reply (magic %q)", hdr[:len(exchangeMagic)])
	}
	switch hdr[len(exchangeMagic)] {
	case statusOK:
		buf := make([]byte, byteexpress.ConnInfoSize)
		if _, err := io.ReadFull(r, buf); err != nil {
			return none, err
		}
		return byteexpress.UnmarshalConnInfo(buf)
	case statusRefused, statusError:
		var l [1]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return none, err
		}
		msg := make([]byte, l[0])
		if _, err := io.ReadFull(r, msg); err != nil {
			return none, err
		}
		if hdr[len(exchangeMagic)] == statusRefused {
			return none, fmt.Errorf("%w: %s", ErrRefused, msg)
		}
		return none, fmt.Errorf("peer: %s", msg)
	default:
		return none, fmt.Errorf("unknown reply status %d", hdr[len(exchangeMagic)])
	}
}

func writeReply(w io.Writer, info byteexpress.ConnInfo, err error) error {
	out := []byte(exchangeMagic)
	if err == nil {
		out = append(append(out, statusOK), info.Marshal()...)
	} else {
		st := byte(statusError)
		if errors.Is(err, byteexpress.ErrRefused) || errors.Is(err, byteexpress.ErrClosed) {
			st = statusRefused
		}
		msg := err.Error()
		if len(msg) > maxReplyMsg {
			msg = msg[:maxReplyMsg]
		}
		out = append(append(out, st, byte(len(msg))), msg...)
	}
	_, werr := w.Write(out)
	return werr
}

// Serve answers exchanges on ln for ep (Endpoint.HandleConnect) until ctx
// is done or ln fails; it closes ln when it returns. Each connection is
// served on its own goroutine with a Timeout deadline; a malformed request
// is answered with an error and logged through logf (if not nil).
func Serve(ctx context.Context, ln net.Listener, ep *byteexpress.Endpoint, timeout time.Duration, logf func(format string, args ...any)) error {
	if timeout <= 0 {
		timeout = DefaultExchangeTimeout
	}
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	defer ln.Close()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		go func() {
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(timeout))
			from, info, err := readRequest(conn)
			if err != nil {
				if logf != nil {
					logf("realtime: exchange from %s refused: %v", conn.RemoteAddr(), err)
				}
				_ = writeReply(conn, byteexpress.ConnInfo{}, fmt.Errorf("bad request: %v", err))
				return
			}
			type answer struct {
				info byteexpress.ConnInfo
				err  error
			}
			ch := make(chan answer, 1)
			ep.HandleConnect(from, info, func(ci byteexpress.ConnInfo, err error) { ch <- answer{ci, err} })
			select {
			case a := <-ch:
				_ = writeReply(conn, a.info, a.err)
			case <-time.After(timeout):
				_ = writeReply(conn, byteexpress.ConnInfo{}, errors.New("endpoint did not answer in time"))
			case <-ctx.Done():
			}
		}()
	}
}

var _ byteexpress.Connector = (*TCPConnector)(nil)
