package byteexpress

import (
	"encoding/binary"
	"fmt"

	"github.com/besim/besim/verbs"
)

// Addr names a remote endpoint (host and service) in the connection table
// (§6.1). Its format is the Connector's business: the simulator uses node
// names, real hardware "host:port".
type Addr string

// ConnInfo is what two engines exchange out of band before their RC QPs can
// talk (like perftest's pingpong exchange): the QP coordinates plus the
// ByteExpress parameters each side needs about the other.
type ConnInfo struct {
	QP verbs.QPInfo
	// RecvDepth is the number of receives the sender of this info has posted
	// for the new QP: the peer's initial credit count (§5.4.2). 0 means
	// "shared receive queue, do not count credits" (§6.2.2).
	RecvDepth uint32
	// RecvBufSize is the size of each of those receive buffers: the largest
	// SEND the peer may post.
	RecvBufSize uint32
	// FragSize is the sender's effective fragment size S, which the peer
	// needs to size messages written into pre-known buffers.
	FragSize uint32
	// FlowLabel is the flow label of both QPs' address vectors, set by the
	// dialing side (Endpoint.DialPath) and adopted by the passive side, so
	// that both directions of the connection are pinned to one path (the
	// RoCEv2 UDP source port derives from it). 0: not pinned.
	FlowLabel uint32
}

// ConnInfoSize is the wire size of a ConnInfo.
const ConnInfoSize = verbs.QPInfoSize + 16

// Marshal encodes c in ConnInfoSize bytes (for Connectors over a byte
// stream, such as the TCP side channel on real hardware).
func (c ConnInfo) Marshal() []byte {
	b := make([]byte, 0, ConnInfoSize)
	b = append(b, c.QP.Marshal()...)
	b = binary.BigEndian.AppendUint32(b, c.RecvDepth)
	b = binary.BigEndian.AppendUint32(b, c.RecvBufSize)
	b = binary.BigEndian.AppendUint32(b, c.FragSize)
	b = binary.BigEndian.AppendUint32(b, c.FlowLabel)
	return b
}

// UnmarshalConnInfo decodes what Marshal produced.
func UnmarshalConnInfo(b []byte) (ConnInfo, error) {
	var c ConnInfo
	if len(b) != ConnInfoSize {
		return c, fmt.Errorf("byteexpress: connection info is %d bytes, want %d", len(b), ConnInfoSize)
	}
	q, err := verbs.UnmarshalQPInfo(b[:verbs.QPInfoSize])
	if err != nil {
		return c, err
	}
	c.QP = q
	b = b[verbs.QPInfoSize:]
	c.RecvDepth = binary.BigEndian.Uint32(b[0:])
	c.RecvBufSize = binary.BigEndian.Uint32(b[4:])
	c.FragSize = binary.BigEndian.Uint32(b[8:])
	c.FlowLabel = binary.BigEndian.Uint32(b[12:])
	if c.FlowLabel > maxFlowLabel {
		return c, fmt.Errorf("byteexpress: connection info with flow label %#x, above the 20-bit %#x", c.FlowLabel, maxFlowLabel)
	}
	if c.RecvBufSize < minSendCap || c.FragSize == 0 {
		return c, fmt.Errorf("byteexpress: connection info with receive buffers of %d bytes, fragments of %d", c.RecvBufSize, c.FragSize)
	}
	return c, nil
}

// Connector carries the out-of-band exchange that sets up an engine (the
// simulator implements it with a modelled side channel, real hardware with
// TCP or RDMA CM).
//
// Connect is called by an I/O thread step when Dial needs a new engine: it
// must deliver local to the endpoint serving remote, which hands it (with
// from, the dialing endpoint's own address) to its Endpoint.HandleConnect,
// and later call done exactly once with the remote's answer or an error.
// Connect must not block; done may be called at any later time or
// synchronously inside Connect, and from another goroutine only when the
// threads have mailboxes (realtime.Attach).
type Connector interface {
	Connect(from, remote Addr, local ConnInfo, done func(remote ConnInfo, err error))
}
