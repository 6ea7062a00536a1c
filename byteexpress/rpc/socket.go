package rpc

import (
	"fmt"

	"github.com/besim/besim/byteexpress"
)

// SocketDialer is the RDMA transport: requests go as ByteExpress messages
// over sockets of one Endpoint (large ones by the core's WRITE fragments,
// §5). Addr maps service nodes to endpoint addresses and Alloc gives a
// registered buffer (bemalloc) for each request; the socket owns it once
// Send succeeds.
//
// Each path index is its own engine (Endpoint.DialPath: one RC QP per
// remote and path, its address vector carrying the path's flow label), so
// a path change is a new connection that the fabric routes over another
// uplink (fabric.Packet.Path); sockets on one path share its engine.
type SocketDialer struct {
	EP    *byteexpress.Endpoint
	Addr  func(NodeID) byteexpress.Addr
	Alloc func(n int) (byteexpress.Buffer, error)
	Free  func(byteexpress.Buffer) error
}

type sockConn struct {
	d *SocketDialer
	s *byteexpress.Socket
}

// Dial opens a socket to node (asynchronously: the core queues sends until
// it is connected, and a connect that fails comes back as an event).
func (d *SocketDialer) Dial(node NodeID, path int) (Conn, error) {
	s, err := d.EP.DialPath(d.Addr(node), path)
	if err != nil {
		return nil, err
	}
	return &sockConn{d: d, s: s}, nil
}

func (c *sockConn) Send(hdr []byte, n int) error {
	buf, err := c.d.Alloc(n)
	if err != nil {
		return err
	}
	if len(buf.Bytes()) < HeaderSize {
		_ = c.d.Free(buf)
		return fmt.Errorf("rpc: buffer of %d bytes for a %d-byte request", len(buf.Bytes()), n)
	}
	copy(buf.Bytes(), hdr)
	if err := c.s.Send(buf, n); err != nil {
		_ = c.d.Free(buf)
		return err
	}
	return nil
}

func (c *sockConn) Close() { _ = c.s.Close() }
