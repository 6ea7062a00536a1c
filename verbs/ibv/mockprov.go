//go:build rdma

package ibv

// A device-free stand-in for a provider, used by this package's tests to run
// the post and poll conversions (the cgo hot path) where no RDMA device
// exists. ibv_post_send, ibv_post_recv, ibv_post_srq_recv and ibv_poll_cq
// are inline calls through context->ops, so an ibv_context whose ops record
// what they are given is enough. Nothing here is used outside tests; cgo
// cannot live in _test.go files, hence this file.

/*
#include <infiniband/verbs.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define BE_MOCK_MAX 128

struct be_mock_send {
	uint64_t wr_id;
	int opcode, send_flags, num_sge;
	uint32_t imm_data; // as posted (network order)
	uint64_t remote_addr;
	uint32_t rkey, remote_qpn, remote_qkey;
	struct ibv_ah *ah;
	struct ibv_sge sge[4];
};

struct be_mock_recv {
	uint64_t wr_id;
	int num_sge, srq;
	struct ibv_sge sge[4];
};

struct be_mock {
	struct ibv_context ctx; // first: the ops recover the mock from context
	struct ibv_qp qp;
	struct ibv_cq cq;
	struct ibv_srq srq;
	struct ibv_ah ah;
	int fail_at; // index in a posted chain to fail with ENOMEM, -1 for none
	int posts;   // doorbells rung
	int nsend, nrecv, nwc, wc_pos;
	struct be_mock_send sent[BE_MOCK_MAX];
	struct be_mock_recv recvd[BE_MOCK_MAX];
	struct ibv_wc wc[BE_MOCK_MAX];
};

static int be_mock_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad) {
	struct be_mock *m = (struct be_mock *)qp->context;
	int i;
	m->posts++;
	for (i = 0; wr; wr = wr->next, i++) {
		struct be_mock_send *s;
		int j;
		if (i == m->fail_at || m->nsend == BE_MOCK_MAX || wr->num_sge > 4) {
			*bad = wr;
			return ENOMEM;
		}
		s = &m->sent[m->nsend++];
		s->wr_id = wr->wr_id;
		s->opcode = wr->opcode;
		s->send_flags = wr->send_flags;
		s->num_sge = wr->num_sge;
		s->imm_data = wr->imm_data;
		if (qp->qp_type == IBV_QPT_UD) {
			s->ah = wr->wr.ud.ah;
			s->remote_qpn = wr->wr.ud.remote_qpn;
			s->remote_qkey = wr->wr.ud.remote_qkey;
		} else {
			s->remote_addr = wr->wr.rdma.remote_addr;
			s->rkey = wr->wr.rdma.rkey;
		}
		for (j = 0; j < wr->num_sge; j++)
			s->sge[j] = wr->sg_list[j];
	}
	return 0;
}

static int be_mock_recv_common(struct be_mock *m, int srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad) {
	int i;
	m->posts++;
	for (i = 0; wr; wr = wr->next, i++) {
		struct be_mock_recv *r;
		int j;
		if (i == m->fail_at || m->nrecv == BE_MOCK_MAX || wr->num_sge > 4) {
			*bad = wr;
			return ENOMEM;
		}
		r = &m->recvd[m->nrecv++];
		r->wr_id = wr->wr_id;
		r->num_sge = wr->num_sge;
		r->srq = srq;
		for (j = 0; j < wr->num_sge; j++)
			r->sge[j] = wr->sg_list[j];
	}
	return 0;
}

static int be_mock_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad) {
	return be_mock_recv_common((struct be_mock *)qp->context, 0, wr, bad);
}

static int be_mock_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad) {
	return be_mock_recv_common((struct be_mock *)srq->context, 1, wr, bad);
}

static int be_mock_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc) {
	struct be_mock *m = (struct be_mock *)cq->context;
	int got = 0;
	while (got < n && m->wc_pos < m->nwc)
		wc[got++] = m->wc[m->wc_pos++];
	return got;
}

static struct be_mock *be_mock_new(int ud) {
	struct be_mock *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->ctx.ops.post_send = be_mock_post_send;
	m->ctx.ops.post_recv = be_mock_post_recv;
	m->ctx.ops.post_srq_recv = be_mock_post_srq_recv;
	m->ctx.ops.poll_cq = be_mock_poll_cq;
	m->qp.context = &m->ctx;
	m->qp.qp_num = 0x123;
	m->qp.qp_type = ud ? IBV_QPT_UD : IBV_QPT_RC;
	m->qp.state = IBV_QPS_RTS;
	m->cq.context = &m->ctx;
	m->cq.cqe = BE_MOCK_MAX;
	m->srq.context = &m->ctx;
	m->fail_at = -1;
	return m;
}

static void be_mock_push_wc(struct be_mock *m, uint64_t wr_id, int status, int opcode, uint32_t byte_len,
		uint32_t imm_be, uint32_t qpn, uint32_t src_qp, unsigned flags, uint32_t vendor_err) {
	struct ibv_wc *w = &m->wc[m->nwc++];
	memset(w, 0, sizeof(*w));
	w->wr_id = wr_id;
	w->status = status;
	w->opcode = opcode;
	w->byte_len = byte_len;
	w->imm_data = imm_be;
	w->qp_num = qpn;
	w->src_qp = src_qp;
	w->wc_flags = flags;
	w->vendor_err = vendor_err;
}
*/
import "C"

