package sim

import (
	"fmt"
	"math/bits"
	"slices"
)

// Handler receives events. Components implement it once and tell their event
// kinds apart by tag, so scheduling never needs a closure.
type Handler interface {
	OnEvent(now Time, tag uint64)
}

// HandlerID names a handler registered with a kernel. Queue entries carry
// the ID rather than the interface, so they hold no pointers: the garbage
// collector never scans the queue and moving entries needs no write barriers.
type HandlerID uint32

type entry struct {
	at  Time
	tag uint64
	hid HandlerID
}

// slot is one bucket of the radix heap: its entries in insertion order and,
// while it has any, the earliest instant among them (kept on filing, so
// that a slot coming due needs no scan), on the cache line of its header.
type slot struct {
	es  []entry
	min Time
}

// Kernel is a single-threaded event loop over virtual time.
//
// The queue is a radix heap with 6-bit digits (a hierarchical timing wheel
// without a fixed horizon): virtual time never goes backwards, so an entry is
// filed under the highest digit in which its instant differs from last, in
// the slot of that digit's value. Push is O(1); an entry cascades down a few
// levels in its life, each move a sequential append, which is what beats a
// binary heap's O(log n) cache-missing sifts at 100k pending. A sparse
// slot (at most runMax entries) of level runLevel or below is not cascaded
// but sorted straight into cur, which then spans several instants (at most
// a level-2 slot's 4 ns, so that the posts falling inside the run, each
// inserted into cur in order, stay few): most slots that come due hold a
// few events (in the training scenario events are about 1 ns apart), so
// an entry is filed about 1.5 times in its life rather than twice. (7-bit
// digits, 16 ns runs, cut the smaller training run's instructions by
// another 5% but raised the full-size one's by 10%.)
//
// Ties leave in insertion order without a sequence number: appends keep every
// slot in insertion order, a cascade moves a slot's entries in that order, and
// two entries for one instant can never sit in different slots (the slot of
// the earlier one is cascaded before last can move past the later one's
// filing point), so a stable placement by instant is FIFO.
// TestKernelMatchesReference, TestKernelRunUntilMatchesReference and
// TestKernelBurstsMatchReference check this against a stable sort.
type Kernel struct {
	now   Time
	last  Time    // every entry in a slot is > last; cur holds those <= last
	cur   []entry // sorted by instant (stable) from curAt on
	curAt int     // read position in cur
	slots [levels][nslots]slot
	bits  [levels][nwords]uint64 // non-empty slots per level
	used  uint64                 // non-empty levels
	// spare holds the arrays of emptied upper-level slots, handed to the
	// next slot that fills: the arrays in use track the slots non-empty at
	// once rather than every slot's high-water mark.
	spare [][]entry

	handlers []Handler
	ids      map[Handler]HandlerID

	n         int
	events    uint64
	published uint64 // events at the last publish (progress.go)
	stopped   bool
}

const (
	digit  = 6 // bits per radix digit: 64 slots, one bitmap word per level
	levels = (64 + digit - 1) / digit
	nslots = 1 << digit
	nwords = (nslots + 63) / 64
)

// NewKernel returns a kernel at time zero with nothing pending.
func NewKernel() *Kernel { return &Kernel{} }

// Now is the current virtual time.
func (k *Kernel) Now() Time { return k.now }

// Pending is the number of queued entries, including those of stopped timers
// that have not yet reached their instant.
func (k *Kernel) Pending() int { return k.n }

// Events is the number of events dispatched so far.
func (k *Kernel) Events() uint64 { return k.events }

// Register makes h schedulable by ID. Handlers are long-lived components
// (ports, links, QPs, timers): the kernel keeps them for its lifetime.
// Registering the same handler twice returns the same ID.
func (k *Kernel) Register(h Handler) HandlerID {
	if id, ok := k.ids[h]; ok {
		return id
	}
	if k.ids == nil {
		k.ids = make(map[Handler]HandlerID)
	}
	id := k.RegisterNew(h)
	k.ids[h] = id
	return id
}

// RegisterNew makes h schedulable by ID like Register, but keeps no lookup
// entry for it (Register's map costs about 50 bytes a handler): for a
// component that registers itself once, when it is created (ports, links,
// timers). Register or At on h afterwards returns another ID for the same
// handler, which dispatches the same way.
func (k *Kernel) RegisterNew(h Handler) HandlerID {
	id := HandlerID(len(k.handlers))
	k.handlers = append(k.handlers, h)
	return id
}

// Post schedules handler id's OnEvent(at, tag): the fast path for hot
// components, which register once. Scheduling in the past is a bug in the
// caller and panics rather than silently reordering time.
func (k *Kernel) Post(at Time, id HandlerID, tag uint64) {
	k.file(entry{at: at, tag: tag, hid: id}) // panics if at < now
	k.n++
}

// past panics for a Post before now (file checks, so that Post inlines).
func (k *Kernel) past(at Time) {
	panic(fmt.Sprintf("sim: event scheduled at %v, before now %v", at, k.now))
}

