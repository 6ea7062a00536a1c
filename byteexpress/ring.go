package byteexpress

import (
	"fmt"
	"math/bits"

	"github.com/besim/besim/verbs"
)

// wrRing is an engine's work-request ring of SQDepth entries (paper §5.4.1,
// Figure 7). Indices are absolute and only grow: [head, pend) are in
// flight (posted, not completed), [pend, tail) pending (prepared, not yet
// posted), the rest free. The WR at index i lives in wrs[i%depth]; its
// scatter entry and bookkeeping in sges and slots at the same position.
// The ring counts entries; bytes are the send window's business.
type wrRing struct {
	depth uint64
	wrs   []verbs.SendWR
	sges  []verbs.SGE
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

// wrSlot is the bookkeeping of one ring entry.
type wrSlot struct {
	kind  slotKind
	stage uint32 // a SEND's staging slot
	bytes int
	msg   *outMsg // completion of this WR finishes msg (its last fragment)
}

// init allocates a ring of depth entries, each WR pointing at its own SGE.
func (r *wrRing) init(depth int) {
	r.depth = uint64(depth)
	r.wrs = make([]verbs.SendWR, depth)
	r.sges = make([]verbs.SGE, depth)
	r.slots = make([]wrSlot, depth)
	for i := range r.wrs {
		r.wrs[i].SGL = r.sges[i : i+1 : i+1]
	}
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
// returns its absolute index and its position in the arrays.
func (r *wrRing) push() (idx, i uint64) {
	idx = r.tail
	r.tail++
	return idx, idx % r.depth
}

// lastPos is the array position of the newest entry (tail-1).
func (r *wrRing) lastPos() uint64 { return (r.tail - 1) % r.depth }

// chain links the pending WRs into one list for a single PostSend,
// signalling only the last (selective signalling), and moves them to in
// flight. SEND lengths are fixed here, since records may have extended
// them. It returns the first WR and the count; n is 0 if none is pending.
func (r *wrRing) chain() (first *verbs.SendWR, n int) {
	if r.tail == r.pend {
		return nil, 0
	}
	for i := r.pend; i < r.tail; i++ {
		k := i % r.depth
		wr := &r.wrs[k]
		if r.slots[k].kind == slotSend {
			r.sges[k].Length = uint32(r.slots[k].bytes)
		}
		wr.Flags = 0
		if i+1 < r.tail {
			wr.Next = &r.wrs[(i+1)%r.depth]
		} else {
			wr.Next = nil
			wr.Flags = verbs.FlagSignaled
		}
	}
	n = int(r.tail - r.pend)
	first = &r.wrs[r.pend%r.depth]
	r.pend = r.tail
	return first, n
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
			if a := r.sges[k].Addr; a >= base && a < end {
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
