package simhost

import (
	"fmt"
	"time"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/rnic"
	"github.com/besim/besim/sim"
)

// Event tags of a Thread.
const (
	tagPoll = iota // the thread's poll timer (work is waiting)
	tagCQ          // the CQ notify hook: a CQE landed on the drained CQ
	tagDue         // the core's own deadline (Ready.Next: keepalive, connect timeout)
)

// Thread is one simulated I/O thread: a sim component that runs its
// byteexpress.IOThread's Poll when a completion lands on its drained CQ,
// when the API queues work for it (the wakeup hook), and at Ready.Next,
// never in a busy loop. Each step is charged to the thread's rnic.CPU:
// the verbs calls by the RNIC's provider model, the core's own work by
// CPUCost from Ready.Ops. A step cannot start before the CPU is free, so
// CPU time is a simulated resource and its utilisation a metric.
type Thread struct {
	h     *Host
	idx   int
	io    *byteexpress.IOThread
	cq    *rnic.CQ
	cpu   *rnic.CPU
	timer sim.Timer // poll soon: a completion, a command, unfinished work
	// due is the core's next deadline, kept apart from timer: re-arming it
	// later each step (keepalive instants move forward) leaves its queued
	// kernel entry in place instead of posting a new far-future one.
	due sim.Timer

	// Per-step accounting of costs charged before the step's doorbells.
	pre      sim.Time
	preStep  bool
	preCQEs  uint64
	baseCQEs uint64
	copied   int64 // small-message bytes copied so far in this step (sender side)
	preCopy  int64

	polls  uint64
	wakes  uint64
	notifs uint64
}

// Index is the thread's index on its host.
func (t *Thread) Index() int { return t.idx }

// IO is the core's I/O thread.
func (t *Thread) IO() *byteexpress.IOThread { return t.io }

// CPU is the simulated core the thread runs on.
func (t *Thread) CPU() *rnic.CPU { return t.cpu }

// Polls is the number of steps run so far.
func (t *Thread) Polls() uint64 { return t.polls }

// OnEvent implements sim.Handler.
func (t *Thread) OnEvent(now sim.Time, tag uint64) {
	if t.h.crashed || t.h.closed {
		return
	}
	switch tag {
	case tagCQ:
		t.notifs++
		t.arm(now)
	case tagPoll, tagDue:
		if c := t.cpu.Now(); c > now {
			t.arm(c) // still busy with earlier work
			return
		}
		t.step()
	}
}

// wakeup is the IOThread's wakeup hook: the API queued a command.
func (t *Thread) wakeup() {
	if t.h.crashed || t.h.closed {
		return
	}
	t.wakes++
	t.arm(t.h.k.Now())
}

// arm makes the thread step at instant at, or as soon after as its CPU is
// free, unless it is already due earlier.
func (t *Thread) arm(at sim.Time) {
	if c := t.cpu.Now(); at < c {
		at = c
	}
	if !t.timer.Armed() || at < t.timer.When() {
		t.timer.Set(at)
	}
}

// step runs one Poll at the CPU's current time (kernel time, or later
// while the CPU is still busy). The core's clock is virtual nanoseconds:
// sim.Time / 1000, truncated.
func (t *Thread) step() {
	h := t.h
	h.ctx.SetCPU(t.cpu)
	h.cur = t
	start := t.cpu.Now()
	t.pre, t.preStep, t.preCQEs, t.copied, t.preCopy = 0, false, 0, 0, 0
	t.baseCQEs = t.cpu.Stats().CQEs
	r := t.io.Poll(CoreTime(start))
	if d := h.cost.Of(&r.Ops) - t.pre; d > 0 {
		t.cpu.Charge(d)
	}
	t.polls++
	if h.c.cfg.CheckInvariants && h.c.err == nil {
		if err := t.io.CheckInvariants(); err != nil {
			h.c.err = fmt.Errorf("simhost: t=%v %s thread %d: %w", h.k.Now(), h.name, t.idx, err)
		}
	}
	for i := range r.Events {
		h.app.OnEvent(h, r.Events[i])
	}
	h.cur = nil
	h.ctx.SetCPU(nil)
	if h.crashed || h.closed {
		return
	}
	switch at := SimTime(r.Next); {
	case at == sim.Never:
		t.due.Stop()
	case at <= t.cpu.Now():
		t.due.Stop()
		t.arm(at)
	case !t.due.Armed() || t.due.When() != at:
		t.due.Set(at)
	}
}

// precharge charges, just before a doorbell of n WRs, the step cost and
// the completions, WR preparation and payload copies done so far in the
// step; step() charges the rest of CPUCost.Of(Ops) afterwards.
func (t *Thread) precharge(n int) {
	c := &t.h.cost
	var d sim.Time
	if !t.preStep {
		t.preStep = true
		d += c.Step
	}
	cq := t.cpu.Stats().CQEs - t.baseCQEs
	d += sim.Time(cq-t.preCQEs) * c.CQE
	t.preCQEs = cq
	d += sim.Time(n) * c.SendWR
	if t.copied > t.preCopy {
		d += c.copyTime(t.copied) - c.copyTime(t.preCopy)
		t.preCopy = t.copied
	}
	if d > 0 {
		t.cpu.Charge(d)
		t.pre += d
	}
}

// CoreTime maps virtual time to the core's clock: nanoseconds since the
// start of the simulation, sim.Time / 1000 truncated (the core needs no
// finer resolution; instants within one nanosecond run in the same step).
func CoreTime(t sim.Time) time.Duration { return time.Duration(t / sim.Nanosecond) }

// SimTime maps a core time or any time.Duration to sim.Time; the core's
// byteexpress.Never (and anything beyond the sim.Time range) is sim.Never.
func SimTime(d time.Duration) sim.Time {
	if d >= time.Duration(sim.Never/sim.Nanosecond) {
		return sim.Never
	}
	return sim.Time(d) * sim.Nanosecond
}
