// Package ibv is the real-hardware backend of the verbs port: a thin cgo
// layer over libibverbs (rdma-core), built with the tag rdma. Without the
// tag the package compiles to stubs whose functions return ErrNoRDMA, so
// `go test ./...` passes on machines without libibverbs-dev.
//
// The mapping is 1:1 where the port mirrors ibverbs (paper §2.2): QPAttr and
// AttrMask become ibv_qp_attr and ibv_qp_attr_mask with the same bit
// values, statuses and opcodes keep their ibverbs numbers, and address
// vectors always carry a GRH (RoCEv2). What the port adds is kept cheap:
//
//   - PostSend converts a chained []SendWR into a preallocated C array of
//     ibv_send_wr and ibv_sge linked by next and rings the doorbell with ONE
//     ibv_post_send call; PostRecv and SRQ receives likewise. There is no C
//     allocation per post and one cgo call per batch, which is what makes
//     the engine's doorbell batching (§5.4.1) pay off.
//   - Poll drains up to a batch of completions with one ibv_poll_cq into a
//     per-CQ C array and converts them into the caller's []verbs.WC without
//     allocating.
//   - Thread domains (§6.2.1) are ibv_alloc_td plus one parent domain
//     (ibv_alloc_parent_domain) per (PD, TD) pair: QPs and SRQs given a TD
//     are created through the parent domain, CQs through ibv_create_cq_ex
//     with a parent domain, so the provider may drop its locks.
//   - A CQ may serve many QPs and carries qp_num for dispatch; SRQs are
//     plain ibv_srq (§6.2.2).
//
// Immediate data is in host byte order in the port (SendWR.Imm, WC.Imm);
// the backend converts to and from the network order of the wire.
// HopLimit 0 in an AHAttr means 64. Addressing is by GID only, as RoCE
// needs; InfiniBand ports, which also need a LID, are not supported.
//
// QP numbers and buffer addresses are exchanged out of band over TCP, like
// perftest, with ExchangeQPInfo, which needs no device and is built always.
package ibv

import "errors"

// ErrNoRDMA is returned by every entry point of a build without the rdma tag.
var ErrNoRDMA = errors.New("ibv: built without rdma support (rebuild with -tags rdma and libibverbs-dev)")

// Options selects the port and GID of an opened device.
type Options struct {
	// Port is the 1-based port number (0 means 1).
	Port uint8
	// GIDIndex is the GID table index used as the local address and as
	// the default SGIDIndex. On RoCEv2 NICs the IPv4-mapped RoCEv2 GID is
	// often not at index 0 (see show_gids).
	GIDIndex int
	// MaxInlineData is requested for every QP (cap.max_inline_data); 0
	// means none, and FlagInline posts then fail.
	MaxInlineData int
}
