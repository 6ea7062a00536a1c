package byteexpress

import (
	"fmt"
	"math/bits"

	"github.com/besim/besim/verbs"
)

// wrRing is an engine's work-request ring of SQDepth entries (paper §5.4.1,
// Figure 7). Indices are absolute and only grow: [head, pend) are in
// flight (posted, not completed), [pend, tail) pending (prepared, not yet
// posted), the rest free. The entry at index i lives in slots[i%depth]:
// its bookkeeping and what its work request needs. The verbs.SendWRs
// themselves are built only when the pending entries are posted (chain),
// in the thread's wrScratch: a provider copies a work request when it is
// posted, so keeping a 96-byte SendWR and its SGE per entry for the
// engine's life (1,096 bytes a ring at depth 8, against 520 now) bought
// nothing. The ring counts entries; bytes are the send window's business.
type wrRing struct {
	depth uint64
	slots []wrSlot
	head  uint64
	pend  uint64
	tail  uint64
	// stageFree has bit s set while staging slot s (the engine's s-th
	// sendBuf-byte SEND buffer) is free. A SEND takes the lowest free slot
	// rather than the one at its ring position, so an engine with one or
	// two SENDs in flight reuses the same one or two slots and touches
	// only their pages (the staging is still registered whole, SQDepth
	// slots per engine, as modelled; only resident memory shrinks).
	stageFree []uint64
}

type slotKind uint8

const (
	slotSend slotKind = iota + 1
	slotWrite
)

// wrSlot is one ring entry: its bookkeeping and its work request's fields
// (the SGE's length is bytes for a SEND, set when it is posted).
type wrSlot struct {
	kind   slotKind
	op     verbs.Opcode
	stage  uint32 // a SEND's staging slot
	imm    uint32
	rkey   uint32
	bytes  int
	msg    *outMsg // completion of this WR finishes msg (its last fragment)
	raddr  uint64
	msgOff uint64
	sge    verbs.SGE
}

// wrScratch is where chain builds the work requests of one post: an I/O
// thread's, shared by its engines (a post is over before the next begins).
type wrScratch struct {
	wrs  []verbs.SendWR
	sges []verbs.SGE
}

// init sizes s for posts of up to depth work requests.
func (s *wrScratch) init(depth int) {
	s.wrs = make([]verbs.SendWR, depth)
	s.sges = make([]verbs.SGE, depth)
}

// init allocates a ring of depth entries.
func (r *wrRing) init(depth int) {
	r.depth = uint64(depth)
	r.slots = make([]wrSlot, depth)
	r.stageFree = make([]uint64, (depth+63)/64)
	r.freeAllStages()
}

// freeAllStages marks every staging slot free.
func (r *wrRing) freeAllStages() {
	for w := range r.stageFree {
		r.stageFree[w] = ^uint64(0)
	}
	if k := r.depth % 64; k != 0 {
		r.stageFree[len(r.stageFree)-1] = 1<<k - 1
	}
}

// takeStage gives the entry at array position k the lowest free staging
// slot and returns it. A free one always exists while the ring is
// consistent (every SEND in the ring holds one slot and the ring has depth
// entries); ok is false otherwise.
func (r *wrRing) takeStage(k uint64) (s uint32, ok bool) {
	for w, f := range r.stageFree {
		if f != 0 {
			b := bits.TrailingZeros64(f)
			r.stageFree[w] = f &^ (1 << b)
			s = uint32(w*64 + b)
			r.slots[k].stage = s
			return s, true
		}
	}
	return 0, false
}

// freeStage returns staging slot s.
func (r *wrRing) freeStage(s uint32) { r.stageFree[s/64] |= 1 << (s % 64) }

func (r *wrRing) full() bool      { return r.tail-r.head >= r.depth }
func (r *wrRing) occupancy() int  { return int(r.tail - r.head) }
func (r *wrRing) inFlight() int   { return int(r.pend - r.head) }
func (r *wrRing) pendingWRs() int { return int(r.tail - r.pend) }

// push takes the free entry at the tail (the caller checked !full) and
// returns its position in the arrays; its absolute index is tail-1.
func (r *wrRing) push() uint64 {
	r.tail++
	return (r.tail - 1) % r.depth
}

// lastPos is the array position of the newest entry (tail-1).
func (r *wrRing) lastPos() uint64 { return (r.tail - 1) % r.depth }

