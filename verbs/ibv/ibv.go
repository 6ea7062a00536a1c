//go:build rdma

package ibv

/*
#cgo LDFLAGS: -libverbs
#include <infiniband/verbs.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// Union-free forms of the work requests and completions that Go fills and
// reads; the C side converts in the same call that posts or polls.
struct be_swr {
	uint64_t wr_id;
	uint64_t remote_addr;
	struct ibv_ah *ah;
	uint32_t sge_off;
	uint32_t num_sge;
	uint32_t opcode;
	uint32_t flags;
	uint32_t imm;   // host order
	uint32_t rkey;
	uint32_t remote_qpn;
	uint32_t remote_qkey;
};

struct be_rwr {
	uint64_t wr_id;
	uint32_t sge_off;
	uint32_t num_sge;
};

struct be_wc {
	uint64_t wr_id;
	uint32_t status;
	uint32_t opcode;
	uint32_t vendor_err;
	uint32_t byte_len;
	uint32_t imm;   // host order
	uint32_t qp_num;
	uint32_t src_qp;
	uint32_t wc_flags;
};

struct be_ret {
	int rc;
	int bad; // index of the first WR not posted, -1 if none
};

// be_post_send links n requests of the preallocated array w (scatter lists
// in sge) and posts them with one ibv_post_send.
static struct be_ret be_post_send(struct ibv_qp *qp, int ud, const struct be_swr *in, int n,
		struct ibv_send_wr *w, struct ibv_sge *sge) {
	struct be_ret r = {0, -1};
	struct ibv_send_wr *bad = NULL;
	int i;
	if (n <= 0)
		return r;
	for (i = 0; i < n; i++) {
		const struct be_swr *s = &in[i];
		struct ibv_send_wr *x = &w[i];
		memset(x, 0, sizeof(*x));
		x->wr_id = s->wr_id;
		x->next = i + 1 < n ? &w[i + 1] : NULL;
		x->sg_list = &sge[s->sge_off];
		x->num_sge = (int)s->num_sge;
		x->opcode = (enum ibv_wr_opcode)s->opcode;
		x->send_flags = s->flags;
		x->imm_data = htonl(s->imm);
		if (ud) {
			x->wr.ud.ah = s->ah;
			x->wr.ud.remote_qpn = s->remote_qpn;
			x->wr.ud.remote_qkey = s->remote_qkey;
		} else {
			x->wr.rdma.remote_addr = s->remote_addr;
			x->wr.rdma.rkey = s->rkey;
		}
	}
	r.rc = ibv_post_send(qp, w, &bad);
	if (r.rc)
		r.bad = bad ? (int)(bad - w) : 0;
	return r;
}

// be_post_recv posts n receive requests to srq, or to qp if srq is NULL.
static struct be_ret be_post_recv(struct ibv_qp *qp, struct ibv_srq *srq, const struct be_rwr *in, int n,
		struct ibv_recv_wr *w, struct ibv_sge *sge) {
	struct be_ret r = {0, -1};
	struct ibv_recv_wr *bad = NULL;
	int i;
	if (n <= 0)
		return r;
	for (i = 0; i < n; i++) {
		w[i].wr_id = in[i].wr_id;
		w[i].next = i + 1 < n ? &w[i + 1] : NULL;
		w[i].sg_list = &sge[in[i].sge_off];
		w[i].num_sge = (int)in[i].num_sge;
	}
	r.rc = srq ? ibv_post_srq_recv(srq, w, &bad) : ibv_post_recv(qp, w, &bad);
	if (r.rc)
		r.bad = bad ? (int)(bad - w) : 0;
	return r;
}

// be_poll polls up to n completions into wc and packs them into out.
static int be_poll(struct ibv_cq *cq, int n, struct ibv_wc *wc, struct be_wc *out) {
	int got = ibv_poll_cq(cq, n, wc), i;
	for (i = 0; i < got; i++) {
		out[i].wr_id = wc[i].wr_id;
		out[i].status = wc[i].status;
		out[i].opcode = wc[i].opcode;
		out[i].vendor_err = wc[i].vendor_err;
		out[i].byte_len = wc[i].byte_len;
		out[i].imm = (wc[i].wc_flags & IBV_WC_WITH_IMM) ? ntohl(wc[i].imm_data) : 0;
		out[i].qp_num = wc[i].qp_num;
		out[i].src_qp = wc[i].src_qp;
		out[i].wc_flags = wc[i].wc_flags;
	}
	return got;
}

static struct ibv_mr *be_reg_mr(struct ibv_pd *pd, uintptr_t addr, size_t len, int access) {
	return ibv_reg_mr(pd, (void *)addr, len, access);
}

static int be_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr) {
	return ibv_query_port(ctx, port, attr);
}

static struct ibv_td *be_alloc_td(struct ibv_context *ctx) {
	struct ibv_td_init_attr a = {0};
	return ibv_alloc_td(ctx, &a);
}

static int be_dealloc_td(struct ibv_td *td) { return ibv_dealloc_td(td); }

static struct ibv_pd *be_parent_domain(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_td *td) {
	struct ibv_parent_domain_init_attr a;
	memset(&a, 0, sizeof(a));
	a.pd = pd;
	a.td = td;
	return ibv_alloc_parent_domain(ctx, &a);
}

static struct ibv_cq *be_create_cq_pd(struct ibv_context *ctx, int cqe, struct ibv_pd *parent) {
	struct ibv_cq_init_attr_ex a;
	struct ibv_cq_ex *cq;
	memset(&a, 0, sizeof(a));
	a.cqe = (uint32_t)cqe;
	a.wc_flags = IBV_WC_STANDARD_FLAGS;
	a.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
	a.parent_domain = parent;
	cq = ibv_create_cq_ex(ctx, &a);
	return cq ? ibv_cq_ex_to_cq(cq) : NULL;
}

// be_create_qp_pd creates a QP through a parent domain and writes the
// actual capacities back into attr->cap.
static struct ibv_qp *be_create_qp_pd(struct ibv_context *ctx, struct ibv_pd *parent, struct ibv_qp_init_attr *attr) {
	struct ibv_qp_init_attr_ex a;
	struct ibv_qp *qp;
	memset(&a, 0, sizeof(a));
	a.send_cq = attr->send_cq;
	a.recv_cq = attr->recv_cq;
	a.srq = attr->srq;
	a.cap = attr->cap;
	a.qp_type = attr->qp_type;
	a.sq_sig_all = attr->sq_sig_all;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = parent;
	qp = ibv_create_qp_ex(ctx, &a);
	if (qp)
		attr->cap = a.cap;
	return qp;
}

static int be_qp_state(struct ibv_qp *qp) {
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr init;
	int rc = ibv_query_qp(qp, &a, IBV_QP_STATE, &init);
	return rc ? -rc : (int)a.qp_state;
}

static void be_set_gid(union ibv_gid *g, const uint8_t *raw) { memcpy(g->raw, raw, 16); }
static void be_get_gid(const union ibv_gid *g, uint8_t *raw) { memcpy(raw, g->raw, 16); }
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"unsafe"

	"github.com/besim/besim/verbs"
)

// pollBatch bounds the completions one Poll takes (the per-CQ C arrays).
const pollBatch = 256

func errnoOf(err error) error {
	if err == nil {
		return syscall.EIO
	}
	return err
}

// unsupported wraps verbs.ErrNotSupported when the provider lacks a verb.
func unsupported(what string, err error) error {
	if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) {
		return fmt.Errorf("ibv: %s: %w: %w", what, verbs.ErrNotSupported, err)
	}
	return fmt.Errorf("ibv: %s: %w", what, errnoOf(err))
}

// Devices lists the RDMA devices libibverbs can see.
func Devices() ([]string, error) {
	var n C.int
	list, err := C.ibv_get_device_list(&n)
	if list == nil {
		return nil, fmt.Errorf("ibv: ibv_get_device_list: %w", errnoOf(err))
	}
	defer C.ibv_free_device_list(list)
	devs := unsafe.Slice(list, int(n))
	names := make([]string, 0, len(devs))
	for _, d := range devs {
		names = append(names, C.GoString(C.ibv_get_device_name(d)))
	}
	return names, nil
}

// Open opens device name ("" for the first one) on port 1 with GID index 0.
func Open(name string) (verbs.Context, error) { return OpenWith(name, Options{}) }

// OpenWith opens device name ("" for the first one) with o.
func OpenWith(name string, o Options) (verbs.Context, error) {
	if o.Port == 0 {
		o.Port = 1
	}
	if o.GIDIndex < 0 || o.MaxInlineData < 0 {
		return nil, fmt.Errorf("ibv: negative GID index %d or inline size %d", o.GIDIndex, o.MaxInlineData)
	}
	var n C.int
	list, err := C.ibv_get_device_list(&n)
	if list == nil {
		return nil, fmt.Errorf("ibv: ibv_get_device_list: %w", errnoOf(err))
	}
	defer C.ibv_free_device_list(list)
	var dev *C.struct_ibv_device
	var seen []string
	for _, d := range unsafe.Slice(list, int(n)) {
		dn := C.GoString(C.ibv_get_device_name(d))
		seen = append(seen, dn)
		if name == "" || dn == name {
			dev, name = d, dn
			break
		}
	}
	if dev == nil {
		return nil, fmt.Errorf("ibv: no RDMA device %q (found %v)", name, seen)
	}
	ctx, err := C.ibv_open_device(dev)
	if ctx == nil {
		return nil, fmt.Errorf("ibv: ibv_open_device %s: %w", name, errnoOf(err))
	}
	d := &device{ctx: ctx, name: name, port: o.Port, opts: o, parents: map[parentKey]*C.struct_ibv_pd{}}
	if err := d.query(); err != nil {
		C.ibv_close_device(ctx)
		return nil, err
	}
	return d, nil
}

type parentKey struct {
	pd *C.struct_ibv_pd
	td *C.struct_ibv_td
}

// device is an opened ibv_context.
type device struct {
	ctx       *C.struct_ibv_context
	name      string
	port      uint8
	opts      Options
	attr      verbs.DeviceAttr
	linkLayer uint8

	mu      sync.Mutex
	cqPD    *C.struct_ibv_pd // private PD under the parent domains of TD CQs
	parents map[parentKey]*C.struct_ibv_pd
}

func (d *device) query() error {
	var da C.struct_ibv_device_attr
	if rc := C.ibv_query_device(d.ctx, &da); rc != 0 {
		return fmt.Errorf("ibv: ibv_query_device %s: %w", d.name, syscall.Errno(rc))
	}
	var pa C.struct_ibv_port_attr
	if rc := C.be_query_port(d.ctx, C.uint8_t(d.port), &pa); rc != 0 {
		return fmt.Errorf("ibv: ibv_query_port %s port %d: %w", d.name, d.port, syscall.Errno(rc))
	}
	if d.opts.GIDIndex >= int(pa.gid_tbl_len) {
		return fmt.Errorf("ibv: %s port %d has %d GIDs, index %d asked", d.name, d.port, pa.gid_tbl_len, d.opts.GIDIndex)
	}
	var gid C.union_ibv_gid
	if rc := C.ibv_query_gid(d.ctx, C.uint8_t(d.port), C.int(d.opts.GIDIndex), &gid); rc != 0 {
		return fmt.Errorf("ibv: ibv_query_gid %s port %d index %d: %w", d.name, d.port, d.opts.GIDIndex, syscall.Errno(rc))
	}
	d.attr = verbs.DeviceAttr{
		MaxQPWR:  int(da.max_qp_wr),
		MaxSGE:   int(da.max_sge),
		MaxCQE:   int(da.max_cqe),
		MaxMR:    int(da.max_mr),
		MaxSRQWR: int(da.max_srq_wr),
		PortRate: portRate(uint8(pa.active_speed), uint8(pa.active_width)),
		PortMTU:  mtuBytes(int(pa.active_mtu)),
	}
	C.be_get_gid(&gid, (*C.uint8_t)(unsafe.Pointer(&d.attr.GID[0])))
	d.linkLayer = uint8(pa.link_layer)
	return nil
}

func (d *device) Name() string           { return d.name }
func (d *device) Attr() verbs.DeviceAttr { return d.attr }

// LinkLayerEthernet reports whether the port is RoCE (the only link layer
// this backend can address, since AHAttr has no LID).
func (d *device) LinkLayerEthernet() bool { return d.linkLayer == C.IBV_LINK_LAYER_ETHERNET }

func (d *device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var first error
	for k, p := range d.parents {
		if rc := C.ibv_dealloc_pd(p); rc != 0 && first == nil {
			first = fmt.Errorf("ibv: dealloc parent domain: %w", syscall.Errno(rc))
		}
		delete(d.parents, k)
	}
	if d.cqPD != nil {
		if rc := C.ibv_dealloc_pd(d.cqPD); rc != 0 && first == nil {
			first = fmt.Errorf("ibv: dealloc PD: %w", syscall.Errno(rc))
		}
		d.cqPD = nil
	}
	if d.ctx != nil {
		if rc := C.ibv_close_device(d.ctx); rc != 0 && first == nil {
			first = fmt.Errorf("ibv: ibv_close_device %s: %w", d.name, syscall.Errno(rc))
		}
		d.ctx = nil
	}
	return first
}

func (d *device) AllocPD() (verbs.PD, error) {
	p, err := C.ibv_alloc_pd(d.ctx)
	if p == nil {
		return nil, fmt.Errorf("ibv: ibv_alloc_pd: %w", errnoOf(err))
	}
	return &pd{d: d, pd: p}, nil
}

func (d *device) AllocTD() (verbs.TD, error) {
	t, err := C.be_alloc_td(d.ctx)
	if t == nil {
		return nil, unsupported("ibv_alloc_td on "+d.name, err)
	}
	return &td{d: d, td: t}, nil
}

// parentDomain returns the parent domain of (p, t), allocating it once.
func (d *device) parentDomain(p *C.struct_ibv_pd, t *td) (*C.struct_ibv_pd, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := parentKey{p, t.td}
	if pd, ok := d.parents[k]; ok {
		return pd, nil
	}
	pd, err := C.be_parent_domain(d.ctx, p, t.td)
	if pd == nil {
		return nil, unsupported("ibv_alloc_parent_domain", err)
	}
	d.parents[k] = pd
	return pd, nil
}

// dropParents deallocates the parent domains for which match is true.
func (d *device) dropParents(match func(parentKey) bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, p := range d.parents {
		if !match(k) {
			continue
		}
		if rc := C.ibv_dealloc_pd(p); rc != 0 {
			return fmt.Errorf("ibv: dealloc parent domain (resources still use it?): %w", syscall.Errno(rc))
		}
		delete(d.parents, k)
	}
	return nil
}

func (d *device) CreateCQ(depth int, tdv verbs.TD) (verbs.CQ, error) {
	if depth <= 0 {
		return nil, fmt.Errorf("ibv: CQ depth %d", depth)
	}
	var q *C.struct_ibv_cq
	var err error
	if tdv == nil {
		q, err = C.ibv_create_cq(d.ctx, C.int(depth), nil, nil, 0)
	} else {
		t, ok := tdv.(*td)
		if !ok || t.d != d {
			return nil, errors.New("ibv: thread domain from another device or backend")
		}
		d.mu.Lock()
		if d.cqPD == nil {
			d.cqPD, err = C.ibv_alloc_pd(d.ctx)
		}
		cqPD := d.cqPD
		d.mu.Unlock()
		if cqPD == nil {
			return nil, fmt.Errorf("ibv: ibv_alloc_pd: %w", errnoOf(err))
		}
		parent, perr := d.parentDomain(cqPD, t)
		if perr != nil {
			return nil, perr
		}
		q, err = C.be_create_cq_pd(d.ctx, C.int(depth), parent)
	}
	if q == nil {
		return nil, fmt.Errorf("ibv: create CQ of %d: %w", depth, errnoOf(err))
	}
	return newCQ(q, depth), nil
}

// newCQ wraps q with its preallocated poll arrays.
func newCQ(q *C.struct_ibv_cq, depth int) *cq {
	batch := max(min(depth, pollBatch), 1)
	c := &cq{cq: q, batch: batch,
		raw: (*C.struct_ibv_wc)(C.calloc(C.size_t(batch), C.sizeof_struct_ibv_wc)),
		out: (*C.struct_be_wc)(C.calloc(C.size_t(batch), C.sizeof_struct_be_wc)),
	}
	c.outs = unsafe.Slice(c.out, batch)
	return c
}

type td struct {
	d  *device
	td *C.struct_ibv_td
}

func (t *td) Dealloc() error {
	if err := t.d.dropParents(func(k parentKey) bool { return k.td == t.td }); err != nil {
		return err
	}
	if rc := C.be_dealloc_td(t.td); rc != 0 {
		return fmt.Errorf("ibv: ibv_dealloc_td: %w", syscall.Errno(rc))
	}
	return nil
}

type pd struct {
	d  *device
	pd *C.struct_ibv_pd
}

func (p *pd) Dealloc() error {
	if err := p.d.dropParents(func(k parentKey) bool { return k.pd == p.pd }); err != nil {
		return err
	}
	if rc := C.ibv_dealloc_pd(p.pd); rc != 0 {
		return fmt.Errorf("ibv: ibv_dealloc_pd: %w", syscall.Errno(rc))
	}
	return nil
}

// domain is the PD to create resources under: the parent domain of (p, td)
// when a thread domain is given.
func (p *pd) domain(tdv verbs.TD) (*C.struct_ibv_pd, error) {
	if tdv == nil {
		return p.pd, nil
	}
	t, ok := tdv.(*td)
	if !ok || t.d != p.d {
		return nil, errors.New("ibv: thread domain from another device or backend")
	}
	return p.d.parentDomain(p.pd, t)
}

type mr struct {
	mr     *C.struct_ibv_mr
	addr   uintptr
	n      int
	access verbs.Access
}

func (p *pd) RegMR(addr uintptr, length int, access verbs.Access) (verbs.MR, error) {
	if length <= 0 {
		return nil, fmt.Errorf("ibv: MR length %d", length)
	}
	m, err := C.be_reg_mr(p.pd, C.uintptr_t(addr), C.size_t(length), C.int(access))
	if m == nil {
		return nil, fmt.Errorf("ibv: ibv_reg_mr(%#x, %d, %#x): %w", addr, length, uint32(access), errnoOf(err))
	}
	return &mr{mr: m, addr: addr, n: length, access: access}, nil
}

func (m *mr) Addr() uintptr        { return m.addr }
func (m *mr) Len() int             { return m.n }
func (m *mr) LKey() uint32         { return uint32(m.mr.lkey) }
func (m *mr) RKey() uint32         { return uint32(m.mr.rkey) }
func (m *mr) Access() verbs.Access { return m.access }
func (m *mr) Dereg() error {
	if rc := C.ibv_dereg_mr(m.mr); rc != 0 {
		return fmt.Errorf("ibv: ibv_dereg_mr: %w", syscall.Errno(rc))
	}
	return nil
}

// fillAH converts an AHAttr into an ibv_ah_attr with a GRH.
func fillAH(dst *C.struct_ibv_ah_attr, a verbs.AHAttr, port uint8) {
	*dst = C.struct_ibv_ah_attr{}
	dst.is_global = 1
	C.be_set_gid(&dst.grh.dgid, (*C.uint8_t)(unsafe.Pointer(&a.DGID[0])))
	dst.grh.flow_label = C.uint32_t(a.FlowLabel)
	dst.grh.sgid_index = C.uint8_t(a.SGIDIndex)
	dst.grh.hop_limit = C.uint8_t(a.HopLimit)
	if a.HopLimit == 0 {
		dst.grh.hop_limit = 64
	}
	dst.grh.traffic_class = C.uint8_t(a.TrafficClass)
	dst.sl = C.uint8_t(a.ServiceLevel)
	dst.port_num = C.uint8_t(a.PortNum)
	if a.PortNum == 0 {
		dst.port_num = C.uint8_t(port)
	}
}

type ah struct{ ah *C.struct_ibv_ah }

func (p *pd) CreateAH(a verbs.AHAttr) (verbs.AH, error) {
	var attr C.struct_ibv_ah_attr
	fillAH(&attr, a, p.d.port)
	h, err := C.ibv_create_ah(p.pd, &attr)
	if h == nil {
		return nil, fmt.Errorf("ibv: ibv_create_ah to %v: %w", a.DGID, errnoOf(err))
	}
	return &ah{ah: h}, nil
}

func (h *ah) Destroy() error {
	if rc := C.ibv_destroy_ah(h.ah); rc != 0 {
		return fmt.Errorf("ibv: ibv_destroy_ah: %w", syscall.Errno(rc))
	}
	return nil
}

// recvRing is the preallocated C memory of one receive queue.
type recvRing struct {
	mu   sync.Mutex
	cap  int
	sge  int
	in   []C.struct_be_rwr
	sges []C.struct_ibv_sge
	wrs  *C.struct_ibv_recv_wr
}

var (
	errRecvFull = fmt.Errorf("ibv: receive chain longer than the receive queue: %w", syscall.ENOMEM)
	errSendFull = fmt.Errorf("ibv: send chain longer than the send queue: %w", syscall.ENOMEM)
	errSGE      = fmt.Errorf("ibv: work request has more SGEs than the queue allows: %w", syscall.EINVAL)
	errAH       = fmt.Errorf("ibv: UD send without an address handle of this backend: %w", syscall.EINVAL)
)

func newRecvRing(n, sge int) *recvRing {
	n, sge = max(n, 1), max(sge, 1)
	r := &recvRing{cap: n, sge: sge}
	in := (*C.struct_be_rwr)(C.calloc(C.size_t(n), C.sizeof_struct_be_rwr))
	sg := (*C.struct_ibv_sge)(C.calloc(C.size_t(n*sge), C.sizeof_struct_ibv_sge))
	r.wrs = (*C.struct_ibv_recv_wr)(C.calloc(C.size_t(n), C.sizeof_struct_ibv_recv_wr))
	r.in = unsafe.Slice(in, n)
	r.sges = unsafe.Slice(sg, n*sge)
	return r
}

func (r *recvRing) free() {
	if r == nil {
		return
	}
	C.free(unsafe.Pointer(&r.in[0]))
	C.free(unsafe.Pointer(&r.sges[0]))
	C.free(unsafe.Pointer(r.wrs))
}

// post converts the chain into the ring and posts it with one call.
func (r *recvRing) post(qp *C.struct_ibv_qp, srq *C.struct_ibv_srq, wr *verbs.RecvWR) (*verbs.RecvWR, error) {
	if wr == nil {
		return nil, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n, off := 0, 0
	var stop *verbs.RecvWR
	var stopErr error
	for w := wr; w != nil; w = w.Next {
		if n == r.cap {
			stop, stopErr = w, errRecvFull
			break
		}
		if len(w.SGL) > r.sge {
			stop, stopErr = w, errSGE
			break
		}
		x := &r.in[n]
		x.wr_id = C.uint64_t(w.ID)
		x.sge_off = C.uint32_t(off)
		x.num_sge = C.uint32_t(len(w.SGL))
		for _, g := range w.SGL {
			r.sges[off] = C.struct_ibv_sge{addr: C.uint64_t(g.Addr), length: C.uint32_t(g.Length), lkey: C.uint32_t(g.LKey)}
			off++
		}
		n++
	}
	res := C.be_post_recv(qp, srq, &r.in[0], C.int(n), r.wrs, &r.sges[0])
	if res.rc != 0 {
		return nthRecv(wr, int(res.bad)), fmt.Errorf("ibv: post receive: %w", syscall.Errno(res.rc))
	}
	return stop, stopErr
}

func nthRecv(wr *verbs.RecvWR, i int) *verbs.RecvWR {
	for ; i > 0 && wr.Next != nil; i-- {
		wr = wr.Next
	}
	return wr
}

func nthSend(wr *verbs.SendWR, i int) *verbs.SendWR {
	for ; i > 0 && wr.Next != nil; i-- {
		wr = wr.Next
	}
	return wr
}

type qp struct {
	d   *device
	qp  *C.struct_ibv_qp
	typ verbs.QPType

	mu      sync.Mutex // send ring
	sendCap int
	sendSGE int
	swr     []C.struct_be_swr
	ssge    []C.struct_ibv_sge
	wrs     *C.struct_ibv_send_wr

	recv *recvRing // nil with an SRQ
}

func (p *pd) CreateQP(a verbs.QPInitAttr) (verbs.QP, error) {
	if a.Type != verbs.RC && a.Type != verbs.UD {
		return nil, fmt.Errorf("ibv: QP type %v not supported", a.Type)
	}
	scq, ok1 := a.SendCQ.(*cq)
	rcq, ok2 := a.RecvCQ.(*cq)
	if !ok1 || !ok2 {
		return nil, errors.New("ibv: QP needs send and receive CQs of this backend")
	}
	var init C.struct_ibv_qp_init_attr
	init.send_cq, init.recv_cq = scq.cq, rcq.cq
	if a.SRQ != nil {
		s, ok := a.SRQ.(*srq)
		if !ok {
			return nil, errors.New("ibv: SRQ of another backend")
		}
		init.srq = s.srq
	}
	sge := max(a.MaxSGE, 1)
	init.cap.max_send_wr = C.uint32_t(max(a.MaxSendWR, 1))
	init.cap.max_recv_wr = C.uint32_t(max(a.MaxRecvWR, 1))
	if a.SRQ != nil {
		init.cap.max_recv_wr = 0
	}
	init.cap.max_send_sge = C.uint32_t(sge)
	init.cap.max_recv_sge = C.uint32_t(sge)
	init.cap.max_inline_data = C.uint32_t(p.d.opts.MaxInlineData)
	init.qp_type = C.IBV_QPT_RC
	if a.Type == verbs.UD {
		init.qp_type = C.IBV_QPT_UD
	}
	if a.SigAll {
		init.sq_sig_all = 1
	}
	var q *C.struct_ibv_qp
	var err error
	if a.TD == nil {
		q, err = C.ibv_create_qp(p.pd, &init)
	} else {
		parent, perr := p.domain(a.TD)
		if perr != nil {
			return nil, perr
		}
		q, err = C.be_create_qp_pd(p.d.ctx, parent, &init)
	}
	if q == nil {
		return nil, fmt.Errorf("ibv: create %v QP (send %d, recv %d, sge %d): %w",
			a.Type, a.MaxSendWR, a.MaxRecvWR, sge, errnoOf(err))
	}
	recvWR := -1 // no receive ring with an SRQ
	if a.SRQ == nil {
		recvWR = int(init.cap.max_recv_wr)
	}
	return newQP(p.d, q, a.Type, int(init.cap.max_send_wr), int(init.cap.max_send_sge),
		recvWR, int(init.cap.max_recv_sge)), nil
}

// newQP wraps q with rings sized by the capacities the provider granted;
// recvWR < 0 means the QP receives from an SRQ.
func newQP(d *device, q *C.struct_ibv_qp, t verbs.QPType, sendWR, sendSGE, recvWR, recvSGE int) *qp {
	n, ns := max(sendWR, 1), max(sendSGE, 1)
	x := &qp{d: d, qp: q, typ: t, sendCap: n, sendSGE: ns}
	x.swr = unsafe.Slice((*C.struct_be_swr)(C.calloc(C.size_t(n), C.sizeof_struct_be_swr)), n)
	x.ssge = unsafe.Slice((*C.struct_ibv_sge)(C.calloc(C.size_t(n*ns), C.sizeof_struct_ibv_sge)), n*ns)
	x.wrs = (*C.struct_ibv_send_wr)(C.calloc(C.size_t(n), C.sizeof_struct_ibv_send_wr))
	if recvWR >= 0 {
		x.recv = newRecvRing(recvWR, recvSGE)
	}
	return x
}

// freeRings releases the C memory of q's rings.
func (q *qp) freeRings() {
	C.free(unsafe.Pointer(&q.swr[0]))
	C.free(unsafe.Pointer(&q.ssge[0]))
	C.free(unsafe.Pointer(q.wrs))
	q.recv.free()
}

func (q *qp) QPN() uint32        { return uint32(q.qp.qp_num) }
func (q *qp) Type() verbs.QPType { return q.typ }

// SendQueueCap is the send queue depth the provider granted (at least the
// MaxSendWR asked for); see verbstest.SendQueueCapper.
func (q *qp) SendQueueCap() int { return q.sendCap }

func (q *qp) State() verbs.QPState {
	s := C.be_qp_state(q.qp)
	if s < 0 {
		return verbs.QPState(q.qp.state)
	}
	return verbs.QPState(s)
}

func (q *qp) Modify(attr *verbs.QPAttr, mask verbs.AttrMask) error {
	var a C.struct_ibv_qp_attr
	a.qp_state = C.enum_ibv_qp_state(attr.State)
	a.qp_access_flags = C.uint(attr.AccessFlags)
	a.pkey_index = C.uint16_t(attr.PKeyIndex)
	a.port_num = C.uint8_t(attr.Port)
	a.qkey = C.uint32_t(attr.QKey)
	if mask&verbs.AttrPathMTU != 0 {
		m, ok := mtuEnum(attr.PathMTU)
		if !ok {
			return fmt.Errorf("ibv: path MTU %d is not an IB MTU: %w", attr.PathMTU, syscall.EINVAL)
		}
		a.path_mtu = C.enum_ibv_mtu(m)
	}
	if mask&verbs.AttrAV != 0 {
		fillAH(&a.ah_attr, attr.AH, q.d.port)
	}
	a.timeout = C.uint8_t(attr.Timeout)
	a.retry_cnt = C.uint8_t(attr.RetryCnt)
	a.rnr_retry = C.uint8_t(attr.RNRRetry)
	a.rq_psn = C.uint32_t(attr.RQPSN)
	a.sq_psn = C.uint32_t(attr.SQPSN)
	a.max_rd_atomic = C.uint8_t(attr.MaxRdAtomic)
	a.max_dest_rd_atomic = C.uint8_t(attr.MaxDestRdAtomic)
	a.min_rnr_timer = C.uint8_t(attr.MinRNRTimer)
	a.dest_qp_num = C.uint32_t(attr.DestQPN)
	if rc := C.ibv_modify_qp(q.qp, &a, C.int(mask)); rc != 0 {
		return fmt.Errorf("ibv: ibv_modify_qp QP %d to %v (mask %#x): %w", q.QPN(), attr.State, uint32(mask), syscall.Errno(rc))
	}
	return nil
}

func (q *qp) PostSend(wr *verbs.SendWR) (*verbs.SendWR, error) {
	if wr == nil {
		return nil, nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	ud := q.typ == verbs.UD
	n, off := 0, 0
	var stop *verbs.SendWR
	var stopErr error
	for w := wr; w != nil; w = w.Next {
		if n == q.sendCap {
			stop, stopErr = w, errSendFull
			break
		}
		if len(w.SGL) > q.sendSGE {
			stop, stopErr = w, errSGE
			break
		}
		s := &q.swr[n]
		s.wr_id = C.uint64_t(w.ID)
		s.sge_off = C.uint32_t(off)
		s.num_sge = C.uint32_t(len(w.SGL))
		s.opcode = C.uint32_t(w.Opcode)
		s.flags = C.uint32_t(w.Flags)
		s.imm = C.uint32_t(w.Imm)
		if ud {
			h, ok := w.AH.(*ah)
			if !ok {
				stop, stopErr = w, errAH
				break
			}
			s.ah = h.ah
			s.remote_qpn = C.uint32_t(w.RemoteQPN)
			s.remote_qkey = C.uint32_t(w.RemoteQKey)
		} else {
			s.remote_addr = C.uint64_t(w.RemoteAddr)
			s.rkey = C.uint32_t(w.RKey)
		}
		for _, g := range w.SGL {
			q.ssge[off] = C.struct_ibv_sge{addr: C.uint64_t(g.Addr), length: C.uint32_t(g.Length), lkey: C.uint32_t(g.LKey)}
			off++
		}
		n++
	}
	var udFlag C.int
	if ud {
		udFlag = 1
	}
	res := C.be_post_send(q.qp, udFlag, &q.swr[0], C.int(n), q.wrs, &q.ssge[0])
	if res.rc != 0 {
		return nthSend(wr, int(res.bad)), fmt.Errorf("ibv: ibv_post_send: %w", syscall.Errno(res.rc))
	}
	return stop, stopErr
}

func (q *qp) PostRecv(wr *verbs.RecvWR) (*verbs.RecvWR, error) {
	if q.recv == nil {
		return wr, fmt.Errorf("ibv: QP %d receives from an SRQ: %w", q.QPN(), syscall.EINVAL)
	}
	return q.recv.post(q.qp, nil, wr)
}

func (q *qp) Destroy() error {
	if rc := C.ibv_destroy_qp(q.qp); rc != 0 {
		return fmt.Errorf("ibv: ibv_destroy_qp %d: %w", q.QPN(), syscall.Errno(rc))
	}
	q.freeRings()
	return nil
}

type srq struct {
	srq  *C.struct_ibv_srq
	ring *recvRing
}

func (p *pd) CreateSRQ(a verbs.SRQInitAttr) (verbs.SRQ, error) {
	dom, err := p.domain(a.TD)
	if err != nil {
		return nil, err
	}
	var init C.struct_ibv_srq_init_attr
	init.attr.max_wr = C.uint32_t(max(a.MaxWR, 1))
	init.attr.max_sge = C.uint32_t(max(a.MaxSGE, 1))
	s, err := C.ibv_create_srq(dom, &init)
	if s == nil {
		return nil, fmt.Errorf("ibv: ibv_create_srq(%d WRs): %w", a.MaxWR, errnoOf(err))
	}
	return &srq{srq: s, ring: newRecvRing(int(init.attr.max_wr), int(init.attr.max_sge))}, nil
}

func (s *srq) PostRecv(wr *verbs.RecvWR) (*verbs.RecvWR, error) { return s.ring.post(nil, s.srq, wr) }

func (s *srq) Destroy() error {
	if rc := C.ibv_destroy_srq(s.srq); rc != 0 {
		return fmt.Errorf("ibv: ibv_destroy_srq: %w", syscall.Errno(rc))
	}
	s.ring.free()
	return nil
}

type cq struct {
	mu    sync.Mutex
	cq    *C.struct_ibv_cq
	batch int
	raw   *C.struct_ibv_wc // batch entries
	out   *C.struct_be_wc  // batch entries
	outs  []C.struct_be_wc
	err   error
}

// Poll takes up to min(len(wc), 256) completions with one ibv_poll_cq.
// A CQ error (negative return) yields 0; Err reports it.
func (c *cq) Poll(wc []verbs.WC) int {
	n := min(len(wc), c.batch)
	if n == 0 {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	got := int(C.be_poll(c.cq, C.int(n), c.raw, c.out))
	if got < 0 {
		c.err = fmt.Errorf("ibv: ibv_poll_cq: %d", got)
		return 0
	}
	for i, o := range c.outs[:got] {
		wc[i] = verbs.WC{
			WRID:      uint64(o.wr_id),
			Status:    verbs.WCStatus(o.status),
			Opcode:    verbs.WCOpcode(o.opcode),
			Flags:     verbs.WCFlags(o.wc_flags) & verbs.WCWithImm,
			ByteLen:   uint32(o.byte_len),
			Imm:       uint32(o.imm),
			QPN:       uint32(o.qp_num),
			SrcQP:     uint32(o.src_qp),
			VendorErr: uint32(o.vendor_err),
		}
	}
	return got
}

// Err reports the last ibv_poll_cq failure, if any.
func (c *cq) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *cq) Depth() int { return int(c.cq.cqe) }

func (c *cq) Destroy() error {
	if rc := C.ibv_destroy_cq(c.cq); rc != 0 {
		return fmt.Errorf("ibv: ibv_destroy_cq: %w", syscall.Errno(rc))
	}
	c.freeArrays()
	return nil
}

func (c *cq) freeArrays() {
	C.free(unsafe.Pointer(c.raw))
	C.free(unsafe.Pointer(c.out))
}

// Compile-time checks that the backend implements the port.
var (
	_ verbs.Context = (*device)(nil)
	_ verbs.PD      = (*pd)(nil)
	_ verbs.MR      = (*mr)(nil)
	_ verbs.TD      = (*td)(nil)
	_ verbs.AH      = (*ah)(nil)
	_ verbs.QP      = (*qp)(nil)
	_ verbs.SRQ     = (*srq)(nil)
	_ verbs.CQ      = (*cq)(nil)
)
