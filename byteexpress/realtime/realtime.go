// Package realtime drives ByteExpress I/O threads in wall-clock time, for
// real hardware (berun, verbs/ibv): each I/O thread's Poll runs in a loop
// on its own goroutine locked to an OS thread (runtime.LockOSThread), the
// arrangement the paper's thread domains assume (§6.2.1: one thread owns an
// engine, its CQ and its TD). It is the "node.go" of the etcd-raft split:
// the core stays a driven, single-owner state machine and this package owns
// goroutines, clocks and the one piece of cross-goroutine state: each I/O
// thread's mailbox (Attach), through which API calls from application,
// connector and server goroutines reach the polling goroutine. It imports
// only the core and the standard library.
package realtime

import (
	"context"
	"errors"
	"runtime"
	"sync"
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

// mailbox is an I/O thread's cross-goroutine command queue.
type mailbox struct {
	mu     sync.Mutex
	q      []byteexpress.Command
	closed bool
	wake   chan struct{} // buffered 1: a Post since the loop last looked
}

func (m *mailbox) Post(c byteexpress.Command) bool {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return false
	}
	m.q = append(m.q, c)
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
	return true
}

func (m *mailbox) Take(buf []byteexpress.Command) []byteexpress.Command {
	m.mu.Lock()
	buf = append(buf, m.q...)
	clear(m.q)
	m.q = m.q[:0]
	m.mu.Unlock()
	return buf
}

func (m *mailbox) Pending() bool {
	m.mu.Lock()
	p := len(m.q) > 0
	m.mu.Unlock()
	return p
}

func (m *mailbox) Close() []byteexpress.Command {
	m.mu.Lock()
	m.closed = true
	q := m.q
	m.q = nil
	m.mu.Unlock()
	return q
}

// Attach gives every I/O thread of ep a mailbox, so that the Endpoint and
// Socket API may be called from any goroutine, and Run can drive the
// threads. Call it once, right after NewEndpoint and before ep is used from
// a second goroutine.
func Attach(ep *byteexpress.Endpoint) {
	for _, th := range ep.Threads() {
		if _, ok := th.Mailbox().(*mailbox); !ok {
			th.SetMailbox(&mailbox{wake: make(chan struct{}, 1)})
		}
	}
}

// ErrNotAttached: Run was given a thread of an endpoint not passed to Attach.
var ErrNotAttached = errors.New("realtime: I/O thread has no mailbox (call realtime.Attach(ep) after NewEndpoint)")

// Run polls th until ctx is done, calling handle (on the polling goroutine)
// for every event, and returns ctx.Err(). Commands queued through the
// Endpoint/Socket API wake a napping loop at once. th's endpoint must have
// been attached (Attach).
func Run(ctx context.Context, th *byteexpress.IOThread, opt Options, handle func(byteexpress.Event)) error {
	mb, ok := th.Mailbox().(*mailbox)
	if !ok {
		return ErrNotAttached
	}
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
	wake := mb.wake
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
