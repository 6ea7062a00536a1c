package rnic

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/besim/besim/dcqcn"
	"github.com/besim/besim/fabric"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
	"github.com/besim/besim/verbs"
)

// Stats are the NIC's counters.
type Stats struct {
	TxPackets, TxBytes uint64 // frames sent, frame bytes (Ethernet header to FCS)
	RxPackets, RxBytes uint64
	TxPayload          uint64 // payload bytes of data frames sent
	RxPayload          uint64 // payload bytes of data frames accepted in order
	AcksSent, AcksRcvd uint64 // ACK/NAK frames
	Retransmits        uint64 // data packets sent again (go-back-N or timeout)
	SeqNAKsSent        uint64 // NAK sequence error sent (responder)
	SeqNAKsRcvd        uint64 // NAK sequence error received (requester)
	RNRNAKsSent        uint64
	RNRNAKsRcvd        uint64
	Timeouts           uint64 // retransmission timer expiries that retransmitted
	CNPsSent           uint64
	CNPsHandled        uint64
	ECNMarked          uint64 // CE-marked data packets received
	QPCacheHits        uint64
	QPCacheMisses      uint64
	MPTCacheHits       uint64 // memory translation caches (zero when not modelled)
	MPTCacheMisses     uint64
	MTTCacheHits       uint64
	MTTCacheMisses     uint64
	RxBufferDrops      uint64 // arrivals dropped because the receive pipeline was full
	UDNoRecvDrops      uint64 // UD datagrams dropped for want of a posted receive
	RxDiscards         uint64 // frames for no QP, a QP in a wrong state, bad Q_Key, duplicates
	CQOverruns         uint64
	MRs                int64 // registered now
	MRBytes            int64
}

// NIC is a simulated RDMA NIC: a fabric.Host with one port, serving verbs
// contexts opened on it. It is not safe for concurrent use (one simulation,
// one goroutine).
type NIC struct {
	k    *sim.Kernel
	name string
	cfg  Config
	up   fabric.Uplink
	pool *fabric.Pool
	// views are free RecvView buffers by size class (see viewGet).
	views [viewClasses][][]byte
	node  fabric.NodeID
	rate  units.Rate
	ctxs  int

	qps    []*QP // by QP number - qpnBase
	mrs    []*MR
	mrFree []int

	// Transmit scheduling: circular list of QPs with data work (round
	// robin), FIFO lists of QPs owing an ACK/NAK or a CNP.
	act                *QP
	nact               int
	ctrlHead, ctrlTail *QP
	cnpHead, cnpTail   *QP
	wake               sim.Timer

	// Resource model: free-at instants of shared stages.
	txPipe, rxPipe sim.Time
	dmaRd, dmaWr   sim.Time
	txUnit, rxUnit []sim.Time
	rxLimit        sim.Time

	// QP context cache (LRU; see touch).
	lruAt    []uint64 // by QP index, from the first eviction on
	lruLog   []lruUse // uses in order, from lruHead on; stale ones included
	lruHead  int
	lruN     int // cached QPs
	lruClock uint64
	// qpHits counts the context cache hits (Stats.QPCacheHits), here beside
	// lruClock, which every lookup reads, rather than in st.
	qpHits uint64

	// Memory translation caches (mrcache.go).
	mpt, mtt xlateCache
	mttShift uint
	mrSeq    uint64

	dcqcnCfg dcqcn.Config
	st       Stats

	// mrGn is last so that qpHits moves no field after it (mpt, mtt and st
	// keep their cache line offsets).
	mrGn uint8
}

const qpnBase = 0x100

var _ fabric.Host = (*NIC)(nil)

// New returns a NIC named name with configuration cfg. Attach it to a fabric
// port (a topology builder calls Attach), then Open verbs contexts on it.
func New(k *sim.Kernel, name string, cfg Config) (*NIC, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := &NIC{k: k, name: name, cfg: cfg}
	n.txUnit = make([]sim.Time, cfg.Units)
	n.rxUnit = make([]sim.Time, cfg.Units)
	n.wake.Init(k, n, 0)
	n.initMRCache()
	return n, nil
}

// Name is the NIC's name.
func (n *NIC) Name() string { return n.name }

