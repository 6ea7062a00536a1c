package role

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/byteexpress/bemalloc"
	"github.com/besim/besim/byteexpress/realtime"
	"github.com/besim/besim/verbs"
	"github.com/besim/besim/verbs/ibv"
)

// The fan-out roles over verbs (param transport: verbs): the ByteExpress
// core that besim simulates runs unchanged on the host's RDMA device, with
// the scenario's engine settings (send window, fragment size, SRQ, queue
// depths: app.Engine, as besim gives its simulated engines), a bemalloc
// pool registered on the device's PD, the engine exchange over TCP on the
// role's bind address (realtime.TCPConnector, realtime.Serve) and one
// wall-clock driver per I/O thread (realtime.Run). The workload's machines
// and the fan-out logic are the TCP roles' (fanout.go); only the message
// transport differs. ByteExpress addresses are the role instance IDs.

// OpenVerbs opens port 1 of the RDMA device for the fan-out roles with
// GID index gid. Tests replace it with an in-memory NIC (verbs/fakeverbs).
var OpenVerbs = func(device string, gid int) (verbs.Context, error) {
	return ibv.OpenWith(device, ibv.Options{Port: 1, GIDIndex: gid})
}

// DefaultDevice names the device a role uses when it is given none: the
// first one libibverbs lists.
var DefaultDevice = func() (string, error) {
	devs, err := ibv.Devices()
	if err != nil {
		return "", fmt.Errorf("no RDMA device (%w)", err)
	}
	if len(devs) == 0 {
		return "", errors.New("no RDMA device: ibv_get_device_list found none")
	}
	return devs[0], nil
}

// verbsQoS is how a role's QPs are addressed and classified on the
// device: GID index (-1: auto, see autoGID), DSCP (the traffic class is
// DSCP << 2) and 802.1p priority (the service level).
type verbsQoS struct {
	gid        int
	dscp, prio uint8
}

// msgConn is what a fan-out client writes requests to: a tcpx connection or a
// ByteExpress socket.
type msgConn interface {
	WriteMsg(p []byte) error
	Close() error
}

// beNode is one role's ByteExpress endpoint on a verbs device.
type beNode struct {
	ep      *byteexpress.Endpoint
	pool    *bemalloc.Pool
	ln      net.Listener
	rctx    context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	handler atomic.Pointer[func(byteexpress.Event)]
	mu      sync.Mutex
	peers   map[byteexpress.Addr]string // exchange addresses
}

func newBENode(ctx context.Context, spec Spec, device string, qos verbsQoS, cfg byteexpress.Config) (*beNode, error) {
	id, bind := spec.ID, spec.Bind
	if device == "" {
		d, err := DefaultDevice()
		if err != nil {
			return nil, fmt.Errorf("verbs transport: %w", err)
		}
		device = d
	}
	gid := qos.gid
	if gid < 0 {
		host, _, _ := net.SplitHostPort(bind)
		g, how, err := autoGID(device, 1, net.ParseIP(host))
		if err != nil {
			return nil, fmt.Errorf("verbs transport: %w", err)
		}
		gid = g
		if spec.Logf != nil {
			spec.Logf("%s: %s", id, how)
		}
	}
	cfg.GIDIndex, cfg.TrafficClass, cfg.ServiceLevel = uint8(gid), qos.dscp<<2, qos.prio
	vctx, err := OpenVerbs(device, gid)
	if err != nil {
		return nil, fmt.Errorf("verbs transport: %w", err)
	}
	pd, err := vctx.AllocPD()
	if err != nil {
		return nil, fmt.Errorf("verbs transport: alloc PD: %w", err)
	}
	pool, err := bemalloc.New(pd, bemalloc.Config{})
	if err != nil {
		return nil, fmt.Errorf("verbs transport: %w", err)
	}
	n := &beNode{pool: pool, peers: map[byteexpress.Addr]string{}}
	conn := &realtime.TCPConnector{Resolve: n.resolve}
	n.ep, err = byteexpress.NewEndpoint(byteexpress.Params{Context: vctx, PD: pd, Allocator: pool, Connector: conn,
		Local: byteexpress.Addr(id)}, cfg)
	if err != nil {
		_ = pool.Close()
		return nil, fmt.Errorf("verbs transport: %w", err)
	}
	realtime.Attach(n.ep) // API calls come from the role's goroutines
	if n.ln, err = listen(ctx, bind); err != nil {
		_ = n.ep.Close()
		_ = pool.Close()
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.Background())
	n.rctx, n.cancel = rctx, cancel
	for _, th := range n.ep.Threads() {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			_ = realtime.Run(rctx, th, realtime.Options{}, n.dispatch)
		}()
	}
	return n, nil
}

