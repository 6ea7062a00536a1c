package rnic

import (
	"errors"
	"fmt"

	"github.com/besim/besim/fabric"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/verbs"
)

// Device limits reported by Attr, those of a ConnectX-5 (ibv_devinfo -v:
// max_qp_wr 32768, max_sge 30, max_cqe 4194303, max_mr 16777216,
// max_srq_wr 32767).
const (
	maxQPWR   = 32768
	maxSGE    = 30
	maxCQE    = 4194303
	maxMR     = 1 << 24
	maxSRQWR  = 32767
	maxInline = 256
	pageSize  = 4096
)

var (
	errClosed   = errors.New("rnic: context is closed")
	errBusy     = errors.New("rnic: resource still in use")
	errDestroy  = errors.New("rnic: already destroyed")
	errForeign  = errors.New("rnic: object belongs to another device")
	errNotAttch = errors.New("rnic: NIC is not attached to a fabric port")
)

// Context is an opened device (ibv_context) of a NIC. It owns the doorbell
// registers of its QPs (the provider's UAR/bfreg pool) and the CPU that its
// calls are charged to.
type Context struct {
	nic    *NIC
	name   string
	cpu    *CPU
	def    *CPU
	closed bool
	users  int

	// Doorbell registers (mlx5 dynamic UAR allocation: dedicated ones first,
	// then shared ones, then the least used shared one).
	dedFree   []*bfreg
	dedAlloc  int
	shared    []*bfreg
	sharedIdx int
}

var (
	_ verbs.Context = (*Context)(nil)
	_ verbs.PD      = (*PD)(nil)
	_ verbs.MR      = (*MR)(nil)
	_ verbs.TD      = (*TD)(nil)
	_ verbs.AH      = (*AH)(nil)
	_ verbs.CQ      = (*CQ)(nil)
	_ verbs.SRQ     = (*SRQ)(nil)
	_ verbs.QP      = (*QP)(nil)
)

// Open opens a verbs context on the NIC. The NIC must be attached to its
// fabric port first (its GID and port rate come from the attachment).
func (n *NIC) Open() (*Context, error) {
	if n.up == nil {
		return nil, errNotAttch
	}
	n.ctxs++
	c := &Context{nic: n, name: fmt.Sprintf("%s/ctx%d", n.name, n.ctxs)}
	c.def = NewCPU(n.k, c.name+"/cpu")
	return c, nil
}

// Name is the device name.
func (c *Context) Name() string { return c.name }

// NIC is the device the context belongs to.
func (c *Context) NIC() *NIC { return c.nic }

// SetCPU makes cpu the one that subsequent calls on this context's objects
// are charged to (nil restores the context's default CPU). The simulator
// sets the I/O thread's CPU before running its step.
func (c *Context) SetCPU(cpu *CPU) { c.cpu = cpu }

// CPU returns the CPU calls are currently charged to.
func (c *Context) CPU() *CPU {
	if c.cpu != nil {
		return c.cpu
	}
	return c.def
}

// Attr reports the device and port attributes.
func (c *Context) Attr() verbs.DeviceAttr {
	return verbs.DeviceAttr{
		MaxQPWR: maxQPWR, MaxSGE: maxSGE, MaxCQE: maxCQE, MaxMR: maxMR, MaxSRQWR: maxSRQWR,
		PortRate: c.nic.rate.BitsPerSecond(), PortMTU: c.nic.cfg.PortMTU, GID: GIDOf(c.nic.node),
	}
}

// AllocPD allocates a protection domain.
func (c *Context) AllocPD() (verbs.PD, error) {
	if c.closed {
		return nil, errClosed
	}
	c.users++
	return &PD{ctx: c}, nil
}

// AllocTD allocates a thread domain with its own doorbell register: QPs
// created with it ring that register without the provider's lock.
func (c *Context) AllocTD() (verbs.TD, error) {
	if c.closed {
		return nil, errClosed
	}
	c.users++
	return &TD{ctx: c, bf: &bfreg{}}, nil
}

