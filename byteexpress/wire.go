package byteexpress

import "encoding/binary"

// Wire format of the SENDs an engine posts (little-endian, unaligned).
//
// Every SEND starts with an 8-byte header:
//
//	[0:4] credit return: receives the sender re-posted since its last report
//	[4:8] magic "BEx1"
//
// followed by records until the SEND's length, each a kind byte and fields:
//
//	HELLO      kind                                 active side's first SEND
//	OPEN       kind sock:u32                        a socket was opened
//	CLOSE      kind sock:u32                        a socket was closed / refused
//	DATA       kind sock:u32 len:u32 payload[len]   a small message
//	META_REQ   kind sock:u32 tok:u32 len:u64        ask for a destination buffer
//	META_RESP  kind tok:u32 status:u8 slot:u32 addr:u64 rkey:u32
//	KEEPALIVE  kind seq:u64                         §7.2
//
// A socket reference has bit 31 set when the record's sender opened the
// socket (the id is then the sender's); clear when the receiver opened it.
//
// The immediate of a WRITE_WITH_IMM (the last fragment of a large message)
// is the receiver's slot number for receiver-allocated buffers (bit 31
// clear), or, for a buffer the receiver exposed in advance, bit 31 set,
// bits 30..16 the exposure token and bits 15..0 the index of the last
// fragment, so the receiver computes the length as index*S + byte_len.

const (
	hdrSize   = 8
	wireMagic = 0x31784542 // "BEx1" little-endian

	recHello     = 1
	recOpen      = 2
	recClose     = 3
	recData      = 4
	recMetaReq   = 5
	recMetaResp  = 6
	recKeepalive = 7

	sizeHello     = 1
	sizeOpen      = 5
	sizeClose     = 5
	sizeDataHdr   = 9
	sizeMetaReq   = 17
	sizeMetaResp  = 22
	sizeKeepalive = 9

	// minSendCap is the smallest SEND capacity (RecvBufSize, Cwnd) accepted:
	// room for the header and any control record.
	minSendCap = 64

	sockOpener = 1 << 31

	immPrebuilt     = 1 << 31
	maxExposeTokens = 1 << 15
	maxPrebuiltFrag = 1 << 16
	maxSlots        = 1 << 31

	metaOK     = 0
	metaNoSock = 1
	metaNoMem  = 2
)

var le = binary.LittleEndian

func putHeader(b []byte, credits uint32) {
	le.PutUint32(b[0:], credits)
	le.PutUint32(b[4:], wireMagic)
}
