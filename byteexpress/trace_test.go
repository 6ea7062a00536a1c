package byteexpress

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/cockroachdb/datadriven"

	"github.com/besim/besim/byteexpress/bemalloc"
	"github.com/besim/besim/verbs"
	"github.com/besim/besim/verbs/fakeverbs"
)

// TestTraces runs the protocol scripts in testdata/trace (etcd-raft style;
// go test -run TestTraces -rewrite regenerates the expected output). Each
// script drives endpoints over fakeverbs in virtual time, one step at a
// time, and prints what the protocol did: the WR batches each poll posted
// (one line per doorbell, the SEND records decoded, * marking the
// signalled WR), the receives re-posted, the Ready's events and the
// engines' credits, ring and window.
//
// Commands:
//
//	node name=a [sq=N rq=N cwnd=N frag=N small=N recvbuf=N ka=DUR kato=DUR]  (keepalive off unless ka)
//	dial from=a to=b                 opens socket s<k> (k counts dials)
//	send sock=s1 size=64KiB [count=N]
//	poll node=a                      one Poll of a's thread at the current time
//	deliver [all]                    the network executes what is due next (all: until idle)
//	tick d=DUR                       advance the clock (and the network) by DUR
//	run [for=DUR]                    poll and deliver until nothing is pending (or DUR passed)
//	pause node=b / resume node=b     stop / restart polling b (a hung process)
//	drop node=b                      b's NIC goes silent (crash): nothing it sends or answers
//	engines                          the engines' state
func TestTraces(t *testing.T) {
	datadriven.Walk(t, "testdata/trace", func(t *testing.T, path string) {
		w := newTraceWorld(t)
		defer w.close()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			w.out.Reset()
			if err := w.exec(d); err != nil {
				return fmt.Sprintf("%s: %s: %v\n", d.Pos, d.Cmd, err)
			}
			s := w.out.String()
			if s == "" {
				return "ok\n"
			}
			return s
		})
	})
}

type traceWorld struct {
	t     *testing.T
	net   *fakeverbs.Network
	now   int64
	nodes map[string]*traceNode
	order []*traceNode
	socks map[string]*Socket
	names map[*Socket]string
	ndial int
	out   strings.Builder
	woken bool // a command was queued for some thread since the last poll round
}

type traceNode struct {
	w      *traceWorld
	name   string
	ctx    *fakeverbs.Context
	pool   *bemalloc.Pool
	ep     *Endpoint
	paused bool
	log    []string
}

func newTraceWorld(t *testing.T) *traceWorld {
	return &traceWorld{t: t, net: fakeverbs.New(fakeverbs.Config{Latency: 1000, BytesPerNs: 12.5}),
		nodes: map[string]*traceNode{}, socks: map[string]*Socket{}, names: map[*Socket]string{}}
}

func (w *traceWorld) close() {
	for _, n := range w.order {
		_ = n.ep.Close()
		_ = n.pool.Close()
	}
}

func (w *traceWorld) printf(format string, args ...any) { fmt.Fprintf(&w.out, format, args...) }

func (w *traceWorld) node(d *datadriven.TestData) (*traceNode, error) {
	var name string
	d.ScanArgs(w.t, "node", &name)
	n := w.nodes[name]
	if n == nil {
		return nil, fmt.Errorf("no node %q", name)
	}
	return n, nil
}