// chain builds the pending WRs in s as one linked list for a single
// PostSend, signalling only the last (selective signalling), and moves
// them to in flight. SEND lengths are fixed here, since records may have
// extended them. It returns the first WR and the count; n is 0 if none is
// pending. The list is valid until the next chain into s.
func (r *wrRing) chain(s *wrScratch) (first *verbs.SendWR, n int) {
	if r.tail == r.pend {
		return nil, 0
	}
	n = int(r.tail - r.pend)
	if len(s.wrs) < n {
		s.init(int(r.depth))
	}
	for j := 0; j < n; j++ {
		i := r.pend + uint64(j)
		sl := &r.slots[i%r.depth]
		s.sges[j] = sl.sge
		if sl.kind == slotSend {
			s.sges[j].Length = uint32(sl.bytes)
		}
		wr := &s.wrs[j]
		*wr = verbs.SendWR{ID: i, SGL: s.sges[j : j+1 : j+1], Opcode: sl.op, Imm: sl.imm,
			RemoteAddr: sl.raddr, RKey: sl.rkey, MsgOffset: sl.msgOff}
		if j+1 < n {
			wr.Next = &s.wrs[j+1]
		} else {
			wr.Flags = verbs.FlagSignaled
		}
	}
	r.pend = r.tail
	return &s.wrs[0], n
}

// checkCompletion verifies that a completion names an in-flight WR.
func (r *wrRing) checkCompletion(idx uint64) error {
	if idx < r.head || idx >= r.pend {
		return fmt.Errorf("byteexpress: completion for WR %d outside in-flight [%d,%d)", idx, r.head, r.pend)
	}
	return nil
}

// popHead frees the oldest in-flight entry and returns its bookkeeping as
// it was (the stored slot is cleared). The caller checked head < pend.
func (r *wrRing) popHead() wrSlot {
	sl := &r.slots[r.head%r.depth]
	out := *sl
	if out.kind == slotSend {
		r.freeStage(out.stage)
	}
	*sl = wrSlot{}
	r.head++
	return out
}

// lastWrite finds the most recent uncompleted WRITE whose source lies in
// [base, end): the WR whose completion releases that buffer.
func (r *wrRing) lastWrite(base, end uintptr) *wrSlot {
	for i := r.tail; i > r.head; i-- {
		k := (i - 1) % r.depth
		if r.slots[k].kind == slotWrite {
			if a := r.slots[k].sge.Addr; a >= base && a < end {
				return &r.slots[k]
			}
		}
	}
	return nil
}

// bytes sums the slots' bytes in flight and pending (for invariant checks).
func (r *wrRing) bytes() (inflight, pending int) {
	for i := r.head; i < r.tail; i++ {
		b := r.slots[i%r.depth].bytes
		if i < r.pend {
			inflight += b
		} else {
			pending += b
		}
	}
	return inflight, pending
}

// check verifies head <= pend <= tail and occupancy <= depth.
func (r *wrRing) check() error {
	if r.head > r.pend || r.pend > r.tail || r.tail-r.head > r.depth {
		return fmt.Errorf("ring head %d pend %d tail %d depth %d", r.head, r.pend, r.tail, r.depth)
	}
	// Each SEND in the ring holds its own staging slot; the rest are free.
	var one [1]uint64 // no allocation for SQDepth <= 64
	held := one[:]
	if len(r.stageFree) > 1 {
		held = make([]uint64, len(r.stageFree))
	}
	sends := 0
	for i := r.head; i < r.tail; i++ {
		sl := &r.slots[i%r.depth]
		if sl.kind != slotSend {
			continue
		}
		sends++
		w, b := sl.stage/64, sl.stage%64
		if uint64(sl.stage) >= r.depth || held[w]&(1<<b) != 0 || r.stageFree[w]&(1<<b) != 0 {
			return fmt.Errorf("ring entry %d: staging slot %d out of range, shared or marked free", i, sl.stage)
		}
		held[w] |= 1 << b
	}
	free := 0
	for _, f := range r.stageFree {
		free += bits.OnesCount64(f)
	}
	if free+sends != int(r.depth) {
		return fmt.Errorf("ring: %d staging slots free and %d SENDs in the ring, want %d in all", free, sends, r.depth)
	}
	return nil
}

// reset empties the ring (engine teardown, after the messages were taken).
func (r *wrRing) reset() {
	r.head, r.pend, r.tail = 0, 0, 0
	clear(r.slots)
	r.freeAllStages()
}