// Config returns the NIC's configuration.
func (n *NIC) Config() Config { return n.cfg }

// Node is the fabric node the NIC is attached as.
func (n *NIC) Node() fabric.NodeID { return n.node }

// GID is the port GID.
func (n *NIC) GID() verbs.GID { return GIDOf(n.node) }

// Stats returns the NIC's counters.
func (n *NIC) Stats() Stats {
	s := n.st
	s.QPCacheHits = n.qpHits
	return s
}

// Kernel is the simulation kernel the NIC runs on.
func (n *NIC) Kernel() *sim.Kernel { return n.k }

// Attach implements fabric.Host.
func (n *NIC) Attach(up fabric.Uplink) {
	n.up = up
	n.pool = up.Pool()
	n.node = up.Node()
	n.rate = up.Rate()
	if m, ok := up.(interface{ MTU() int }); ok {
		// The active RoCE MTU is the largest IB MTU that fits the
		// Ethernet MTU, as real ports derive it from the netdev MTU.
		for n.cfg.PortMTU > 256 && int(n.cfg.PortMTU) > m.MTU() {
			n.cfg.PortMTU /= 2
		}
	}
	n.rxLimit = n.cfg.RxBacklogLimit
	if n.rxLimit == 0 {
		n.rxLimit = sim.TxTime(n.cfg.RxBuffer.Bytes(), n.rate)
	}
	if n.cfg.CC == CCDCQCN {
		d := n.cfg.DCQCN
		if d.LineRate == 0 {
			d = dcqcn.DefaultConfig(n.rate)
		}
		if err := d.Validate(); err != nil {
			panic(fmt.Sprintf("rnic %s: %v", n.name, err))
		}
		n.dcqcnCfg = d
	}
}

// OnEvent implements sim.Handler: the transmit wake-up timer.
func (n *NIC) OnEvent(now sim.Time, _ uint64) {
	if n.up != nil {
		n.up.Wake()
	}
}

// armWake makes the uplink ask for a frame at instant at (or earlier).
func (n *NIC) armWake(at sim.Time) {
	if now := n.k.Now(); at < now {
		at = now
	}
	if !n.wake.Armed() || at < n.wake.When() {
		n.wake.Set(at)
	}
}

func (n *NIC) prioOf(ah verbs.AHAttr) uint8 {
	if ah.ServiceLevel != 0 {
		return ah.ServiceLevel & 7
	}
	return n.cfg.TrafficPrio
}

// --- memory regions -------------------------------------------------------

func (n *NIC) addMR(m *MR) error {
	idx := -1
	if k := len(n.mrFree); k > 0 {
		idx = n.mrFree[k-1]
		n.mrFree = n.mrFree[:k-1]
	} else {
		if len(n.mrs) >= maxMR-1 {
			return fmt.Errorf("rnic: too many MRs")
		}
		n.mrs = append(n.mrs, nil)
		idx = len(n.mrs) - 1
	}
	n.mrGn++
	n.mrSeq++
	m.cid = n.mrSeq
	m.key = uint32(idx+1)<<8 | uint32(n.mrGn)
	n.mrs[idx] = m
	return nil
}

func (n *NIC) delMR(m *MR) {
	if i := int(m.key>>8) - 1; i >= 0 && i < len(n.mrs) && n.mrs[i] == m {
		n.mrs[i] = nil
		n.mrFree = append(n.mrFree, i)
		n.forgetMR(m)
	}
}

func (n *NIC) mrByKey(key uint32) *MR {
	i := int(key>>8) - 1
	if i < 0 || i >= len(n.mrs) {
		return nil
	}
	m := n.mrs[i]
	if m == nil || m.key != key {
		return nil
	}
	return m
}

// --- QP table and context cache --------------------------------------------

func (n *NIC) qpByNum(qpn uint32) *QP {
	i := int(qpn) - qpnBase
	if i < 0 || i >= len(n.qps) {
		return nil
	}
	return n.qps[i]
}

