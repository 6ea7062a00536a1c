package wire

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"
)

// DefaultWriteTimeout bounds one frame write when Conn.WriteTimeout is 0.
const DefaultWriteTimeout = 10 * time.Second

// Conn is a control connection: frames in, frames out. Send may be called
// from several goroutines (writes are serialized); Recv from one.
type Conn struct {
	nc  net.Conn
	dec *Decoder
	wmu sync.Mutex
	// WriteTimeout bounds each Send (0: DefaultWriteTimeout), so a peer that
	// stops reading cannot block the sender forever.
	WriteTimeout time.Duration
}

// NewConn wraps an established connection.
func NewConn(nc net.Conn) *Conn {
	return &Conn{nc: nc, dec: NewDecoder(bufio.NewReaderSize(nc, 16<<10))}
}

// Send encodes m and writes it as one frame.
func (c *Conn) Send(m Message) error {
	b, err := Encode(m)
	if err != nil {
		return err
	}
	wt := c.WriteTimeout
	if wt <= 0 {
		wt = DefaultWriteTimeout
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.nc.SetWriteDeadline(time.Now().Add(wt)); err != nil {
		return err
	}
	if _, err := c.nc.Write(b); err != nil {
		return fmt.Errorf("wire: send %v: %w", m.Type(), err)
	}
	return nil
}

// Recv reads one message, waiting at most timeout (0: no limit), accepting
// only the given types (none: any type).
func (c *Conn) Recv(timeout time.Duration, only ...Type) (Message, error) {
	var dl time.Time
	if timeout > 0 {
		dl = time.Now().Add(timeout)
	}
	if err := c.nc.SetReadDeadline(dl); err != nil {
		return nil, err
	}
	c.dec.Only(only...)
	m, err := c.dec.Next()
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, fmt.Errorf("wire: nothing received for %v: %w", timeout, err)
		}
		return nil, err
	}
	return m, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }

// RemoteAddr is the peer's address.
func (c *Conn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }

// NetConn is the underlying connection.
func (c *Conn) NetConn() net.Conn { return c.nc }
