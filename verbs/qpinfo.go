package verbs

import (
	"encoding/binary"
	"fmt"
)

// QPInfo is what two endpoints exchange out of band before connecting RC QPs
// (like perftest's pingpong exchange): QP number, starting PSN, port GID and,
// optionally, one remote buffer (address and rkey).
type QPInfo struct {
	QPN  uint32
	PSN  uint32
	GID  GID
	MTU  MTU
	RKey uint32
	Addr uint64
}

// QPInfoSize is the fixed wire size of a QPInfo.
const QPInfoSize = 4 + 4 + 16 + 4 + 4 + 8

// Marshal encodes q in QPInfoSize big-endian bytes.
func (q QPInfo) Marshal() []byte {
	b := make([]byte, QPInfoSize)
	binary.BigEndian.PutUint32(b[0:], q.QPN)
	binary.BigEndian.PutUint32(b[4:], q.PSN)
	copy(b[8:24], q.GID[:])
	binary.BigEndian.PutUint32(b[24:], uint32(q.MTU))
	binary.BigEndian.PutUint32(b[28:], q.RKey)
	binary.BigEndian.PutUint64(b[32:], q.Addr)
	return b
}

// UnmarshalQPInfo decodes a QPInfo, rejecting wrong sizes and bad values.
func UnmarshalQPInfo(b []byte) (QPInfo, error) {
	var q QPInfo
	if len(b) != QPInfoSize {
		return q, fmt.Errorf("verbs: QP info is %d bytes, want %d", len(b), QPInfoSize)
	}
	q.QPN = binary.BigEndian.Uint32(b[0:])
	q.PSN = binary.BigEndian.Uint32(b[4:])
	copy(q.GID[:], b[8:24])
	q.MTU = MTU(binary.BigEndian.Uint32(b[24:]))
	q.RKey = binary.BigEndian.Uint32(b[28:])
	q.Addr = binary.BigEndian.Uint64(b[32:])
	if q.QPN >= 1<<24 || q.PSN >= 1<<24 {
		return q, fmt.Errorf("verbs: QPN %d or PSN %d exceeds 24 bits", q.QPN, q.PSN)
	}
	if !q.MTU.Valid() {
		return q, fmt.Errorf("verbs: QP info MTU %d invalid", q.MTU)
	}
	return q, nil
}