// CreateCQ creates a completion queue holding at least depth entries.
func (c *Context) CreateCQ(depth int, td verbs.TD) (verbs.CQ, error) {
	if c.closed {
		return nil, errClosed
	}
	if depth < 1 || depth > maxCQE {
		return nil, fmt.Errorf("rnic: CQ depth %d out of 1..%d", depth, maxCQE)
	}
	if td != nil {
		t, ok := td.(*TD)
		if !ok || t.ctx != c {
			return nil, errForeign
		}
	}
	c.users++
	cq := &CQ{ctx: c, depth: depth, ring: make([]cqEntry, min(depth, cqInitialRing))}
	cq.timer.Init(c.nic.k, cq, 0)
	return cq, nil
}

// Close closes the context; everything created from it must be destroyed.
func (c *Context) Close() error {
	if c.closed {
		return errDestroy
	}
	if c.users != 0 {
		return fmt.Errorf("rnic: closing %s with %d objects alive: %w", c.name, c.users, errBusy)
	}
	c.closed = true
	return nil
}

// qpBFReg picks the doorbell register of a new QP without a thread domain,
// in the order of the mlx5 provider's mlx5_get_qp_uar.
func (c *Context) qpBFReg() *bfreg {
	cfg := &c.nic.cfg
	if k := len(c.dedFree); k > 0 {
		b := c.dedFree[k-1]
		c.dedFree = c.dedFree[:k-1]
		b.users++
		return b
	}
	if c.dedAlloc < cfg.DedicatedBFRegs {
		c.dedAlloc++
		return &bfreg{users: 1}
	}
	if len(c.shared) < cfg.SharedBFRegs {
		b := &bfreg{shared: true, users: 1}
		c.shared = append(c.shared, b)
		return b
	}
	best := c.shared[0]
	for _, b := range c.shared[1:] {
		if b.users < best.users {
			best = b
		}
	}
	best.users++
	return best
}

func (c *Context) releaseBFReg(b *bfreg, td *TD) {
	b.users--
	if td == nil && !b.shared && b.users == 0 {
		c.dedFree = append(c.dedFree, b)
	}
}

// PD is a protection domain.
type PD struct {
	ctx   *Context
	users int
	dead  bool
}

// Dealloc frees the PD; its MRs, QPs, SRQs and AHs must be gone.
func (pd *PD) Dealloc() error {
	if pd.dead {
		return errDestroy
	}
	if pd.users != 0 {
		return fmt.Errorf("rnic: PD has %d objects: %w", pd.users, errBusy)
	}
	pd.dead = true
	pd.ctx.users--
	return nil
}

// RegMR registers length bytes at addr. In payload mode the memory is
// accessed directly for the life of the MR, so it must stay mapped. The cost
// (fixed plus per pinned page) is charged to the current CPU.
func (pd *PD) RegMR(addr uintptr, length int, access verbs.Access) (verbs.MR, error) {
	if pd.dead || pd.ctx.closed {
		return nil, errClosed
	}
	if length < 0 || (length == 0 && addr == 0) {
		return nil, fmt.Errorf("rnic: RegMR length %d at %#x", length, addr)
	}
	if access&verbs.AccessRemoteWrite != 0 && access&verbs.AccessLocalWrite == 0 {
		return nil, fmt.Errorf("rnic: RegMR: remote write needs local write (ibv_reg_mr(3))")
	}
	n := pd.ctx.nic
	mr := &MR{pd: pd, addr: addr, length: length, access: access}
	if !n.cfg.SizesOnly {
		mr.buf = memAt(addr, length)
	}
	if err := n.addMR(mr); err != nil {
		return nil, err
	}
	pd.users++
	cpu := pd.ctx.CPU()
	pages := (int64(addr)%pageSize + int64(length) + pageSize - 1) / pageSize
	cpu.Charge(n.cfg.RegMRBase + sim.Time(pages)*n.cfg.RegMRPerPage)
	cpu.st.RegMRs++
	cpu.st.RegMRBytes += int64(length)
	n.st.MRs++
	n.st.MRBytes += int64(length)
	return mr, nil
}

