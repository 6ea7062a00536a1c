// Package realtime drives ByteExpress I/O threads in wall-clock time, for
// real hardware (berun, verbs/ibv): each I/O thread's Poll runs in a loop
// on its own goroutine locked to an OS thread (runtime.LockOSThread), the
// arrangement the paper's thread domains assume (§6.2.1: one thread owns an
// engine, its CQ and its TD). It is the "node.go" of the etcd-raft split:
// the core stays a driven state machine and this file owns goroutines and
// clocks. It imports only the core and the standard library.
package realtime

import (
	"context"
	"runtime"
	"time"

	"github.com/besim/besim/byteexpress"
)

// Clock is the process's monotonic clock as a byteexpress.Clock: time since
// the Clock was created (time.Since uses the monotonic reading).
type Clock struct{ start time.Time }

// NewClock starts a clock at zero.
func NewClock() *Clock { return &Clock{start: time.Now()} }

// Now implements byteexpress.Clock.
func (c *Clock) Now() time.Duration { return time.Since(c.start) }

var _ byteexpress.Clock = (*Clock)(nil)

// Options tune the polling loop.
type Options struct {
	// Clock is the time source (default: a new Clock).
	Clock byteexpress.Clock
	// IdleSpins is how many consecutive Polls that did nothing are made
	// before the loop naps (default 1000). Completions do not wake a
	// sleeping loop (there is no completion channel in the port), so the
	// nap bounds the added latency of an idle thread.
	IdleSpins int
	// IdleSleep is the nap (default 20 us; negative: never nap, pure busy
	// polling as a production I/O thread does).
	IdleSleep time.Duration
}

// Run polls th until ctx is done, calling handle (on the polling goroutine)
// for every event, and returns ctx.Err(). Commands queued through the
// Endpoint/Socket API wake a napping loop at once.
func Run(ctx context.Context, th *byteexpress.IOThread, opt Options, handle func(byteexpress.Event)) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if opt.Clock == nil {
		opt.Clock = NewClock()
	}
	if opt.IdleSpins == 0 {
		opt.IdleSpins = 1000
	}
	if opt.IdleSleep == 0 {
		opt.IdleSleep = 20 * time.Microsecond
	}
	wake := make(chan struct{}, 1)
	th.SetWakeup(func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	defer th.SetWakeup(nil)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	idle := 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		now := opt.Clock.Now()
		r := th.Poll(now)
		for _, ev := range r.Events {
			handle(ev)
		}
		if busy(&r.Ops) || r.Next <= now {
			idle = 0
			continue
		}
		if idle++; idle < opt.IdleSpins || opt.IdleSleep < 0 {
			continue
		}
		nap := min(opt.IdleSleep, r.Next-now)
		timer.Reset(nap)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-wake:
			timer.Stop()
		case <-timer.C:
		}
	}
}

func busy(o *byteexpress.Ops) bool {
	return o.CQEs > 0 || o.Commands > 0 || o.SendWRs > 0 || o.Timers > 0
}
