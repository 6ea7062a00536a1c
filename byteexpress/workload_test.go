package byteexpress_test

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/besim/besim/byteexpress"
)

// workload sends message streams over sockets and verifies that every
// message arrives exactly once, intact and in per-socket order.
type workload struct {
	c         *cluster
	flows     []*flow
	rx        map[*byteexpress.Socket]*rxFlow
	expected  int
	delivered int
	// freeAsync frees received buffers from other goroutines (cross-thread
	// free, §5.2).
	freeAsync bool
	wg        sync.WaitGroup
	allowFail bool
	failed    int
}

type flow struct {
	id    uint64
	from  *node
	to    *node
	sock  *byteexpress.Socket
	sizes []int
	sent  int
}

type rxFlow struct {
	f    *flow
	next int
}

func newWorkload(c *cluster) *workload {
	w := &workload{c: c, rx: map[*byteexpress.Socket]*rxFlow{}}
	for _, n := range c.order {
		n.onEvent = w.onEvent
	}
	return w
}

// addFlow dials a socket from -> to and introduces it with a hello message
// naming the flow.
func (w *workload) addFlow(from, to *node, sizes []int) *flow {
	w.c.t.Helper()
	s, err := from.ep.Dial(to.name)
	if err != nil {
		w.c.t.Fatal(err)
	}
	f := &flow{id: uint64(len(w.flows)), from: from, to: to, sock: s, sizes: sizes}
	w.flows = append(w.flows, f)
	buf, err := from.ep.Allocate(8)
	if err != nil {
		w.c.t.Fatal(err)
	}
	binary.LittleEndian.PutUint64(buf.Bytes(), f.id)
	if err := s.Send(buf, 8); err != nil {
		w.c.t.Fatal(err)
	}
	w.expected += len(sizes)
	return f
}

// sendNext sends the flow's next message.
func (w *workload) sendNext(f *flow) {
	k := f.sent
	n := f.sizes[k]
	buf, err := f.from.ep.Allocate(n)
	if err != nil {
		w.c.t.Fatal(err)
	}
	fillPayload(buf.Bytes(), f.id, uint64(k))
	if err := f.sock.Send(buf, n); err != nil {
		w.c.t.Fatalf("flow %d send %d: %v", f.id, k, err)
	}
	f.sent++
}

// scheduleRandom sends every flow's messages at random instants in
// [0, spread) ns from now, in order.
func (w *workload) scheduleRandom(rng *rand.Rand, spread int64) {
	for _, f := range w.flows {
		times := make([]int64, len(f.sizes))
		for i := range times {
			times[i] = rng.Int64N(spread + 1)
		}
		sortInt64(times)
		for range times {
			f := f
			w.c.after(times[0], func() { w.sendNext(f) })
			times = times[1:]
		}
	}
}

func sortInt64(a []int64) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

func (w *workload) free(n *node, b byteexpress.Buffer) {
	if w.freeAsync {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			n.ep.Free(b)
		}()
		return
	}
	n.ep.Free(b)
}

func (w *workload) onEvent(n *node, ev byteexpress.Event) {
	t := w.c.t
	switch ev.Kind {
	case byteexpress.EvMessage:
		r := w.rx[ev.Socket]
		if r == nil {
			if ev.Len != 8 {
				t.Fatalf("%s: first message on a socket is %d bytes, want the 8-byte hello", n.name, ev.Len)
			}
			id := binary.LittleEndian.Uint64(ev.Buf.Bytes())
			if id >= uint64(len(w.flows)) || w.flows[id].to != n {
				t.Fatalf("%s: hello for unknown flow %d", n.name, id)
			}
			w.rx[ev.Socket] = &rxFlow{f: w.flows[id]}
			n.ep.Free(ev.Buf)
			return
		}
		k := r.next
		if k >= len(r.f.sizes) {
			t.Fatalf("flow %d: extra message %d (duplicate delivery?)", r.f.id, k)
		}
		if ev.Len != r.f.sizes[k] {
			t.Fatalf("flow %d message %d: %d bytes, want %d (reordered or corrupted)", r.f.id, k, ev.Len, r.f.sizes[k])
		}
		if err := checkPayload(ev.Buf.Bytes()[:ev.Len], r.f.id, uint64(k)); err != nil {
			t.Fatalf("flow %d message %d (%d bytes): %v", r.f.id, k, ev.Len, err)
		}
		r.next++
		w.delivered++
		w.free(n, ev.Buf)
	case byteexpress.EvSendFailed:
		if !w.allowFail {
			t.Fatalf("%s: send failed on socket %d: %v", n.name, ev.Socket.ID(), ev.Err)
		}
		w.failed++
		n.ep.Free(ev.Buf)
	case byteexpress.EvBufferReturned:
		n.ep.Free(ev.Buf)
	case byteexpress.EvSocketFailed, byteexpress.EvEngineError:
		if !w.allowFail {
			t.Fatalf("%s: %v to %s: %v", n.name, ev.Kind, ev.Remote, ev.Err)
		}
	}
}

func (w *workload) done() bool { return w.delivered == w.expected }

func (w *workload) finish() {
	w.wg.Wait()
}

// logUniformSizes draws n sizes log-uniformly in [lo, hi].
func logUniformSizes(rng *rand.Rand, n, lo, hi int) []int {
	out := make([]int, n)
	a, b := math.Log(float64(lo)), math.Log(float64(hi))
	for i := range out {
		out[i] = int(math.Exp(a + rng.Float64()*(b-a)))
		out[i] = min(max(out[i], lo), hi)
	}
	return out
}

func TestSmoke(t *testing.T) {
	c := newCluster(t, fakeverbsCfg())
	a := c.addNode("a", byteexpress.Config{})
	b := c.addNode("b", byteexpress.Config{})
	w := newWorkload(c)
	f := w.addFlow(a, b, []int{1, 100, 4096, 4097, 100000, 1 << 20, 3})
	for range f.sizes {
		w.sendNext(f)
	}
	c.run(w.done, 1e9)
	w.finish()
	st := a.ep.Stats()
	if st.LargeSent != 3 || st.SmallSent != 5 {
		t.Errorf("large/small sent = %d/%d, want 3/5", st.LargeSent, st.SmallSent)
	}
	c.shutdown()
}

func rngFor(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 7)) }

func (w *workload) rxCount() int { return len(w.rx) }