// The QP context cache is an LRU kept without touching other QPs: every use
// stamps the QP (QP.lruAt; 0: not cached) with a NIC-wide clock, so the
// least recently used cached QP is the one with the lowest stamp. Until the
// cache first fills, that is all (most NICs never evict). From the first
// eviction on, the NIC also keeps the stamps by QP index (lruAt) and a log
// of the uses in order (lruLog, from lruHead on): the LRU QP is the log's
// first entry whose stamp is still its QP's. Stale entries are skipped at
// eviction and dropped by compaction (with the evicted prefix), so the log
// stays within twice the cached QPs plus 64 entries, and a use costs O(1)
// amortized without the cache misses of a linked list through cold QP
// contexts.
type lruUse struct {
	at uint64
	i  uint32
}

// touch records a use of q's context and reports a cache hit.
func (n *NIC) touch(q *QP) bool {
	if at := q.lruAt; at != 0 {
		n.qpHits++
		q.cacheHits++
		if at != n.lruClock {
			n.lruPush(q)
		}
		return true
	}
	n.st.QPCacheMisses++
	q.st.CacheMisses++
	if n.lruN >= n.cfg.QPCacheEntries {
		n.lruEvict()
	}
	n.lruN++
	n.lruPush(q)
	return false
}

// lruPush makes q the most recently used.
func (n *NIC) lruPush(q *QP) {
	n.lruClock++
	q.lruAt = n.lruClock
	if n.lruAt == nil {
		return
	}
	if len(n.lruLog) >= 2*n.lruN+64 {
		n.lruCompact()
	}
	i := q.qpn - qpnBase
	n.lruAt[i] = n.lruClock
	n.lruLog = append(n.lruLog, lruUse{at: n.lruClock, i: i})
}

// lruEvict drops the least recently used cached QP.
func (n *NIC) lruEvict() {
	if n.lruAt == nil {
		n.lruStartLog()
	}
	for n.lruHead < len(n.lruLog) {
		u := n.lruLog[n.lruHead]
		n.lruHead++
		if n.lruAt[u.i] == u.at {
			n.lruAt[u.i] = 0
			n.qps[u.i].lruAt = 0
			n.lruN--
			return
		}
	}
}

// lruStartLog builds the stamps by index and the use log from the QPs'
// stamps, at the first eviction.
func (n *NIC) lruStartLog() {
	n.lruAt = make([]uint64, len(n.qps), cap(n.qps))
	n.lruLog = n.lruLog[:0]
	for i, q := range n.qps {
		if q != nil && q.lruAt != 0 {
			n.lruAt[i] = q.lruAt
			n.lruLog = append(n.lruLog, lruUse{at: q.lruAt, i: uint32(i)})
		}
	}
	slices.SortFunc(n.lruLog, func(a, b lruUse) int { return cmp.Compare(a.at, b.at) })
	n.lruHead = 0
}

// lruCompact drops the log's stale entries, keeping the others in order.
func (n *NIC) lruCompact() {
	k := 0
	for _, u := range n.lruLog[n.lruHead:] {
		if n.lruAt[u.i] == u.at {
			n.lruLog[k] = u
			k++
		}
	}
	n.lruLog = n.lruLog[:k]
	n.lruHead = 0
}

// lruUnlink takes q out of the cache (it is destroyed).
func (n *NIC) lruUnlink(q *QP) {
	if q.lruAt != 0 {
		q.lruAt = 0
		if n.lruAt != nil {
			n.lruAt[q.qpn-qpnBase] = 0
		}
		n.lruN--
	}
}

// --- transmit lists ---------------------------------------------------------

// activate puts q in the round-robin ring of QPs with data to send.
func (n *NIC) activate(q *QP) {
	if q.inAct {
		return
	}
	q.inAct = true
	if n.act == nil {
		q.actNext, q.actPrev = q, q
		n.act = q
	} else {
		// Insert just before the cursor: served last in this round.
		p := n.act.actPrev
		q.actPrev, q.actNext = p, n.act
		p.actNext = q
		n.act.actPrev = q
	}
	n.nact++
}

func (n *NIC) deactivate(q *QP) {
	if !q.inAct {
		return
	}
	q.inAct = false
	q.warm = false
	q.prepared = false
	n.nact--
	if n.nact == 0 {
		n.act = nil
	} else {
		q.actPrev.actNext = q.actNext
		q.actNext.actPrev = q.actPrev
		if n.act == q {
			n.act = q.actNext
		}
	}
	q.actNext, q.actPrev = nil, nil
}

