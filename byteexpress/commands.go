package byteexpress

import "fmt"

// The commands the Endpoint and Socket API queue for an I/O thread, the
// Mailbox that carries them across goroutines where a driver needs it, and
// their execution at the start of Poll.

type cmdKind uint8

const (
	cmdCreate cmdKind = iota + 1
	cmdCreatePassive
	cmdConnectDone
	cmdAttach
	cmdSend
	cmdSendTo
	cmdClose
)

type cmd struct {
	kind cmdKind
	e    *engine
	s    *Socket
	buf  Buffer
	n    int
	dst  RemoteBuffer
	conn *connArgs // cmdCreatePassive, cmdConnectDone
}

// connArgs are the arguments of the connection commands, out of line: they
// are queued once per engine at setup, while cmd, queued per message, is
// what every inbox slot holds (96 bytes instead of 176).
type connArgs struct {
	info  ConnInfo
	err   error
	reply func(ConnInfo, error)
}

// maxKeptInbox is the largest inbox backing (in commands) a thread keeps
// for reuse after draining it. A setup burst (a server's passive engine
// creations, one per client host) grows the inbox to hundreds of commands
// once; keeping that backing twice (inbox and spare) for the rest of the
// run cost tens of MB in the training scenario. Bursts up to this size
// reuse the same backing without allocating.
const maxKeptInbox = 128

// Command is a queued API call for an I/O thread, opaque outside the core:
// a Mailbox only stores and returns it.
type Command struct{ c cmd }

// Mailbox carries commands to an I/O thread from goroutines other than the
// one that polls it: the thread's only cross-goroutine state. The simulator
// drives everything from one goroutine and needs none; package realtime
// provides one for real hosts, so only they pay for the locking.
type Mailbox interface {
	// Post queues c (from any goroutine) and wakes the poller; false once
	// the mailbox is closed.
	Post(c Command) bool
	// Take appends the queued commands to buf, in Post order, and returns
	// it (polling goroutine only).
	Take(buf []Command) []Command
	// Pending reports whether commands are queued.
	Pending() bool
	// Close refuses further Posts and returns the commands still queued.
	Close() []Command
}

// SetMailbox routes every command for this thread through m, from
// whichever goroutine it comes. Call it before the endpoint is used from
// more than one goroutine (realtime.Attach does).
func (t *IOThread) SetMailbox(m Mailbox) { t.mb = m }

// Mailbox is the installed Mailbox, nil if none.
func (t *IOThread) Mailbox() Mailbox { return t.mb }

// push queues a command; false if the thread is closed.
func (t *IOThread) push(c cmd) bool {
	if t.mb != nil {
		return t.mb.Post(Command{c})
	}
	if t.closed {
		return false
	}
	t.inbox = append(t.inbox, c)
	if t.wake != nil {
		t.wake()
	}
	return true
}

func (t *IOThread) hasPending() bool {
	return len(t.inbox) > 0 || (t.mb != nil && t.mb.Pending())
}

func (t *IOThread) drainInbox() {
	if t.mb != nil {
		t.mbuf = t.mb.Take(t.mbuf[:0])
		for i := range t.mbuf {
			t.ops.Commands++
			t.handle(&t.mbuf[i].c)
			t.mbuf[i] = Command{}
		}
	}
	cmds := t.inbox
	t.inbox = t.spare[:0]
	for i := range cmds {
		t.ops.Commands++
		t.handle(&cmds[i])
		cmds[i] = cmd{}
	}
	if cap(cmds) <= maxKeptInbox {
		t.spare = cmds[:0]
	} else {
		t.spare = nil
	}
}

func (t *IOThread) handle(c *cmd) {
	e := c.e
	switch c.kind {
	case cmdCreate, cmdCreatePassive:
		t.createEngine(e, c)
	case cmdConnectDone:
		if e.state != engConnecting {
			return
		}
		if c.conn.err != nil {
			e.fail(fmt.Errorf("byteexpress: connect to %s: %w", e.remote, c.conn.err))
			return
		}
		if err := e.connect(c.conn.info); err != nil {
			e.fail(err)
			return
		}
		e.up()
	case cmdAttach:
		s := c.s
		switch e.state {
		case engFailed:
			s.state = sockGone
			s.dead.Store(true)
			t.emit(Event{Kind: EvSocketFailed, Socket: s, Remote: e.remote, Err: e.failErr()})
		case engUp:
			e.openSocket(s)
			e.rrUpdate(s)
			e.markDirty()
		default:
			e.waiting = append(e.waiting, s)
		}
	case cmdSend, cmdSendTo:
		s := c.s
		if s.state == sockGone || s.closing {
			t.emit(Event{Kind: EvSendFailed, Socket: s, Remote: e.remote, Buf: c.buf, Len: c.n, Err: ErrClosed})
			return
		}
		m := t.newMsg()
		m.sock, m.buf, m.n = s, c.buf, c.n
		if c.kind == cmdSendTo {
			m.prebuilt, m.dst = true, c.dst
		}
		e.enqueue(s, m)
	case cmdClose:
		s := c.s
		if s.state == sockGone || s.closing {
			return
		}
		s.closing = true
		if s.state == sockOpen {
			e.rrUpdate(s)
			e.markDirty()
		}
	}
}

func (e *engine) failErr() error {
	if e.err != nil {
		return e.err
	}
	return ErrClosed
}