func (n *beNode) resolve(a byteexpress.Addr) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if s, ok := n.peers[a]; ok {
		return s, nil
	}
	return "", fmt.Errorf("no exchange address for %s", a)
}

// dispatch runs on the I/O threads: it hands events to the role's handler,
// or returns buffers if there is none yet.
func (n *beNode) dispatch(ev byteexpress.Event) {
	if h := n.handler.Load(); h != nil {
		(*h)(ev)
		return
	}
	if ev.Buf.Bytes() != nil {
		_ = n.ep.Free(ev.Buf)
	}
}

func (n *beNode) setHandler(h func(byteexpress.Event)) { n.handler.Store(&h) }

// listen makes the endpoint accept engines, then starts answering the
// exchange. In this order a client that dials early waits in the
// listener's backlog instead of being refused as "not listening".
func (n *beNode) listen() {
	n.ep.Listen()
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		_ = realtime.Serve(n.rctx, n.ln, n.ep, helloTimeout, log.Printf)
	}()
}

func (n *beNode) close() error {
	n.cancel()
	_ = n.ln.Close() // Serve closes it too; a client never started Serve
	n.wg.Wait()
	return errors.Join(n.ep.Close(), n.pool.Close())
}

// beConn is a fan-out client's socket to one server.
type beConn struct {
	n    *beNode
	sock *byteexpress.Socket
}

// WriteMsg copies p into a registered buffer and sends it: the
// serialization into bemalloc memory an application does before a
// zero-copy send.
func (c beConn) WriteMsg(p []byte) error {
	buf, err := c.n.ep.Allocate(len(p))
	if err != nil {
		return err
	}
	copy(buf.Bytes(), p)
	if err := c.sock.Send(buf, len(p)); err != nil {
		_ = c.n.ep.Free(buf)
		return err
	}
	return nil
}

func (c beConn) Close() error { return c.sock.Close() }

// dialBE opens one socket per server (the peers' Prepare returned their
// exchange addresses) and routes the answers into in.
func (c *fanCli) dialBE(spec Spec, peers PeerMap, n *beNode, in chan<- fanIn, quit <-chan struct{}) error {
	index := map[byteexpress.Addr]int{}
	for i, id := range spec.Peers {
		p, ok := peers[id]
		if !ok || p.Addr == "" {
			return fmt.Errorf("peer %s has no exchange address", id)
		}
		n.mu.Lock()
		n.peers[byteexpress.Addr(id)] = p.Addr
		n.mu.Unlock()
		index[byteexpress.Addr(id)] = i
	}
	n.setHandler(func(ev byteexpress.Event) {
		i, known := index[ev.Remote]
		var f fanIn
		switch ev.Kind {
		case byteexpress.EvMessage:
			f = newFanIn(i, ev.Buf.Bytes()[:ev.Len], time.Now())
			_ = n.ep.Free(ev.Buf)
		case byteexpress.EvSendFailed, byteexpress.EvBufferReturned:
			_ = n.ep.Free(ev.Buf)
			f = fanIn{srv: i, err: fmt.Errorf("%v: %v", ev.Kind, ev.Err)}
		case byteexpress.EvSocketFailed, byteexpress.EvEngineError:
			f = fanIn{srv: i, err: fmt.Errorf("%v: %v", ev.Kind, ev.Err)}
		default:
			return
		}
		if !known {
			return
		}
		select {
		case in <- f:
		case <-quit:
		}
	})
	for _, id := range spec.Peers {
		s, err := n.ep.Dial(byteexpress.Addr(id))
		if err != nil {
			return fmt.Errorf("dial %s: %w", id, err)
		}
		c.conns = append(c.conns, beConn{n: n, sock: s})
	}
	return nil
}

