package role

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

type inst struct {
	spec Spec
	r    Role
	res  Result
	err  error
}

// runAll prepares and runs instances in-process, as agents would.
func runAll(t *testing.T, d time.Duration, grace time.Duration, specs ...Spec) map[string]*inst {
	t.Helper()
	out := map[string]*inst{}
	peers := PeerMap{}
	for _, s := range specs {
		s.Duration, s.Grace = d, grace
		s.Logf = t.Logf
		r, err := New(s)
		if err != nil {
			t.Fatalf("%s: %v", s.ID, err)
		}
		addr, err := r.Prepare(context.Background(), s)
		if err != nil {
			t.Fatalf("%s prepare: %v", s.ID, err)
		}
		t.Cleanup(func() { r.Close() })
		out[s.ID] = &inst{spec: s, r: r}
		peers[s.ID] = Peer{ID: s.ID, Role: s.Role, Host: s.Host, Addr: addr}
	}
	start := time.Now().Add(50 * time.Millisecond)
	var wg sync.WaitGroup
	for _, in := range out {
		in.spec.Start = start
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Until(start))
			ctx, cancel := context.WithDeadline(context.Background(), start.Add(d+grace))
			defer cancel()
			in.res, in.err = in.r.Run(ctx, in.spec, peers)
		}()
	}
	wg.Wait()
	return out
}

func TestBulkAndEcho(t *testing.T) {
	got := runAll(t, 300*time.Millisecond, 5*time.Second,
		Spec{ID: "sink", Role: "tcp-bulk", Host: "b", Bind: "127.0.0.1:0", From: []string{"send"}, Params: map[string]string{"mode": "sink"}},
		Spec{ID: "send", Role: "tcp-bulk", Host: "a", Bind: "127.0.0.1:0", Peers: []string{"sink"}, Params: map[string]string{"mode": "send", "connections": "2"}},
		Spec{ID: "srv", Role: "tcp-echo", Host: "b", Bind: "127.0.0.1:0", From: []string{"cli"}, Params: map[string]string{"mode": "server"}},
		Spec{ID: "cli", Role: "tcp-echo", Host: "a", Bind: "127.0.0.1:0", Peers: []string{"srv"}, Params: map[string]string{"mode": "client", "outstanding": "4"}},
	)
	for id, in := range got {
		if in.err != nil {
			t.Errorf("%s: %v", id, in.err)
		}
		t.Logf("%s: %v", id, in.res.Metrics)
	}
	snd, snk := got["send"].res.Metrics, got["sink"].res.Metrics
	if snd["messages"] < 1 || snd["messages"] != snk["messages"] || snd["acked_messages"] != snd["messages"] || snk["bytes"] != snd["messages"]*(1<<20) {
		t.Errorf("bulk: sent %v, sink %v", snd, snk)
	}
	if snd["throughput_gbps"] <= 0 || snk["throughput_gbps"] <= 0 || snd["connections"] != 2 {
		t.Errorf("bulk throughput: %v %v", snd, snk)
	}
	cli, srv := got["cli"].res.Metrics, got["srv"].res.Metrics
	if cli["requests"] < 10 || cli["responses"] != cli["requests"] || cli["lost"] != 0 || srv["requests"] != cli["requests"] {
		t.Errorf("echo: client %v server %v", cli, srv)
	}
	if !(cli["latency_us_min"] > 0 && cli["latency_us_min"] <= cli["latency_us_p50"] && cli["latency_us_p50"] <= cli["latency_us_p99"] && cli["latency_us_p99"] <= cli["latency_us_max"]) {
		t.Errorf("latency percentiles out of order: %v", cli)
	}
}

// TestSinkBoundedWhenSenderNeverComes: a sink whose sender never connects
// returns at its deadline with an error naming the sender.
func TestSinkBoundedWhenSenderNeverComes(t *testing.T) {
	t0 := time.Now()
	got := runAll(t, 100*time.Millisecond, 300*time.Millisecond,
		Spec{ID: "sink", Role: "tcp-bulk", Host: "b", Bind: "127.0.0.1:0", From: []string{"ghost"}, Params: map[string]string{"mode": "sink"}})
	if el := time.Since(t0); el > 2*time.Second {
		t.Fatalf("sink took %v", el)
	}
	if err := got["sink"].err; err == nil || !strings.Contains(err.Error(), "ghost") {
		t.Fatalf("sink error %v should name the missing sender", err)
	}
}