import (
	"unsafe"

	"github.com/besim/besim/verbs"
)

// mockProvider owns one mock context with a QP, a CQ, an SRQ and an AH.
type mockProvider struct{ m *C.struct_be_mock }

func newMockProvider(t verbs.QPType) *mockProvider {
	var ud C.int
	if t == verbs.UD {
		ud = 1
	}
	return &mockProvider{m: C.be_mock_new(ud)}
}

func (p *mockProvider) free() { C.free(unsafe.Pointer(p.m)) }

// qp wraps the mock QP with rings of the given capacities (recvWR < 0: SRQ).
func (p *mockProvider) qp(t verbs.QPType, sendWR, sge, recvWR int) *qp {
	return newQP(&device{port: 1}, &p.m.qp, t, sendWR, sge, recvWR, sge)
}

func (p *mockProvider) cq(depth int) *cq { return newCQ(&p.m.cq, depth) }

func (p *mockProvider) srq(n, sge int) *srq { return &srq{srq: &p.m.srq, ring: newRecvRing(n, sge)} }

func (p *mockProvider) ah() *ah { return &ah{ah: &p.m.ah} }

func (p *mockProvider) failAt(i int) { p.m.fail_at = C.int(i) }
func (p *mockProvider) posts() int   { return int(p.m.posts) }

type mockSend struct {
	WRID                      uint64
	Opcode, Flags             int
	ImmBE                     [4]byte // imm_data bytes as they sit in the WR
	RemoteAddr                uint64
	RKey, RemoteQPN, RemoteQK uint32
	AH                        bool // the WR carried the mock AH
	SGL                       []verbs.SGE
}

type mockRecv struct {
	WRID uint64
	SRQ  bool
	SGL  []verbs.SGE
}

func sgl(s []C.struct_ibv_sge) []verbs.SGE {
	out := make([]verbs.SGE, len(s))
	for i, g := range s {
		out[i] = verbs.SGE{Addr: uintptr(g.addr), Length: uint32(g.length), LKey: uint32(g.lkey)}
	}
	return out
}

func (p *mockProvider) sent() []mockSend {
	var out []mockSend
	for _, s := range p.m.sent[:p.m.nsend] {
		imm := uint32(s.imm_data)
		out = append(out, mockSend{
			WRID: uint64(s.wr_id), Opcode: int(s.opcode), Flags: int(s.send_flags),
			ImmBE:      *(*[4]byte)(unsafe.Pointer(&imm)),
			RemoteAddr: uint64(s.remote_addr), RKey: uint32(s.rkey),
			RemoteQPN: uint32(s.remote_qpn), RemoteQK: uint32(s.remote_qkey),
			AH:  s.ah == &p.m.ah,
			SGL: sgl(s.sge[:s.num_sge]),
		})
	}
	return out
}

func (p *mockProvider) recvd() []mockRecv {
	var out []mockRecv
	for _, r := range p.m.recvd[:p.m.nrecv] {
		out = append(out, mockRecv{WRID: uint64(r.wr_id), SRQ: r.srq != 0, SGL: sgl(r.sge[:r.num_sge])})
	}
	return out
}

// pushWC queues a completion; imm is given in host order and stored in
// network order, as a provider does.
func (p *mockProvider) pushWC(w verbs.WC, flags uint32) {
	b := [4]byte{byte(w.Imm >> 24), byte(w.Imm >> 16), byte(w.Imm >> 8), byte(w.Imm)}
	C.be_mock_push_wc(p.m, C.uint64_t(w.WRID), C.int(w.Status), C.int(w.Opcode), C.uint32_t(w.ByteLen),
		*(*C.uint32_t)(unsafe.Pointer(&b)), C.uint32_t(w.QPN), C.uint32_t(w.SrcQP), C.unsigned(flags), C.uint32_t(w.VendorErr))
}

// resetCounts forgets what was posted and polled.
func (p *mockProvider) resetCounts() {
	p.m.posts, p.m.nsend, p.m.nrecv, p.m.nwc, p.m.wc_pos = 0, 0, 0, 0, 0
}