// At schedules h.OnEvent(at, tag), registering h on first use (a map lookup
// per call; hot paths use Register and Post).
func (k *Kernel) At(at Time, h Handler, tag uint64) { k.Post(at, k.Register(h), tag) }

// After schedules h.OnEvent at now+d.
func (k *Kernel) After(d Time, h Handler, tag uint64) { k.At(k.now+d, h, tag) }

// PostAfter schedules handler id d from now.
func (k *Kernel) PostAfter(d Time, id HandlerID, tag uint64) { k.Post(k.now+d, id, tag) }

// file places e relative to last. Its common case (e after last, its slot
// with room) calls nothing, so its arguments need no spilling; the others
// go out of line.
func (k *Kernel) file(e entry) {
	if e.at <= k.last || e.at < k.now {
		k.fileNear(e)
		return
	}
	lv := uint(levelOf[bits.Len64(uint64(e.at^k.last))])
	s := uint(uint64(e.at)>>(lv*digit&63)) & (nslots - 1)
	sp := &k.slots[lv][s]
	n := len(sp.es)
	if n == cap(sp.es) {
		k.grow(sp)
	}
	if n == 0 {
		sp.min = e.at
		k.bits[lv][s>>6] |= 1 << (s & 63)
		k.used |= 1 << lv
	} else if e.at < sp.min {
		sp.min = e.at
	}
	sp.es = sp.es[:n+1]
	sp.es[n] = e
}

// levelOf[bits.Len64(x)] is the level of an entry whose instant differs
// from last in x (x != 0): the digit holding x's highest set bit.
var levelOf = func() (t [65]uint8) {
	for n := 1; n <= 64; n++ {
		t[n] = uint8((n - 1) / digit)
	}
	return t
}()

// fileNear files e at or before last, into cur, or panics for a Post
// before now (a cascade only moves entries after last).
func (k *Kernel) fileNear(e entry) {
	if e.at < k.now {
		k.past(e.at)
	}
	k.insertCur(e)
}

// grow makes room for one more entry in sp, whose array is full (out of
// line, so that file's common case calls nothing): an empty slot takes a
// spare array if there is one, else the array grows as append would.
func (k *Kernel) grow(sp *slot) {
	if len(sp.es) == 0 && len(k.spare) > 0 {
		sp.es = k.spare[len(k.spare)-1] // empty, with room
		k.spare = k.spare[:len(k.spare)-1]
		return
	}
	sp.es = slices.Grow(sp.es, 1)
}

// runMax bounds the slots dispatched as one sorted run, and runLevel their
// level.
const (
	runMax   = 32
	runLevel = 2
)

// insertCur adds e to cur, which stays sorted by instant from curAt on. e
// is newer than everything queued (a Post) or is moved in insertion order (a
// cascade), so it goes after every entry at or before its instant.
func (k *Kernel) insertCur(e entry) {
	cur := append(k.cur, e)
	k.cur = cur
	j := len(cur) - 1
	for lo := k.curAt; j > lo && cur[j-1].at > e.at; j-- {
		cur[j] = cur[j-1]
	}
	cur[j] = e
}

// lowest returns the lowest non-empty (level, slot).
func (k *Kernel) lowest() (uint, uint) {
	lv := uint(bits.TrailingZeros64(k.used))
	b := &k.bits[lv]
	for w := 0; w < nwords; w++ {
		if b[w] != 0 {
			return lv, uint(w*64 + bits.TrailingZeros64(b[w]))
		}
	}
	panic("sim: level marked used with no slot")
}

func (k *Kernel) clear(lv uint, s uint) {
	sp := &k.slots[lv][s]
	if lv > 0 && cap(sp.es) > 0 {
		k.spare = append(k.spare, sp.es[:0])
		sp.es = nil
	} else {
		sp.es = sp.es[:0]
	}
	k.bits[lv][s>>6] &^= 1 << (s & 63)
	for _, w := range k.bits[lv] {
		if w != 0 {
			return
		}
	}
	k.used &^= 1 << lv
}