// TestSenderToDeadSink: a sink that goes away mid-run (its listener and
// connections closed) makes the sender fail fast, keeping its counts.
func TestSenderToDeadSink(t *testing.T) {
	sink, err := New(Spec{ID: "sink", Role: "tcp-bulk", Bind: "127.0.0.1:0", From: []string{"send"}, Params: map[string]string{"mode": "sink"}})
	if err != nil {
		t.Fatal(err)
	}
	addr, err := sink.Prepare(context.Background(), Spec{Bind: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	sctx, kill := context.WithCancel(context.Background())
	go sink.Run(sctx, Spec{ID: "sink", From: []string{"send"}, Duration: 5 * time.Second}, nil)
	go func() { time.Sleep(200 * time.Millisecond); kill() }()

	spec := Spec{ID: "send", Role: "tcp-bulk", Bind: "127.0.0.1:0", Peers: []string{"sink"}, Params: map[string]string{"mode": "send"},
		Duration: 5 * time.Second, Start: time.Now()}
	snd, _ := New(spec)
	snd.Prepare(context.Background(), spec)
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	res, err := snd.Run(ctx, spec, PeerMap{"sink": {ID: "sink", Addr: addr}})
	if err == nil || time.Since(t0) > 3*time.Second {
		t.Fatalf("sender to a dead sink: %v after %v", err, time.Since(t0))
	}
	if res.Metrics["messages"] < 1 {
		t.Fatalf("partial counts lost: %v", res.Metrics)
	}
	t.Logf("sender error (expected): %v", err)
}

func TestParams(t *testing.T) {
	for _, c := range []struct {
		params map[string]string
		peers  []string
		words  string
	}{
		{map[string]string{}, nil, "mode"},
		{map[string]string{"mode": "sideways"}, nil, "send, sink"},
		{map[string]string{"mode": "send", "mesage_size": "1MiB"}, []string{"x"}, `unknown parameter "mesage_size"`},
		{map[string]string{"mode": "send", "message_size": "1Mb"}, []string{"x"}, "not a size"},
		{map[string]string{"mode": "send", "message_size": "128MiB"}, []string{"x"}, "8..67108864"},
		{map[string]string{"mode": "send"}, nil, "needs at least one peer"},
		{map[string]string{"mode": "sink"}, []string{"x"}, "connects to nobody"},
	} {
		_, err := New(Spec{ID: "i", Role: "tcp-bulk", Params: c.params, Peers: c.peers})
		if err == nil || !strings.Contains(err.Error(), c.words) {
			t.Errorf("%v: %v, want %q", c.params, err, c.words)
		}
	}
	if _, err := New(Spec{ID: "i", Role: "tcp-echo", Peers: []string{"x"}, Params: map[string]string{"mode": "client", "outstanding": "1024", "message_size": "1KiB"}}); err == nil {
		t.Error("echo window over the in-flight bound accepted")
	}
	if _, err := New(Spec{ID: "i", Role: "nope"}); err == nil || !strings.Contains(err.Error(), "tcp-bulk") {
		t.Errorf("unknown role: %v", err)
	}
}

func TestParseSize(t *testing.T) {
	for s, want := range map[string]int64{"64": 64, "64B": 64, "4KB": 4000, "4KiB": 4096, "1MiB": 1 << 20, "1MB": 1e6, "1.5KiB": 1536, "2GiB": 2 << 30} {
		if got, err := ParseSize(s); err != nil || got != want {
			t.Errorf("%s: %d %v, want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "1.5B", "-1", "1Mb", "1M", "x"} {
		if _, err := ParseSize(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

func TestLatencies(t *testing.T) {
	l := newLatencies(100)
	for i := 1; i <= 1000; i++ {
		l.add(int64(i) * 1000)
	}
	m := map[string]float64{}
	if !l.metrics(m) || m["latency_us_min"] != 1 || m["latency_us_max"] != 1000 || m["latency_us_mean"] != 500.5 {
		t.Fatalf("%v", m)
	}
	l = newLatencies(1000)
	for i := 1; i <= 1000; i++ {
		l.add(int64(i) * 1000)
	}
	m = map[string]float64{}
	if l.metrics(m) || m["latency_us_p50"] != 500 || m["latency_us_p99"] != 990 || m["latency_us_p999"] != 999 {
		t.Fatalf("%v", m)
	}
}