// CreateAH creates an address handle for UD sends.
func (pd *PD) CreateAH(attr verbs.AHAttr) (verbs.AH, error) {
	if pd.dead || pd.ctx.closed {
		return nil, errClosed
	}
	node, ok := NodeOf(attr.DGID)
	if !ok {
		return nil, fmt.Errorf("rnic: AH DGID %v is not a simulated port", attr.DGID)
	}
	pd.users++
	return &AH{pd: pd, node: node, prio: pd.ctx.nic.prioOf(attr)}, nil
}

// MR is a registered memory region. LKey and RKey are equal, as on mlx5.
type MR struct {
	pd     *PD
	addr   uintptr
	length int
	access verbs.Access
	key    uint32
	cid    uint64 // identity in the translation caches (unique per registration)
	buf    []byte
	dead   bool
}

// Addr is the registered start address.
func (m *MR) Addr() uintptr { return m.addr }

// Len is the registered length.
func (m *MR) Len() int { return m.length }

// LKey is the local key.
func (m *MR) LKey() uint32 { return m.key }

// RKey is the remote key.
func (m *MR) RKey() uint32 { return m.key }

// Access is the registered access.
func (m *MR) Access() verbs.Access { return m.access }

// Dereg deregisters the region.
func (m *MR) Dereg() error {
	if m.dead {
		return errDestroy
	}
	m.dead = true
	n := m.pd.ctx.nic
	n.delMR(m)
	m.pd.users--
	n.st.MRs--
	n.st.MRBytes -= int64(m.length)
	return nil
}

// contains reports whether [addr, addr+n) lies in the region.
func (m *MR) contains(addr uint64, n int64) bool {
	a := uint64(m.addr)
	return addr >= a && n >= 0 && addr-a <= uint64(m.length) && uint64(n) <= uint64(m.length)-(addr-a)
}

// TD is a thread domain.
type TD struct {
	ctx   *Context
	bf    *bfreg
	users int
	dead  bool
}

// Dealloc frees the thread domain.
func (t *TD) Dealloc() error {
	if t.dead {
		return errDestroy
	}
	if t.users != 0 {
		return fmt.Errorf("rnic: TD has %d objects: %w", t.users, errBusy)
	}
	t.dead = true
	t.ctx.users--
	return nil
}

// AH is an address handle.
type AH struct {
	pd   *PD
	node fabric.NodeID
	prio uint8
	dead bool
}

// Destroy frees the address handle.
func (a *AH) Destroy() error {
	if a.dead {
		return errDestroy
	}
	a.dead = true
	a.pd.users--
	return nil
}

// cqInitialRing is the CQE ring a CQ starts with; it doubles, up to the
// CQ's depth, when a completion finds it full. A CQ sized for the worst case
// (a ByteExpress thread's 16384) holds 768 KiB only if that many
// completions are ever outstanding at once; the ring stops growing at the
// run's high-water mark, so a steady state allocates nothing.
const cqInitialRing = 64

type cqEntry struct {
	wc verbs.WC
	at sim.Time // when the CQE is visible in host memory
}

// CQ is a completion queue. CQEs become pollable at the instant the NIC's
// write of them reaches host memory; entries of one CQ are visible in the
// order the NIC wrote them.
type CQ struct {
	ctx   *Context
	depth int
	ring  []cqEntry
	head  int
	n     int
	last  sim.Time

	h        sim.Handler
	tag      uint64
	notified bool
	timer    sim.Timer

	overruns uint64
	users    int
	dead     bool
	// lent are the RecvView buffers the last Poll handed out (WC.Data),
	// returned to the NIC at the next Poll.
	lent [][]byte
}

// SetNotify installs a hook that the NIC calls (h.OnEvent(now, tag)) when a
// CQE becomes pollable on a CQ that its poller has drained: after a Poll
// that returned fewer entries than asked, the next CQE to land fires the hook
// once at the instant it lands. It is how an I/O thread sleeps until work
// arrives (a completion channel without the channel). Nil removes it.
func (cq *CQ) SetNotify(h sim.Handler, tag uint64) {
	cq.h, cq.tag, cq.notified = h, tag, false
	cq.armNotify()
}

func (cq *CQ) armNotify() {
	if cq.h == nil || cq.notified || cq.n == 0 {
		return
	}
	at := cq.ring[cq.head].at
	if !cq.timer.Armed() || at < cq.timer.When() {
		cq.timer.Set(max(at, cq.ctx.nic.k.Now()))
	}
}