// advance refills cur with the earliest instant if it is <= until.
func (k *Kernel) advance(until Time) bool {
	for {
		lv, s := k.lowest()
		sl := k.slots[lv][s].es
		shift := digit * lv
		// Smallest instant the slot can hold: last's higher digits, then s.
		hi := uint64(k.last) >> (shift + digit) << (shift + digit)
		if shift+digit >= 64 {
			hi = 0
		}
		base := Time(hi | uint64(s)<<shift)
		if base > until {
			return false
		}
		m := k.slots[lv][s].min
		if m > until {
			return false
		}
		if lv == 0 || len(sl) == 1 {
			// The slot holds exactly one instant (level 0), or one entry,
			// which the cascade below would file straight into cur: it
			// becomes cur, and cur's empty array becomes the slot's, with
			// no copy.
			k.last = m
			k.slots[lv][s].es = k.cur[:0]
			k.cur = sl
			k.clear(lv, s)
			return true
		}
		if lv <= runLevel && len(sl) <= runMax {
			// A sparse slot: sort its few entries into cur rather than
			// cascading them to lower levels. last becomes its latest
			// instant; later posts up to it are inserted in order. The
			// slot is the lowest non-empty one, so every other entry is
			// later than its whole span and stays filed as it was.
			// cur is empty here: the slot's array becomes cur, sorted in
			// place (a stable insertion sort of entries in insertion
			// order), and cur's empty array takes the slot's place.
			for i := 1; i < len(sl); i++ {
				e := sl[i]
				j := i
				for j > 0 && sl[j-1].at > e.at {
					sl[j] = sl[j-1]
					j--
				}
				sl[j] = e
			}
			k.slots[lv][s].es = k.cur[:0]
			k.cur = sl
			k.last = sl[len(sl)-1].at
			k.clear(lv, s)
			return true
		}
		k.last = m
		for _, e := range sl { // all land on lower levels or in cur
			k.file(e)
		}
		k.clear(lv, s)
		if len(k.cur) > 0 {
			return true
		}
	}
}

// next returns the earliest entry if its time is <= until.
func (k *Kernel) next(until Time) (entry, bool) {
	if k.curAt == len(k.cur) {
		k.cur = k.cur[:0]
		k.curAt = 0
		if k.n == 0 || !k.advance(until) {
			return entry{}, false
		}
	}
	e := k.cur[k.curAt]
	if e.at > until {
		return entry{}, false
	}
	k.curAt++
	k.n--
	return e, true
}

// Step dispatches the earliest event, if any, and reports whether it did.
func (k *Kernel) Step() bool { return k.step(Never) }

func (k *Kernel) step(until Time) bool {
	e, ok := k.next(until)
	if !ok {
		return false
	}
	k.now = e.at
	k.events++
	if k.events&(progressEvery-1) == 0 {
		k.publish()
	}
	k.handlers[e.hid].OnEvent(e.at, e.tag)
	return true
}

// RunUntil dispatches events up to and including instant t, then leaves the
// clock at t (or earlier if Stop was called).
func (k *Kernel) RunUntil(t Time) {
	k.stopped = false
	// step's body, inlined by hand: this loop runs every event.
	for !k.stopped {
		if k.curAt == len(k.cur) {
			k.cur = k.cur[:0]
			k.curAt = 0
			if k.n == 0 || !k.advance(t) {
				break
			}
		}
		e := k.cur[k.curAt]
		if e.at > t {
			break
		}
		k.curAt++
		k.n--
		k.now = e.at
		k.events++
		if k.events&(progressEvery-1) == 0 {
			k.publish()
		}
		k.handlers[e.hid].OnEvent(e.at, e.tag)
	}
	if !k.stopped && t != Never && t > k.now {
		k.now = t
	}
}

// Run dispatches events until none is left or Stop is called.
func (k *Kernel) Run() { k.RunUntil(Never) }

// Stop makes the running RunUntil return after the current event.
func (k *Kernel) Stop() { k.stopped = true }

// Timer is a cancellable, re-armable timer owned by a component. Re-arming it
// later than its queued instant costs nothing: the queued entry re-queues
// itself at the new deadline when it comes due, so a retransmission timer
// pushed back on every ACK adds no events.
type Timer struct {
	k        *Kernel
	h        Handler
	id       HandlerID
	tag      uint64
	when     Time
	queuedAt Time
	gen      uint64
	armed    bool
	queued   bool
}

// Init binds a timer (usually a field of its component) to a kernel and the
// handler it fires, once (the timer registers itself with RegisterNew).
func (t *Timer) Init(k *Kernel, h Handler, tag uint64) {
	t.k, t.h, t.tag = k, h, tag
	t.id = k.RegisterNew(t)
}

// Set arms the timer to fire at instant at, replacing any earlier setting.
func (t *Timer) Set(at Time) {
	t.armed = true
	t.when = at
	if t.queued && t.queuedAt <= at {
		return
	}
	t.gen++
	t.queued = true
	t.queuedAt = at
	t.k.Post(at, t.id, t.gen)
}

// SetAfter arms the timer d from now.
func (t *Timer) SetAfter(d Time) { t.Set(t.k.now + d) }

// Stop disarms the timer.
func (t *Timer) Stop() { t.armed = false }

// Armed reports whether the timer will fire.
func (t *Timer) Armed() bool { return t.armed }

// When is the instant the timer fires at, if armed.
func (t *Timer) When() Time { return t.when }

// OnEvent implements Handler for the timer's own queue entry.
func (t *Timer) OnEvent(now Time, gen uint64) {
	if gen != t.gen {
		return // superseded by an earlier re-arm
	}
	t.queued = false
	if !t.armed {
		return
	}
	if t.when > now {
		t.gen++
		t.queued = true
		t.queuedAt = t.when
		t.k.Post(t.when, t.id, t.gen)
		return
	}
	t.armed = false
	t.h.OnEvent(now, t.tag)
}
