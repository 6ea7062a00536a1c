package role

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/besim/besim/berun/internal/tcpx"
)

// The tcp roles open each data connection with a hello message naming the
// connecting instance, and end it with an empty message answered by a
// summary, so that both sides can check that every message arrived.

type dataHello struct {
	From         string `json:"from"`
	Role         string `json:"role"`
	Conn         int    `json:"conn"`  // index of this connection
	Conns        int    `json:"conns"` // connections this instance opens to the peer
	ResponseSize int    `json:"response_size,omitempty"`
}

type summary struct {
	Messages int64 `json:"messages"`
	Bytes    int64 `json:"bytes"`
}

const (
	helloTimeout = 5 * time.Second
	dialTimeout  = 5 * time.Second
	maxHello     = 4 << 10
)

func writeJSON(c *tcpx.Conn, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.WriteMsg(b)
}

func readJSON(c *tcpx.Conn, v any, timeout time.Duration) error {
	if timeout > 0 {
		c.NetConn().SetReadDeadline(time.Now().Add(timeout))
		defer c.NetConn().SetReadDeadline(time.Time{})
	}
	b, err := c.ReadMsg(nil)
	if err != nil {
		return err
	}
	if len(b) > maxHello {
		return fmt.Errorf("control message of %d bytes, at most %d", len(b), maxHello)
	}
	return json.Unmarshal(b, v)
}

func listen(ctx context.Context, bind string) (net.Listener, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", bind, err)
	}
	return ln, nil
}

// inbound is the accepting side shared by tcp-bulk sink and tcp-echo server.
type inbound struct {
	ln   net.Listener
	opts tcpx.Options
}

type connOutcome struct {
	from  string
	conn  int
	conns int // connections the peer announced
	res   any
	err   error
}

// serve accepts connections from spec.From until each of them has opened
// and finished all the connections its hello announced, or ctx ends. handle
// runs one connection after its hello.
func (in *inbound) serve(ctx context.Context, spec Spec, handle func(c *tcpx.Conn, h dataHello) (any, error)) (outcomes []connOutcome, notes []string, err error) {
	expected := map[string]int{} // from -> connections announced (-1: not yet)
	for _, f := range spec.From {
		expected[f] = -1
	}
	finished := map[string]int{}
	events := make(chan connOutcome)
	rejected := make(chan string)
	var (
		mu    sync.Mutex
		conns = map[*tcpx.Conn]bool{}
		wg    sync.WaitGroup
	)
	stop := make(chan struct{})
	defer func() {
		close(stop)
		in.ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := in.ln.Accept()
			if err != nil {
				return
			}
			c, err := tcpx.New(nc, in.opts)
			if err != nil {
				nc.Close()
				continue
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() {
					mu.Lock()
					delete(conns, c)
					mu.Unlock()
					c.Close()
				}()
				var h dataHello
				if err := readJSON(c, &h, helloTimeout); err != nil || !slices.Contains(spec.From, h.From) || h.Conns < 1 || h.Conn < 0 || h.Conn >= h.Conns {
					select {
					case rejected <- fmt.Sprintf("refused a data connection from %v (hello %+v, %v): not one of %v", nc.RemoteAddr(), h, err, spec.From):
					case <-stop:
					}
					return
				}
				o := connOutcome{from: h.From, conn: h.Conn, conns: h.Conns}
				o.res, o.err = handle(c, h)
				select {
				case events <- o:
				case <-stop:
				}
			}()
		}
	}()
	// Each hello announces how many connections its sender opens; the
	// outcomes carry that, so expected is learned as connections finish.
	done := func() bool {
		for f, n := range expected {
			if n < 0 || finished[f] < n {
				return false
			}
		}
		return true
	}
	if len(expected) == 0 {
		return nil, nil, nil
	}
	for {
		select {
		case o := <-events:
			outcomes = append(outcomes, o)
			finished[o.from]++
			expected[o.from] = o.conns
			if done() {
				return outcomes, notes, nil
			}
		case r := <-rejected:
			if len(notes) < 16 {
				notes = append(notes, r)
			}
		case <-ctx.Done():
			var missing []string
			for f, n := range expected {
				if n < 0 || finished[f] < n {
					missing = append(missing, f)
				}
			}
			sort.Strings(missing)
			return outcomes, notes, fmt.Errorf("stopped (%v) before %v finished", context.Cause(ctx), missing)
		}
	}
}