// runBE serves over verbs: the same answers as runTCP, one count per
// client (its ByteExpress address), until every expected client has sent
// its end marker (or the run is stopped). It then lingers until every
// client has closed the socket its count went out on (or its engine is
// gone), at most helloTimeout: Send only queues, and closing the endpoint
// at once would destroy a count still in the send queue.
func (s *fanSrv) runBE(ctx context.Context, spec Spec, n *beNode) (Result, error) {
	var (
		clients = map[byteexpress.Addr]*fanPeer{}
		errs    []error
		done    = make(chan struct{})
		drained = make(chan struct{})
		head    = make([]byte, s.w.headLen+fanEndLen)
		// counted: the sockets a count went out on, until their client
		// closes them.
		counted = map[*byteexpress.Socket]byteexpress.Addr{}
	)
	want := len(spec.From)
	drain := func() { // with s.mu held
		if s.closed && len(counted) == 0 {
			select {
			case <-drained:
			default:
				close(drained)
			}
		}
	}
	fail := func(err error) {
		if len(errs) < 8 {
			errs = append(errs, err)
		}
	}
	n.setHandler(func(ev byteexpress.Event) {
		switch ev.Kind {
		case byteexpress.EvMessage:
			s.mu.Lock()
			c := clients[ev.Remote]
			if c == nil {
				c = &fanPeer{}
				clients[ev.Remote] = c
				s.seen++
			}
			size, end, err := s.answer(c, ev.Buf.Bytes()[:ev.Len], head)
			if err == nil && !end && s.muteAt > 0 && time.Since(spec.Start) >= s.muteAt {
				// mute_at: taken in and counted, not answered.
				s.muted++
				s.mu.Unlock()
				_ = n.ep.Free(ev.Buf)
				return
			}
			var out byteexpress.Buffer
			if err == nil {
				// Into registered memory while mu still guards head.
				if out, err = n.ep.Allocate(size); err == nil {
					// The payload past the header is opaque: not cleared.
					p := out.Bytes()[:size]
					if end {
						copy(p, head)
					} else {
						copy(p, head[:s.w.headLen])
					}
				}
			}
			if err != nil {
				fail(fmt.Errorf("%s: %w", ev.Remote, err))
			}
			if end && err == nil {
				counted[ev.Socket] = ev.Remote
			}
			if end && s.ended == want && !s.closed {
				s.closed = true
				close(done)
			}
			s.mu.Unlock()
			_ = n.ep.Free(ev.Buf)
			if err != nil {
				return
			}
			if err := ev.Socket.Send(out, size); err != nil {
				_ = n.ep.Free(out)
			}
		case byteexpress.EvSendFailed, byteexpress.EvBufferReturned:
			_ = n.ep.Free(ev.Buf)
		case byteexpress.EvClosed:
			s.mu.Lock()
			delete(counted, ev.Socket)
			drain()
			s.mu.Unlock()
		case byteexpress.EvSocketFailed, byteexpress.EvEngineError:
			s.mu.Lock()
			if c := clients[ev.Remote]; c != nil && c.ended {
				// A client that has its count closes its endpoint:
				// its engine fails, and that is no failure.
				for k, a := range counted {
					if a == ev.Remote && (ev.Kind == byteexpress.EvEngineError || k == ev.Socket) {
						delete(counted, k)
					}
				}
				drain()
			} else {
				fail(fmt.Errorf("%s: %v: %v", ev.Remote, ev.Kind, ev.Err))
			}
			s.mu.Unlock()
		}
	})
	n.listen()
	var err error
	limit := time.NewTimer(time.Until(spec.End()) + helloTimeout)
	defer limit.Stop()
	select {
	case <-done:
		s.mu.Lock()
		drain()
		s.mu.Unlock()
	case <-ctx.Done():
		err = fmt.Errorf("stopped (%v)", context.Cause(ctx))
	case <-limit.C:
		err = errors.New("not every client sent its end marker by the end of the run")
	}
	var notes []string
	if err == nil {
		linger := time.NewTimer(helloTimeout)
		defer linger.Stop()
		select {
		case <-drained:
		case <-ctx.Done():
		case <-linger.C:
			s.mu.Lock()
			notes = append(notes, fmt.Sprintf("%d count sockets not closed by their clients within %v (the counts may not have arrived)", len(counted), helloTimeout))
			s.mu.Unlock()
		}
	}
	res := s.result(want)
	res.Notes = append(res.Notes, notes...)
	s.mu.Lock()
	defer s.mu.Unlock()
	return res, errors.Join(append(errs, err)...)
}
