package rnic

import "github.com/besim/besim/sim"

// CPU is one simulated host core (an I/O thread) that calls verbs. Provider
// calls made while a CPU is current on a Context (Context.SetCPU) charge
// their modelled cost to it: the CPU's local clock advances by the cost, so
// a doorbell rung after a long post reaches the NIC later, and spinning on a
// contended doorbell lock is visible as Spin time.
//
// The simulator that drives an I/O thread uses it like this: before running
// the thread's step at kernel time now, SetCPU(c); the calls inside the step
// advance c.Now(); the thread's next step is due no earlier than c.Now().
// Idle gaps are not busy time: the local clock never runs behind the kernel
// clock, it jumps forward to it.
type CPU struct {
	name string
	k    *sim.Kernel
	now  sim.Time
	st   CPUStats
}

// CPUStats accumulates modelled CPU time.
type CPUStats struct {
	Busy       sim.Time // all time charged
	Spin       sim.Time // of which spent waiting for a contended doorbell lock
	Lock       sim.Time // of which spent in doorbell-lock acquisition (spin, line transfers)
	Posts      uint64   // post_send calls
	WQEs       uint64   // send WQEs posted
	RecvPosts  uint64   // post_recv calls
	Polls      uint64   // poll_cq calls
	CQEs       uint64   // CQEs polled
	LockWaits  uint64   // doorbell lock acquisitions that had to wait
	LockMoves  uint64   // acquisitions whose lock was last held by another CPU
	RegMRs     uint64   // memory registrations
	RegMRBytes int64    // bytes registered
}

// NewCPU returns a CPU whose local clock starts at the kernel's now.
func NewCPU(k *sim.Kernel, name string) *CPU { return &CPU{name: name, k: k, now: k.Now()} }

// Name labels the CPU.
func (c *CPU) Name() string { return c.name }

// Now is the CPU's local clock: the kernel's now, or later while the CPU is
// still busy with work charged at or after that instant.
func (c *CPU) Now() sim.Time {
	if kn := c.k.Now(); c.now < kn {
		c.now = kn
	}
	return c.now
}

// Charge adds d of modelled work (for example application processing) and
// returns the new local clock.
func (c *CPU) Charge(d sim.Time) sim.Time {
	c.Now()
	c.now += d
	c.st.Busy += d
	return c.now
}

// Stats returns the accumulated counters.
func (c *CPU) Stats() CPUStats { return c.st }

// bfreg is one doorbell register (an mlx5 "bfreg"/UAR slot). Shared ones are
// guarded by a spin lock in the provider; the lock is modelled by the time it
// is next free and the CPU that last held it (whose cache holds its line).
type bfreg struct {
	shared bool
	freeAt sim.Time
	owner  *CPU
	users  int
	// Grant instants of acquisitions not yet reached (FIFO), to count the
	// CPUs spinning at a given moment.
	grants [16]sim.Time
	gh, gn int
}

// spinners is the number of CPUs whose acquisition is still pending at t.
func (b *bfreg) spinners(t sim.Time) int {
	for b.gn > 0 && b.grants[b.gh] <= t {
		b.gh = (b.gh + 1) % len(b.grants)
		b.gn--
	}
	return b.gn
}

func (b *bfreg) grant(at sim.Time) {
	if b.gn == len(b.grants) {
		b.gh = (b.gh + 1) % len(b.grants)
		b.gn--
	}
	b.grants[(b.gh+b.gn)%len(b.grants)] = at
	b.gn++
}

// ringDoorbell charges cpu for ringing bf after building nwqe WQEs in one
// post call, and returns when the doorbell reaches the NIC.
func (c *Context) ringDoorbell(cpu *CPU, bf *bfreg, nwqe int, qpLock bool) sim.Time {
	cfg := &c.nic.cfg
	t := cpu.Now()
	start := t
	t += cfg.PostSendCall + sim.Time(nwqe)*cfg.PostSendPerWQE
	if qpLock {
		t += cfg.LockAcquire // the QP's own SQ lock: one thread per QP, never contended
	}
	if nwqe > 0 {
		if bf.shared {
			// A test-and-set spin lock: a waiter spins until the holder
			// releases; every CPU spinning at the handoff fetches the
			// lock's cache line, so the handoff (and the new holder's
			// first write) costs one line transfer per contender.
			waiters := bf.spinners(t)
			t0 := t
			if bf.freeAt > t {
				cpu.st.Spin += bf.freeAt - t
				cpu.st.LockWaits++
				t = bf.freeAt
			}
			bf.grant(t)
			t += cfg.LockAcquire
			if bf.owner != nil && bf.owner != cpu {
				t += cfg.LockTransfer * sim.Time(1+waiters)
				cpu.st.LockMoves++
			}
			bf.owner = cpu
			cpu.st.Lock += t - t0
			t += cfg.DoorbellCost
			bf.freeAt = t
		} else {
			t += cfg.DoorbellCost
		}
	}
	cpu.st.Busy += t - start
	cpu.now = t
	cpu.st.Posts++
	cpu.st.WQEs += uint64(nwqe)
	return t + cfg.MMIOLatency
}