// kick is called when q may have new transmit work.
func (n *NIC) kick(q *QP) {
	if !q.hasTX() {
		return
	}
	n.activate(q)
	if !q.prepared {
		q.prepare(n.k.Now())
	}
	n.armWake(max(q.readyAt, q.nextTxAt, q.rnrUntil))
}

func (n *NIC) queueCtrl(q *QP) {
	if !q.inCtrl {
		q.inCtrl = true
		q.ctrlNext = nil
		if n.ctrlTail == nil {
			n.ctrlHead = q
		} else {
			n.ctrlTail.ctrlNext = q
		}
		n.ctrlTail = q
	}
	n.armWake(q.ackAt)
}

func (n *NIC) queueCNP(q *QP) {
	if q.inCNP {
		return
	}
	q.inCNP = true
	q.cnpNext = nil
	if n.cnpTail == nil {
		n.cnpHead = q
	} else {
		n.cnpTail.cnpNext = q
	}
	n.cnpTail = q
	n.armWake(n.k.Now())
}

// Next implements fabric.Host: the transmit arbiter. CNPs first, then
// ACK/NAKs, then data (requests and READ responses) round-robin over QPs
// that have a prepared packet and DCQCN tokens, skipping paused priorities.
func (n *NIC) Next(now sim.Time, paused uint8) *fabric.Packet {
	if n.txPipe > now {
		n.armWake(n.txPipe)
		return nil
	}
	if p := n.nextCNP(now, paused); p != nil {
		return n.sent(now, p)
	}
	if p := n.nextCtrl(now, paused); p != nil {
		return n.sent(now, p)
	}
	if p := n.nextData(now, paused); p != nil {
		return n.sent(now, p)
	}
	return nil
}

func (n *NIC) sent(now sim.Time, p *fabric.Packet) *fabric.Packet {
	n.txPipe = now + n.cfg.PacketCost
	n.st.TxPackets++
	n.st.TxBytes += uint64(p.Size)
	p.Src = n.node
	p.SentAt = now
	return p
}

func (n *NIC) nextCNP(now sim.Time, paused uint8) *fabric.Packet {
	if n.cnpHead == nil || paused&(1<<n.cfg.CNPPrio) != 0 {
		return nil
	}
	q := n.cnpHead
	n.cnpHead = q.cnpNext
	if n.cnpHead == nil {
		n.cnpTail = nil
	}
	q.inCNP, q.cnpNext = false, nil
	if q.dead {
		return n.nextCNP(now, paused)
	}
	p := n.pool.Get()
	p.Kind = fabric.KindCNP
	p.Opcode = opCNP
	p.Prio = n.cfg.CNPPrio
	p.Dst = q.destNode
	p.SrcQP, p.DstQP = q.qpn, q.destQPN
	p.Flow, p.Path = q.flow, q.path
	p.Size = fabric.RoCEv2Extra + 16
	n.st.CNPsSent++
	q.st.CNPsSent++
	return p
}

func (n *NIC) nextCtrl(now sim.Time, paused uint8) *fabric.Packet {
	var prev *QP
	wakeAt := sim.Never
	for q := n.ctrlHead; q != nil; prev, q = q, q.ctrlNext {
		if !q.ackPending || q.dead {
			// Stale entry: unlink and continue from prev.
			n.unlinkCtrl(prev, q)
			if prev == nil {
				return n.nextCtrl(now, paused)
			}
			q = prev
			continue
		}
		if paused&(1<<q.prio) != 0 || q.rdN > 0 {
			continue // ACKs follow the READ responses queued before them
		}
		if q.ackAt > now {
			wakeAt = min(wakeAt, q.ackAt)
			continue
		}
		n.unlinkCtrl(prev, q)
		return q.buildAck(now)
	}
	if wakeAt != sim.Never {
		n.armWake(wakeAt)
	}
	return nil
}