// OnEvent fires the notify hook.
func (cq *CQ) OnEvent(now sim.Time, _ uint64) {
	if cq.h == nil || cq.notified || cq.n == 0 {
		return
	}
	if at := cq.ring[cq.head].at; at > now {
		cq.timer.Set(at)
		return
	}
	cq.notified = true
	cq.h.OnEvent(now, cq.tag)
}

// push appends a completion visible at at (or after the previous one).
func (cq *CQ) push(wc verbs.WC, at sim.Time) {
	if cq.dead {
		cq.ctx.nic.viewPut(wc.Data)
		return
	}
	if at < cq.last {
		at = cq.last
	}
	cq.last = at
	if cq.n == len(cq.ring) && len(cq.ring) < cq.depth {
		cq.grow()
	}
	if cq.n == len(cq.ring) {
		cq.overruns++
		cq.ctx.nic.st.CQOverruns++
		cq.ctx.nic.viewPut(wc.Data)
		return
	}
	i := cq.head + cq.n
	if i >= len(cq.ring) {
		i -= len(cq.ring)
	}
	cq.ring[i] = cqEntry{wc: wc, at: at}
	cq.n++
	if cq.n == 1 {
		cq.armNotify()
	}
}

// grow doubles the ring (at most to depth), keeping the entries in order.
func (cq *CQ) grow() {
	r := make([]cqEntry, min(2*len(cq.ring), cq.depth))
	k := copy(r, cq.ring[cq.head:])
	copy(r[k:], cq.ring[:cq.head])
	cq.ring, cq.head = r, 0
}

// Poll takes up to len(wc) completions that are visible at the current
// CPU's local time.
func (cq *CQ) Poll(wc []verbs.WC) int {
	cpu := cq.ctx.CPU()
	cfg := &cq.ctx.nic.cfg
	now := cpu.Now()
	for i, b := range cq.lent {
		cq.ctx.nic.viewPut(b)
		cq.lent[i] = nil
	}
	cq.lent = cq.lent[:0]
	k := 0
	for k < len(wc) && cq.n > 0 && cq.ring[cq.head].at <= now {
		wc[k] = cq.ring[cq.head].wc
		cq.ring[cq.head].wc.Data = nil
		if wc[k].Data != nil {
			cq.lent = append(cq.lent, wc[k].Data)
		}
		cq.head++
		if cq.head == len(cq.ring) {
			cq.head = 0
		}
		cq.n--
		k++
	}
	cpu.Charge(cfg.PollCall + sim.Time(k)*cfg.PollPerCQE)
	cpu.st.Polls++
	cpu.st.CQEs += uint64(k)
	if k < len(wc) {
		cq.notified = false
		cq.armNotify()
	}
	return k
}

// Depth is the CQ's capacity.
func (cq *CQ) Depth() int { return cq.depth }

// Len is the number of CQEs written and not yet polled (visible or not).
func (cq *CQ) Len() int { return cq.n }

// Overruns counts CQEs lost because the CQ was full.
func (cq *CQ) Overruns() uint64 { return cq.overruns }

// Destroy frees the CQ; no QP may use it.
func (cq *CQ) Destroy() error {
	if cq.dead {
		return errDestroy
	}
	if cq.users != 0 {
		return fmt.Errorf("rnic: CQ used by %d QPs: %w", cq.users, errBusy)
	}
	cq.dead = true
	cq.timer.Stop()
	cq.ctx.users--
	return nil
}

// rwqe is a receive the responder took from its queue (QP.cur), with its
// own SGL storage.
type rwqe struct {
	id    uint64
	sgl   []verbs.SGE
	total int64
	avail sim.Time
}

// posted is a receive waiting in a queue's ring; its SGL is
// sges[i*maxSGE:][:nsge] for ring position i (32 bytes instead of an
// rwqe's 48: 16 KiB less per 1,024-deep SRQ).
type posted struct {
	id    uint64
	total int64
	avail sim.Time
	nsge  uint8
}

// recvQueue is a ring of receive WQEs (a QP's RQ or an SRQ).
type recvQueue struct {
	ring   []posted
	sges   []verbs.SGE // one backing array for every WQE's SGL
	head   int
	n      int
	maxSGE int
}