func (w *traceWorld) exec(d *datadriven.TestData) error {
	switch d.Cmd {
	case "node":
		return w.addNode(d)
	case "dial":
		var from, to string
		d.ScanArgs(w.t, "from", &from)
		d.ScanArgs(w.t, "to", &to)
		n := w.nodes[from]
		if n == nil || w.nodes[to] == nil {
			return fmt.Errorf("unknown node in %s -> %s", from, to)
		}
		s, err := n.ep.Dial(Addr(to))
		if err != nil {
			return err
		}
		w.ndial++
		w.name(s, fmt.Sprintf("s%d", w.ndial))
	case "send":
		var sock, size string
		d.ScanArgs(w.t, "sock", &sock)
		d.ScanArgs(w.t, "size", &size)
		count := 1
		if d.HasArg("count") {
			d.ScanArgs(w.t, "count", &count)
		}
		s := w.socks[sock]
		if s == nil {
			return fmt.Errorf("no socket %q", sock)
		}
		n, err := parseSize(size)
		if err != nil {
			return err
		}
		for range count {
			buf, err := s.eng.ep.Allocate(n)
			if err != nil {
				return err
			}
			if err := s.Send(buf, n); err != nil {
				return err
			}
		}
	case "poll":
		n, err := w.node(d)
		if err != nil {
			return err
		}
		w.poll(n, true)
	case "deliver":
		if d.HasArg("all") {
			for {
				at, ok := w.net.Next()
				if !ok {
					break
				}
				w.advance(at)
			}
			w.printf("t=%s network idle\n", fmtNS(w.now))
			return nil
		}
		at, ok := w.net.Next()
		if !ok {
			w.printf("nothing in flight\n")
			return nil
		}
		w.advance(at)
		w.printf("t=%s\n", fmtNS(w.now))
	case "tick":
		var ds string
		d.ScanArgs(w.t, "d", &ds)
		dur, err := time.ParseDuration(ds)
		if err != nil {
			return err
		}
		w.advance(w.now + dur.Nanoseconds())
		w.printf("t=%s\n", fmtNS(w.now))
	case "run":
		limit := time.Second
		if d.HasArg("for") {
			var ds string
			d.ScanArgs(w.t, "for", &ds)
			var err error
			if limit, err = time.ParseDuration(ds); err != nil {
				return err
			}
		}
		return w.run(w.now + limit.Nanoseconds())
	case "pause", "resume":
		n, err := w.node(d)
		if err != nil {
			return err
		}
		n.paused = d.Cmd == "pause"
	case "drop":
		n, err := w.node(d)
		if err != nil {
			return err
		}
		n.ctx.Crash()
	case "engines":
		for _, n := range w.order {
			for _, th := range n.ep.Threads() {
				for _, e := range th.engines {
					w.printf("%s->%s %s\n", n.name, e.remote, engineLine(e))
				}
			}
		}
	default:
		return fmt.Errorf("unknown command (allowed: node, dial, send, poll, deliver, tick, run, pause, resume, drop, engines)")
	}
	return nil
}

func (w *traceWorld) addNode(d *datadriven.TestData) error {
	var name string
	d.ScanArgs(w.t, "name", &name)
	cfg := Config{Threads: 1, SQDepth: 8, RQDepth: 8, RecvBufSize: 1024, FragSize: 4096, CQDepth: 256,
		KeepaliveInterval: -1}
	for _, a := range d.CmdArgs {
		if len(a.Vals) != 1 {
			continue
		}
		v := a.Vals[0]
		var err error
		var n int
		switch a.Key {
		case "name":
			continue
		case "ka", "kato":
			var dur time.Duration
			if dur, err = time.ParseDuration(v); err == nil {
				if a.Key == "ka" {
					cfg.KeepaliveInterval = dur
				} else {
					cfg.KeepaliveTimeout = dur
				}
			}
		default:
			if n, err = parseSize(v); err != nil {
				break
			}
			switch a.Key {
			case "sq":
				cfg.SQDepth = n
			case "rq":
				cfg.RQDepth = n
			case "cwnd":
				cfg.Cwnd = n
			case "frag":
				cfg.FragSize = n
			case "small":
				cfg.SmallMsgMax = n
			case "recvbuf":
				cfg.RecvBufSize = n
			default:
				return fmt.Errorf("node %s: unknown setting %q (allowed: sq, rq, cwnd, frag, small, recvbuf, ka, kato)", name, a.Key)
			}
		}
		if err != nil {
			return fmt.Errorf("node %s: %s=%s: %v", name, a.Key, v, err)
		}
	}
	ctx := w.net.NewContext(name)
	pd, err := ctx.AllocPD()
	if err != nil {
		return err
	}
	pool, err := bemalloc.New(pd, bemalloc.Config{})
	if err != nil {
		return err
	}
	n := &traceNode{w: w, name: name, ctx: ctx, pool: pool}
	ep, err := NewEndpoint(Params{Context: ctx, PD: &tracePD{PD: pd, n: n}, Allocator: pool,
		Connector: w, Local: Addr(name)}, cfg)
	if err != nil {
		return err
	}
	ep.Listen()
	ep.Threads()[0].SetWakeup(func() { w.woken = true })
	n.ep = ep
	w.nodes[name] = n
	w.order = append(w.order, n)
	return nil
}