func (n *NIC) unlinkCtrl(prev, q *QP) {
	if prev == nil {
		n.ctrlHead = q.ctrlNext
	} else {
		prev.ctrlNext = q.ctrlNext
	}
	if n.ctrlTail == q {
		n.ctrlTail = prev
	}
	q.inCtrl, q.ctrlNext = false, nil
}

func (n *NIC) nextData(now sim.Time, paused uint8) *fabric.Packet {
	wakeAt := sim.Never
	q := n.act
	for i, cnt := 0, n.nact; i < cnt && n.nact > 0; i++ {
		nxt := q.actNext
		if !q.hasTX() {
			n.deactivate(q)
			q = nxt
			continue
		}
		if paused&(1<<q.prio) != 0 {
			q = nxt
			continue
		}
		if !q.prepared {
			q.prepare(now)
		}
		e := max(q.readyAt, q.nextTxAt, q.rnrUntil)
		if e <= now {
			if p := q.build(now); p != nil {
				if q.inAct {
					n.act = q.actNext
				} else if n.nact > 0 {
					n.act = nxt
				}
				return p
			}
			if q.inAct && q.prepared {
				wakeAt = min(wakeAt, max(q.readyAt, q.nextTxAt, q.rnrUntil))
			}
		} else {
			wakeAt = min(wakeAt, e)
		}
		q = nxt
	}
	if wakeAt != sim.Never {
		n.armWake(wakeAt)
	}
	return nil
}

// --- receive ----------------------------------------------------------------

// Receive implements fabric.Host.
func (n *NIC) Receive(now sim.Time, p *fabric.Packet) {
	n.st.RxPackets++
	n.st.RxBytes += uint64(p.Size)
	q := n.qpByNum(p.DstQP)
	if q == nil || q.dead {
		n.st.RxDiscards++
		n.pool.Put(p)
		return
	}
	if p.Kind == fabric.KindCNP {
		if q.cc == nil && q.ccOn {
			q.cc = q.newCC()
		}
		if q.cc != nil {
			q.cc.OnCNP(now)
		}
		n.st.CNPsHandled++
		q.st.CNPsHandled++
		n.pool.Put(p)
		return
	}
	// Receive pipeline (NIC-wide, per packet) and QP context lookup.
	t := max(now, n.rxPipe) + n.cfg.PacketCost
	if t-now > n.rxLimit || n.dmaWr-now > n.rxLimit {
		n.st.RxBufferDrops++
		n.pool.Put(p)
		return
	}
	n.rxPipe = t
	if !n.touch(q) {
		t = n.rxUnitBusy(q, t, n.cfg.DMAReadLatency)
	}
	q.st.RxPackets++
	q.st.RxBytes += uint64(p.Size)
	keep := false
	switch {
	case p.Kind == fabric.KindAck:
		q.onAck(now, t, p)
	case q.typ == verbs.UD:
		q.udRecv(now, t, p)
	case isReadResp(p.Opcode):
		q.onReadResp(now, t, p)
	default:
		keep = q.respond(now, t, p)
	}
	if !keep {
		n.pool.Put(p)
	}
}

// rxUnitBusy occupies q's processing unit for d from t on and returns when it
// is done.
func (n *NIC) rxUnitBusy(q *QP, t, d sim.Time) sim.Time {
	u := &n.rxUnit[q.unit]
	s := max(t, *u) + d
	*u = s
	return s
}

// dmaWrite moves bytes to host memory once the unit has them at t; it
// returns when they are visible. The PCIe write channel is shared NIC-wide
// and accounted in request order from now.
func (n *NIC) dmaWrite(now, t sim.Time, bytes int64) sim.Time {
	if bytes > 0 {
		d := sim.TxTime(bytes, n.cfg.DMABandwidth)
		n.dmaWr = max(n.dmaWr, now) + d
		t = max(t+d, n.dmaWr)
	}
	return t + n.cfg.DMAWriteLatency
}

// cqeAt is when a CQE generated by q's unit after t (data visible at
// dataAt) is visible.
func (n *NIC) cqeAt(q *QP, t, dataAt sim.Time) sim.Time {
	u := n.rxUnitBusy(q, t, n.cfg.CQECost)
	return max(u+n.cfg.DMAWriteLatency, dataAt)
}