func (rq *recvQueue) init(depth, sge int) {
	rq.ring = make([]posted, depth)
	rq.maxSGE = max(sge, 1)
	rq.sges = make([]verbs.SGE, depth*rq.maxSGE)
}

// post appends a chain; it charges cpu and returns the first WR not posted.
func (rq *recvQueue) post(ctx *Context, wr *verbs.RecvWR) (*verbs.RecvWR, error) {
	cpu := ctx.CPU()
	cfg := &ctx.nic.cfg
	k := 0
	var bad *verbs.RecvWR
	var err error
	for w := wr; w != nil; w = w.Next {
		if rq.n == len(rq.ring) {
			bad, err = w, fmt.Errorf("rnic: receive queue full (%d)", len(rq.ring))
			break
		}
		if len(w.SGL) > rq.maxSGE {
			bad, err = w, fmt.Errorf("rnic: receive WR has %d SGEs, max %d", len(w.SGL), rq.maxSGE)
			break
		}
		i := rq.head + rq.n
		if i >= len(rq.ring) {
			i -= len(rq.ring)
		}
		e := &rq.ring[i]
		e.id = w.ID
		e.nsge = uint8(copy(rq.sges[i*rq.maxSGE:(i+1)*rq.maxSGE], w.SGL))
		e.total = 0
		for _, s := range w.SGL {
			e.total += int64(s.Length)
		}
		rq.n++
		k++
	}
	t := cpu.Charge(cfg.PostRecvCall + sim.Time(k)*cfg.PostRecvPerWQE)
	cpu.st.RecvPosts++
	for j := 0; j < k; j++ {
		i := rq.head + rq.n - k + j
		if i >= len(rq.ring) {
			i -= len(rq.ring)
		}
		rq.ring[i].avail = t
	}
	return bad, err
}

// ready reports whether the oldest receive is visible to the NIC at now.
func (rq *recvQueue) ready(now sim.Time) bool {
	return rq.n > 0 && rq.ring[rq.head].avail <= now
}

// pop removes the oldest receive, copying it into dst (which keeps its own
// SGL storage).
func (rq *recvQueue) pop(dst *rwqe) {
	e := &rq.ring[rq.head]
	dst.id, dst.total, dst.avail = e.id, e.total, e.avail
	b := rq.head * rq.maxSGE
	dst.sgl = append(dst.sgl[:0], rq.sges[b:b+int(e.nsge)]...)
	rq.head++
	if rq.head == len(rq.ring) {
		rq.head = 0
	}
	rq.n--
}

// SRQ is a shared receive queue.
type SRQ struct {
	pd    *PD
	rq    recvQueue
	users int
	dead  bool
}

// CreateSRQ creates a shared receive queue.
func (pd *PD) CreateSRQ(attr verbs.SRQInitAttr) (verbs.SRQ, error) {
	if pd.dead || pd.ctx.closed {
		return nil, errClosed
	}
	if attr.MaxWR < 1 || attr.MaxWR > maxSRQWR || attr.MaxSGE > maxSGE {
		return nil, fmt.Errorf("rnic: SRQ MaxWR %d MaxSGE %d out of range", attr.MaxWR, attr.MaxSGE)
	}
	s := &SRQ{pd: pd}
	s.rq.init(attr.MaxWR, attr.MaxSGE)
	pd.users++
	return s, nil
}

// PostRecv posts receives to the SRQ.
func (s *SRQ) PostRecv(wr *verbs.RecvWR) (*verbs.RecvWR, error) {
	if s.dead {
		return wr, errDestroy
	}
	return s.rq.post(s.pd.ctx, wr)
}

// Len is the number of posted receives not yet consumed.
func (s *SRQ) Len() int { return s.rq.n }

// Destroy frees the SRQ; no QP may use it.
func (s *SRQ) Destroy() error {
	if s.dead {
		return errDestroy
	}
	if s.users != 0 {
		return fmt.Errorf("rnic: SRQ used by %d QPs: %w", s.users, errBusy)
	}
	s.dead = true
	s.pd.users--
	return nil
}