// Connect implements Connector: the exchange happens at once (the traces
// are about the RDMA protocol, not the side channel).
func (w *traceWorld) Connect(from, remote Addr, local ConnInfo, done func(ConnInfo, error)) {
	n := w.nodes[string(remote)]
	if n == nil {
		done(ConnInfo{}, fmt.Errorf("no node %s", remote))
		return
	}
	n.ep.HandleConnect(from, local, done)
}

func (w *traceWorld) name(s *Socket, name string) {
	w.socks[name] = s
	w.names[s] = name
}

func (w *traceWorld) sockName(s *Socket) string {
	if s == nil {
		return "-"
	}
	if n, ok := w.names[s]; ok {
		return n
	}
	return fmt.Sprintf("socket%d", s.uid)
}

// advance moves the clock to at, letting the network execute what is due.
func (w *traceWorld) advance(at int64) {
	if at > w.now {
		w.now = at
	}
	w.net.Advance(w.now)
}

// poll runs one Poll of n's thread and prints what it did; it returns the
// Ready's Next and whether anything happened. Unless verbose, an empty
// step prints nothing.
func (w *traceWorld) poll(n *traceNode, verbose bool) (time.Duration, bool) {
	th := n.ep.Threads()[0]
	r := th.Poll(time.Duration(w.now))
	busy := len(n.log) > 0 || len(r.Events) > 0
	if !busy && !verbose {
		return r.Next, false
	}
	prefix := fmt.Sprintf("t=%s %s:", fmtNS(w.now), n.name)
	for _, l := range n.log {
		w.printf("%s %s\n", prefix, l)
	}
	n.log = n.log[:0]
	for _, ev := range r.Events {
		w.printf("%s %s\n", prefix, w.event(ev))
		switch ev.Kind {
		case EvMessage, EvSendFailed, EvBufferReturned:
			_ = n.ep.Free(ev.Buf)
		}
	}
	if err := th.CheckInvariants(); err != nil {
		w.printf("%s INVARIANT: %v\n", prefix, err)
	}
	if !busy {
		w.printf("%s nothing to report\n", prefix)
	}
	for _, e := range th.engines {
		w.printf("%s   ->%s %s\n", prefix, e.remote, engineLine(e))
	}
	return r.Next, busy
}

func (w *traceWorld) event(ev Event) string {
	switch ev.Kind {
	case EvAccepted:
		w.ndial++
		w.name(ev.Socket, fmt.Sprintf("s%d", w.ndial))
		return fmt.Sprintf("accepted %s from %s", w.sockName(ev.Socket), ev.Remote)
	case EvMessage:
		return fmt.Sprintf("message %s %dB", w.sockName(ev.Socket), ev.Len)
	case EvSendFailed:
		return fmt.Sprintf("send-failed %s %dB: %v", w.sockName(ev.Socket), ev.Len, ev.Err)
	case EvEngineError:
		return fmt.Sprintf("engine-error %s: %v", ev.Remote, ev.Err)
	case EvSocketFailed:
		return fmt.Sprintf("socket-failed %s: %v", w.sockName(ev.Socket), ev.Err)
	}
	return fmt.Sprintf("%s %s", ev.Kind, w.sockName(ev.Socket))
}

func engineLine(e *engine) string {
	c := "off"
	if e.cred.on {
		c = fmt.Sprintf("%d/%d", e.cred.credits, e.cred.initial)
	}
	win := ""
	if e.win.cwnd > 0 {
		win = fmt.Sprintf("/%d", e.win.cwnd)
	}
	return fmt.Sprintf("%s credits=%s owed=%d ring=%d+%d inflight=%dB%s", e.state, c, e.cred.toReturn,
		e.ring.inFlight(), e.ring.pendingWRs(), e.win.inflight, win)
}

// run polls every node and advances to the next due time until nothing is
// pending or the clock passes end.
func (w *traceWorld) run(end int64) error {
	steps := 0
	for {
		next := int64(math.MaxInt64)
		w.woken = false
		for _, n := range w.order {
			if n.paused {
				continue
			}
			for {
				nx, _ := w.poll(n, false)
				if int64(nx) > w.now {
					next = min(next, int64(nx))
					break
				}
				if steps++; steps > 100000 {
					return fmt.Errorf("livelock at t=%s", fmtNS(w.now))
				}
			}
		}
		if at, ok := w.net.Next(); ok {
			next = min(next, at)
		}
		if w.woken {
			next = w.now
		}
		if next == math.MaxInt64 {
			w.printf("t=%s idle\n", fmtNS(w.now))
			return nil
		}
		if steps++; steps > 100000 {
			return fmt.Errorf("livelock at t=%s", fmtNS(w.now))
		}
		if next > end {
			w.advance(end)
			w.printf("t=%s stopped (next at %s)\n", fmtNS(w.now), fmtNS(next))
			return nil
		}
		w.advance(next)
	}
}

