package role

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/byteexpress/bemalloc"
	"github.com/besim/besim/byteexpress/realtime"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/verbs"
	"github.com/besim/besim/verbs/ibv"
)

// The ps roles over verbs (param transport: verbs): the ByteExpress core
// that besim simulates runs unchanged on the host's RDMA device, with the
// scenario's engine settings (send window, fragment size, SRQ, queue
// depths: app.Engine, as besim gives its simulated engines), a bemalloc pool registered on
// the device's PD, the engine exchange over TCP on the role's bind address
// (realtime.TCPConnector, realtime.Serve) and one wall-clock driver per I/O
// thread (realtime.Run). The traffic logic is the TCP roles' (ps.go); only
// the message transport differs. ByteExpress addresses are the role
// instance IDs.

// OpenVerbs opens the RDMA device for the ps roles over verbs ("" is the
// first device). Tests replace it with an in-memory NIC (verbs/fakeverbs).
var OpenVerbs = func(device string) (verbs.Context, error) {
	if device == "" {
		devs, err := ibv.Devices()
		if err != nil {
			return nil, fmt.Errorf("no RDMA device (%w)", err)
		}
		if len(devs) == 0 {
			return nil, errors.New("no RDMA device: ibv_get_device_list found none")
		}
		device = devs[0]
	}
	return ibv.Open(device)
}

// msgConn is what a ps client writes requests to: a tcpx connection or a
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

func newBENode(ctx context.Context, id, bind, device string, cfg byteexpress.Config) (*beNode, error) {
	vctx, err := OpenVerbs(device)
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

// beConn is a ps client's socket to one server.
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
// exchange addresses) and routes responses into in.
func (pc *psClient) dialBE(spec Spec, peers PeerMap, in chan<- psResp, quit <-chan struct{}) error {
	n := pc.r.node
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
		var rs psResp
		switch ev.Kind {
		case byteexpress.EvMessage:
			rs = parseResp(i, ev.Buf.Bytes()[:ev.Len], string(ev.Remote))
			_ = n.ep.Free(ev.Buf)
		case byteexpress.EvSendFailed, byteexpress.EvBufferReturned:
			_ = n.ep.Free(ev.Buf)
			rs = psResp{srv: i, err: fmt.Errorf("%v: %v", ev.Kind, ev.Err)}
		case byteexpress.EvSocketFailed, byteexpress.EvEngineError:
			rs = psResp{srv: i, err: fmt.Errorf("%v: %v", ev.Kind, ev.Err)}
		default:
			return
		}
		if !known {
			return
		}
		select {
		case in <- rs:
		case <-quit:
		}
	})
	for _, id := range spec.Peers {
		s, err := n.ep.Dial(byteexpress.Addr(id))
		if err != nil {
			return fmt.Errorf("dial %s: %w", id, err)
		}
		pc.conns = append(pc.conns, beConn{n: n, sock: s})
	}
	return nil
}

// psPeer is what a ps-server keeps per client (either transport).
type psPeer struct {
	s     psServed
	rng   *rand.Rand
	ended bool
	// reply is reused for this client's answers over verbs (under the
	// server's lock, until copied into registered memory).
	reply []byte
}

// runServerBE is ps-server over verbs: the same answers as runServer, one
// count and one random stream per client, until every expected client has
// sent its end marker (or the run is stopped).
func (r *psRole) runServerBE(ctx context.Context, spec Spec) (Result, error) {
	n := r.node
	var (
		mu      sync.Mutex
		clients = map[byteexpress.Addr]*psPeer{}
		ended   int
		errs    []error
		done    = make(chan struct{})
	)
	want := len(spec.From)
	n.setHandler(func(ev byteexpress.Event) {
		switch ev.Kind {
		case byteexpress.EvMessage:
			mu.Lock()
			c := clients[ev.Remote]
			if c == nil {
				// As runServer: one stream per (server, client).
				c = &psPeer{rng: sim.Stream(r.cfg.Seed, fmt.Sprintf("ps/server%d/%s", r.idx, ev.Remote))}
				clients[ev.Remote] = c
			}
			reply, err := r.answer(c, ev.Buf.Bytes()[:ev.Len], c.reply)
			var out byteexpress.Buffer
			if err == nil {
				c.reply = reply
				if c.ended {
					if ended++; ended == want {
						close(done)
					}
				}
				// Into registered memory while mu still guards c.reply.
				if out, err = n.ep.Allocate(len(reply)); err == nil {
					copy(out.Bytes(), reply)
				}
			}
			if err != nil && len(errs) < 8 {
				errs = append(errs, fmt.Errorf("%s: %w", ev.Remote, err))
			}
			mu.Unlock()
			_ = n.ep.Free(ev.Buf)
			if err != nil {
				return
			}
			if err := ev.Socket.Send(out, len(reply)); err != nil {
				_ = n.ep.Free(out)
			}
		case byteexpress.EvSendFailed, byteexpress.EvBufferReturned:
			_ = n.ep.Free(ev.Buf)
		case byteexpress.EvSocketFailed, byteexpress.EvEngineError:
			mu.Lock()
			if len(errs) < 8 {
				errs = append(errs, fmt.Errorf("%s: %v: %v", ev.Remote, ev.Kind, ev.Err))
			}
			mu.Unlock()
		}
	})
	n.listen()
	var err error
	limit := time.NewTimer(time.Until(spec.End()) + helloTimeout)
	defer limit.Stop()
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("stopped (%v)", context.Cause(ctx))
	case <-limit.C:
		err = errors.New("not every client sent its end marker by the end of the run")
	}
	mu.Lock()
	defer mu.Unlock()
	var t psServed
	for _, c := range clients {
		t.Fetches += c.s.Fetches
		t.Pushes += c.s.Pushes
		t.RxBytes += c.s.RxBytes
		t.TxBytes += c.s.TxBytes
	}
	res := Result{Metrics: map[string]float64{"fetches": float64(t.Fetches), "pushes": float64(t.Pushes),
		"rx_bytes": float64(t.RxBytes), "tx_bytes": float64(t.TxBytes), "clients_expected": float64(want),
		"clients_seen": float64(len(clients)), "clients_ended": float64(ended)}}
	return res, errors.Join(append(errs, err)...)
}

// answer is a ps-server's reply to request m from client c: the fetch
// response, push acknowledgement or end-marker count, in resp's backing
// array if it is large enough. Both transports' servers use it.
func (r *psRole) answer(c *psPeer, m, resp []byte) ([]byte, error) {
	if len(m) < psHdr {
		return nil, fmt.Errorf("request of %d bytes, want at least %d", len(m), psHdr)
	}
	c.s.RxBytes += int64(len(m))
	n := psHdr + 8
	switch m[16] {
	case psOpEnd:
		n = psHdr + 16
	case psOpFetch:
		n = 0
		for range int(binary.LittleEndian.Uint32(m[17:])) {
			n += r.cfg.FetchResponse.Sample(c.rng)
		}
		n = max(n, psHdr)
		c.s.Fetches++
	case psOpPush:
		c.s.Pushes++
	default:
		return nil, fmt.Errorf("unknown op %d", m[16])
	}
	if cap(resp) < n {
		resp = make([]byte, n)
	}
	resp = resp[:n]
	copy(resp, m[:psHdr])
	if m[16] == psOpEnd {
		binary.LittleEndian.PutUint64(resp[psHdr:], uint64(c.s.Fetches))
		binary.LittleEndian.PutUint64(resp[psHdr+8:], uint64(c.s.Pushes))
		c.ended = true
		return resp, nil
	}
	c.s.TxBytes += int64(n)
	return resp, nil
}