// outbound runs fn on conns connections to each peer, in parallel, bounded
// by ctx (connections are closed when it ends).
func outbound(ctx context.Context, spec Spec, peers PeerMap, conns int, hello dataHello,
	fn func(c *tcpx.Conn, p Peer, idx int) (any, error), opts tcpx.Options) []connOutcome {
	src, _, _ := net.SplitHostPort(spec.Bind)
	var (
		mu  sync.Mutex
		out []connOutcome
		wg  sync.WaitGroup
	)
	for _, id := range spec.Peers {
		p, ok := peers[id]
		for i := range conns {
			if !ok || p.Addr == "" {
				out = append(out, connOutcome{from: id, conn: i, err: fmt.Errorf("peer %s has no data address", id)})
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				o := connOutcome{from: id, conn: i}
				defer func() {
					mu.Lock()
					out = append(out, o)
					mu.Unlock()
				}()
				dctx, cancel := context.WithTimeout(ctx, dialTimeout)
				c, err := tcpx.Dial(dctx, p.Addr, src, opts)
				cancel()
				if err != nil {
					o.err = fmt.Errorf("connect to %s (%s on %s): %w", id, p.Addr, p.Host, err)
					return
				}
				defer c.Close()
				stop := context.AfterFunc(ctx, func() { c.Close() })
				defer stop()
				h := hello
				h.Conn, h.Conns = i, conns
				if err := writeJSON(c, h); err != nil {
					o.err = fmt.Errorf("hello to %s: %w", id, err)
					return
				}
				o.res, o.err = fn(c, p, i)
				if o.err != nil && ctx.Err() != nil {
					o.err = fmt.Errorf("%w (stopped: %v)", o.err, context.Cause(ctx))
				}
			}()
		}
	}
	wg.Wait()
	sort.Slice(out, func(i, j int) bool {
		if out[i].from != out[j].from {
			return out[i].from < out[j].from
		}
		return out[i].conn < out[j].conn
	})
	return out
}

// joinErrs summarizes connection errors: the first few, then a count.
func joinErrs(os []connOutcome) error {
	var errs []error
	n := 0
	for _, o := range os {
		if o.err != nil {
			n++
			if len(errs) < 4 {
				errs = append(errs, fmt.Errorf("%s#%d: %w", o.from, o.conn, o.err))
			}
		}
	}
	if n > len(errs) {
		errs = append(errs, fmt.Errorf("and %d more connection errors", n-len(errs)))
	}
	return errors.Join(errs...)
}

func gbps(bytes int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(bytes) * 8 / d.Seconds() / 1e9
}

// latencies keeps a uniform reservoir of samples (ns).
type latencies struct {
	cap     int
	n       int64
	samples []int64
	min     int64
	max     int64
	sum     float64
	rng     *rand.Rand
}

func newLatencies(cap int) *latencies {
	return &latencies{cap: cap, rng: rand.New(rand.NewPCG(1, 2)), min: -1}
}

func (l *latencies) add(ns int64) {
	l.n++
	l.sum += float64(ns)
	if l.min < 0 || ns < l.min {
		l.min = ns
	}
	l.max = max(l.max, ns)
	if len(l.samples) < l.cap {
		l.samples = append(l.samples, ns)
	} else if j := l.rng.Int64N(l.n); j < int64(l.cap) {
		l.samples[j] = ns
	}
}

func (l *latencies) merge(o *latencies) {
	if o.n == 0 {
		return
	}
	if l.min < 0 || (o.min >= 0 && o.min < l.min) {
		l.min = o.min
	}
	l.max = max(l.max, o.max)
	l.n += o.n
	l.sum += o.sum
	l.samples = append(l.samples, o.samples...)
}

// metrics writes latency_us_* metrics: min, mean, p50, p90, p99, p999, max
// (nearest rank).
func (l *latencies) metrics(m map[string]float64) (sampled bool) {
	if l.n == 0 {
		return false
	}
	s := slices.Clone(l.samples)
	slices.Sort(s)
	q := func(p float64) float64 {
		i := int(float64(len(s))*p+0.999999) - 1
		return float64(s[min(max(i, 0), len(s)-1)]) / 1e3
	}
	m["latency_us_min"] = float64(l.min) / 1e3
	m["latency_us_mean"] = l.sum / float64(l.n) / 1e3
	m["latency_us_p50"] = q(0.50)
	m["latency_us_p90"] = q(0.90)
	m["latency_us_p99"] = q(0.99)
	m["latency_us_p999"] = q(0.999)
	m["latency_us_max"] = float64(l.max) / 1e3
	return int64(len(s)) < l.n
}