// tracePD wraps a PD so that the QPs it creates log their doorbells.
type tracePD struct {
	verbs.PD
	n *traceNode
}

func (p *tracePD) CreateQP(a verbs.QPInitAttr) (verbs.QP, error) {
	qp, err := p.PD.CreateQP(a)
	if err != nil {
		return nil, err
	}
	return &traceQP{QP: qp, n: p.n}, nil
}

type traceQP struct {
	verbs.QP
	n *traceNode
}

func (q *traceQP) PostSend(wr *verbs.SendWR) (*verbs.SendWR, error) {
	var parts []string
	for x := wr; x != nil; x = x.Next {
		s := ""
		switch x.Opcode {
		case verbs.OpSend:
			s = "SEND" + decodeSend(x)
		case verbs.OpWrite:
			s = fmt.Sprintf("WRITE %dB", x.Len())
		case verbs.OpWriteImm:
			s = fmt.Sprintf("WRITE_IMM %dB imm=%#x", x.Len(), x.Imm)
		default:
			s = x.Opcode.String()
		}
		if x.Flags&verbs.FlagSignaled != 0 {
			s += "*"
		}
		parts = append(parts, s)
	}
	q.n.log = append(q.n.log, "post "+strings.Join(parts, ", "))
	return q.QP.PostSend(wr)
}

func (q *traceQP) PostRecv(wr *verbs.RecvWR) (*verbs.RecvWR, error) {
	k := 0
	for x := wr; x != nil; x = x.Next {
		k++
	}
	q.n.log = append(q.n.log, fmt.Sprintf("post-recv %d", k))
	return q.QP.PostRecv(wr)
}

// decodeSend lists a SEND's credit return and records.
func decodeSend(wr *verbs.SendWR) string {
	sge := wr.SGL[0]
	addr := sge.Addr // registered bemalloc memory, outside the Go heap
	b := unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&addr))), sge.Length)
	var recs []string
	ret := le.Uint32(b)
	p := b[hdrSize:]
	for len(p) > 0 {
		switch p[0] {
		case recHello:
			recs, p = append(recs, "hello"), p[sizeHello:]
		case recOpen:
			recs, p = append(recs, fmt.Sprintf("open %#x", le.Uint32(p[1:]))), p[sizeOpen:]
		case recClose:
			recs, p = append(recs, fmt.Sprintf("close %#x", le.Uint32(p[1:]))), p[sizeClose:]
		case recSlotFree:
			recs, p = append(recs, fmt.Sprintf("slot-free %d", le.Uint32(p[1:]))), p[sizeOpen:]
		case recData:
			n := int(le.Uint32(p[5:]))
			recs, p = append(recs, fmt.Sprintf("data %dB", n)), p[sizeDataHdr+n:]
		case recMetaReq:
			recs, p = append(recs, fmt.Sprintf("meta-req tok=%d %dB", le.Uint32(p[5:]), le.Uint64(p[9:]))), p[sizeMetaReq:]
		case recMetaResp:
			recs, p = append(recs, fmt.Sprintf("meta-resp tok=%d status=%d slot=%d", le.Uint32(p[1:]), p[5], le.Uint32(p[6:]))), p[sizeMetaResp:]
		case recKeepalive:
			recs, p = append(recs, fmt.Sprintf("keepalive %d", le.Uint64(p[1:]))), p[sizeKeepalive:]
		default:
			recs, p = append(recs, fmt.Sprintf("?%d", p[0])), nil
		}
	}
	s := fmt.Sprintf("(ret=%d", ret)
	if len(recs) > 0 {
		s += " " + strings.Join(recs, " ")
	}
	return s + ")"
}

func fmtNS(ns int64) string { return time.Duration(ns).String() }

// parseSize reads 64, 4KiB, 1MiB.
func parseSize(s string) (int, error) {
	mult := 1
	for suf, m := range map[string]int{"KiB": 1 << 10, "MiB": 1 << 20} {
		if strings.HasSuffix(s, suf) {
			s, mult = strings.TrimSuffix(s, suf), m
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("size %q (allowed: N, NKiB, NMiB)", s)
	}
	return n * mult, nil
}
