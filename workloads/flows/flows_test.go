package flows

import (
	"bytes"
	"github.com/besim/besim/units"
	"slices"
	"strings"
	"testing"

	"github.com/besim/besim/report"
	"github.com/besim/besim/rnic"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/verbs"
	"github.com/besim/besim/workloads/internal/wltest"
)

// TestDCQCNIncast: with DCQCN the 8-to-1 incast never pauses, drops
// nothing, and after warmup the bottleneck queue stays in or near the ECN
// band; without congestion control the same incast is held by PFC, still
// lossless.
func TestDCQCNIncast(t *testing.T) {
	m := wltest.Metrics(wltest.Builtin(t, "dcqcn-incast"))
	t.Logf("dcqcn-incast: PFC frames %v, queue after warmup mean %.0f max %.0f B, goodput %.2f Gbps, CNPs %v, Jain %.4f",
		m["pfc/frames_tx"], m["queue/mean_after_warmup"], m["queue/max_after_warmup"], m["flows/goodput"], m["nic/cnps_sent"], m["flows/jain_fairness"])
	if m["pfc/frames_tx"] != 0 || m["pfc/xoff_events"] != 0 {
		t.Errorf("PFC fired with DCQCN: %v frames", m["pfc/frames_tx"])
	}
	if m["fabric/drops"]+m["fabric/headroom_drops"]+m["nic/rx_buffer_drops"]+m["nic/retransmits"] != 0 {
		t.Errorf("losses: %v", m)
	}
	if q := m["queue/mean_after_warmup"]; q < 5e3 || q > 200e3 {
		t.Errorf("mean queue %.0f B outside Kmin..Kmax (5 KB..200 KB)", q)
	}
	if q := m["queue/max_after_warmup"]; q > 2*200e3 {
		t.Errorf("max queue %.0f B above 2 x Kmax", q)
	}
	if m["nic/cnps_sent"] == 0 || m["nic/cnps_handled"] != m["nic/cnps_sent"] {
		t.Errorf("CNPs sent %v handled %v", m["nic/cnps_sent"], m["nic/cnps_handled"])
	}
	line := rnic.LinePayloadGbps(verbs.RC, 25*units.Gbps, 1024)
	if g := m["flows/goodput"]; g < 0.85*line || g > line*1.001 {
		t.Errorf("goodput %.2f of line %.2f Gbps", g, line)
	}

	p := wltest.Metrics(wltest.Builtin(t, "pfc-incast"))
	t.Logf("pfc-incast: PFC frames %v, XOFF %v, queue mean %.0f B, goodput %.2f Gbps", p["pfc/frames_tx"], p["pfc/xoff_events"], p["queue/mean_after_warmup"], p["flows/goodput"])
	if p["pfc/frames_tx"] == 0 || p["pfc/xoff_events"] == 0 {
		t.Error("incast without congestion control did not trigger PFC")
	}
	if p["fabric/drops"]+p["fabric/headroom_drops"]+p["nic/rx_buffer_drops"]+p["nic/retransmits"] != 0 {
		t.Errorf("lossless incast lost packets: %v", p)
	}
	if p["queue/mean_after_warmup"] < 10*m["queue/mean_after_warmup"] {
		t.Errorf("queue without CC %.0f B is not far above DCQCN's %.0f B", p["queue/mean_after_warmup"], m["queue/mean_after_warmup"])
	}
}

// TestDCQCNFairness: two DCQCN flows into one receiver share it within 10%
// once converged, with the link nearly full.
func TestDCQCNFairness(t *testing.T) {
	r := wltest.Builtin(t, "dcqcn-fairness")
	m := wltest.Metrics(r)
	a, b := m["flow/first/goodput"], m["flow/second/goodput"]
	t.Logf("goodput %.2f / %.2f Gbps, DCQCN rates %.2f / %.2f, Jain %.4f", a, b, m["flow/first/rate"], m["flow/second/rate"], m["flows/jain_fairness"])
	if max(a, b) > 1.1*min(a, b) {
		t.Errorf("unfair: %.2f vs %.2f Gbps", a, b)
	}
	if a+b < 0.85*rnic.LinePayloadGbps(verbs.RC, 25*units.Gbps, 1024) {
		t.Errorf("bottleneck underused: %.2f Gbps", a+b)
	}
	if _, ok := r.Table("qps"); !ok {
		t.Error("no qps table")
	}
	var rate bool
	for _, s := range r.Series {
		rate = rate || s.Name == "flow/second/rate"
	}
	if !rate {
		t.Error("no DCQCN rate series")
	}
}

// TestRDMAFlows: ud, rc SEND, paced and sized flows, and payload: bytes;
// the JSON of two runs is byte-identical.
func TestRDMAFlows(t *testing.T) {
	const text = `name: f
duration: 2ms
fabric:
  topology: {kind: star, hosts: 6}
  priorities: [{prio: 3, lossless: true}, {prio: 0}]
hosts: {nic: rnic, mtu: 1024}
rnic: {payload: bytes}
flows:
  - {name: ud, src: 0, dst: 1, prio: 0, transport: ud}
  - {name: send, src: 2, dst: 3, prio: 3, transport: rc, op: send, message: 8KiB}
  - {name: paced, src: 4, dst: 5, prio: 3, rate: 5Gbps, message: 4KiB}
  - {name: sized, src: 5, dst: 4, prio: 3, size: 1MB, start: 100us}
`
	r := wltest.Run(t, wltest.Parse(t, "f", text))
	again := wltest.Run(t, wltest.Parse(t, "f", text))
	r.Timing, again.Timing = nil, nil
	var ja, jb bytes.Buffer
	if err := r.WriteJSON(&ja); err != nil {
		t.Fatal(err)
	}
	if err := again.WriteJSON(&jb); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ja.Bytes(), jb.Bytes()) {
		t.Error("two runs of the same rnic scenario differ")
	}
	m := wltest.Metrics(r)
	udLine := rnic.LinePayloadGbps(verbs.UD, 25*units.Gbps, 1024)
	rcLine := rnic.LinePayloadGbps(verbs.RC, 25*units.Gbps, 1024)
	for _, c := range []struct {
		flow   string
		lo, hi float64
	}{
		{"ud", 0.9 * udLine, udLine * 1.001},
		{"send", 0.9 * rcLine, rcLine * 1.001},
		{"paced", 4.8, 5.05},
	} {
		if g := m["flow/"+c.flow+"/goodput"]; g < c.lo || g > c.hi {
			t.Errorf("%s: goodput %.2f Gbps, want %.2f..%.2f", c.flow, g, c.lo, c.hi)
		}
	}
	tb, _ := r.Table("qps")
	if d, _ := tb.Value("sized", "delivered"); d != 1000 {
		t.Errorf("sized flow delivered %v KB, want 1000", d)
	}
	if p, _ := tb.Value("sized", "posted"); p != 1000 {
		t.Errorf("sized flow posted %v KB, want 1000", p)
	}
	for _, row := range tb.Rows {
		if e, _ := tb.Value(row.Key, "errors"); e != 0 {
			t.Errorf("%s: %v completion errors", row.Key, e)
		}
	}
	if m["nic/rnr_naks_rcvd"] != 0 || m["nic/ud_no_recv_drops"] != 0 {
		t.Errorf("receivers fell behind: RNR %v, UD drops %v", m["nic/rnr_naks_rcvd"], m["nic/ud_no_recv_drops"])
	}
	if _, ok := r.Table("flows"); ok {
		t.Error("an rnic run has an (empty) raw flows table")
	}
	for _, k := range []string{"nic/retransmits", "nic/cnps_sent", "nic/qp_cache_misses", "nic/seq_naks_rcvd", "nic/timeouts"} {
		if _, ok := m[k]; !ok {
			t.Errorf("metric %s missing", k)
		}
	}
}

// TestRDMALossRecovery: on a lossy class with a small buffer, RC recovers
// drops by go-back-N and the counters show it.
func TestRDMALossRecovery(t *testing.T) {
	s := wltest.Parse(t, "l", `name: l
duration: 3ms
fabric:
  topology: {kind: star, hosts: 5}
  switch: {buffer: 256KiB}
  pfc: {enabled: false}
hosts: {nic: rnic}
rnic: {qp: {timeout: 8}}
flows:
  - {name: in, src: 0-3, dst: 4, size: 1MB}
`)
	m := wltest.Metrics(wltest.Run(t, s))
	t.Logf("drops %v, retransmits %v, seq NAKs %v, timeouts %v", m["fabric/drops"], m["nic/retransmits"], m["nic/seq_naks_rcvd"], m["nic/timeouts"])
	if m["fabric/drops"] == 0 || m["nic/retransmits"] == 0 || m["nic/seq_naks_rcvd"]+m["nic/timeouts"] == 0 {
		t.Errorf("no loss recovery visible: %v", m)
	}
	if m["flows/delivered"] != 4e6 {
		t.Errorf("delivered %v bytes, want 4 MB", m["flows/delivered"])
	}
}

// TestSeriesModes: outputs.series all writes at least the queue series auto
// does, none writes no series, and neither changes any other metric.
func TestSeriesModes(t *testing.T) {
	run := func(m scenarios.SeriesMode) *report.Result {
		s, err := scenarios.Load("pfc-incast")
		if err != nil {
			t.Fatal(err)
		}
		s.Outputs.Series = m
		return wltest.Run(t, s)
	}
	queues := func(r *report.Result) (n int) {
		for _, s := range r.Series {
			if strings.HasPrefix(s.Name, "queue/") {
				n++
			}
		}
		return n
	}
	auto, all, none := run(""), run(scenarios.SeriesAll), run(scenarios.SeriesNone)
	t.Logf("queue series: auto %d, all %d, none %d; series in all: auto %d, all %d, none %d",
		queues(auto), queues(all), queues(none), len(auto.Series), len(all.Series), len(none.Series))
	if queues(auto) == 0 || queues(all) < queues(auto) || len(none.Series) != 0 {
		t.Fatalf("queue series: auto %d, all %d; none has %d series", queues(auto), queues(all), len(none.Series))
	}
	ma, ml, mn := wltest.Metrics(auto), wltest.Metrics(all), wltest.Metrics(none)
	for k, v := range ma {
		if ml[k] != v {
			t.Errorf("%s: auto %v, all %v", k, v, ml[k])
		}
		if w, ok := mn[k]; strings.HasPrefix(k, "queue/") == ok || ok && w != v {
			t.Errorf("%s: auto %v, none %v (present %v)", k, v, w, ok)
		}
	}
}

// TestSeriesMarks runs pfc-incast with outputs.queues and outputs.flows
// marking one queue of auto's choice, every priority of a port (a pattern
// without /: of its eight, one held frames) and two flows: the result has
// the marked queues that held a frame and the marked flows, each series as the unmarked run has it, and
// every other figure but the queue figures after warmup is the unmarked
// run's (marks choose what is recorded, not what happens).
func TestSeriesMarks(t *testing.T) {
	s, err := scenarios.Load("pfc-incast")
	if err != nil {
		t.Fatal(err)
	}
	auto := wltest.Run(t, s)
	series := func(r *report.Result) map[string]report.Series {
		m := map[string]report.Series{}
		for _, s := range r.Series {
			m[s.Name] = s
		}
		return m
	}
	as := series(auto)
	deepest := strings.TrimPrefix(auto.Series[0].Name, "queue/") // auto's deepest queue
	port, _, _ := strings.Cut(deepest, "/")
	sw, _, _ := strings.Cut(port, "->")
	s.Outputs.Queues = []string{deepest, sw + "->h0"}
	s.Outputs.Flows = []string{"incast.[25]-8"}
	marked := wltest.Run(t, s)
	ms := series(marked)
	var names []string
	for name := range ms {
		names = append(names, name)
	}
	slices.Sort(names)
	// sw->h0 holds the ACKs of the flow from host 0, at its priority.
	want := []string{"flow/incast.2-8/goodput", "flow/incast.5-8/goodput", "queue/" + sw + "->h0/3", "queue/" + deepest}
	if !slices.Equal(names, want) {
		t.Fatalf("marked run's series %v, want %v", names, want)
	}
	for _, name := range []string{"queue/" + deepest, "flow/incast.2-8/goodput"} {
		a, m := as[name], ms[name]
		if !slices.Equal(a.T, m.T) || !slices.Equal(a.V, m.V) {
			t.Errorf("%s: marked run's series differs from the unmarked run's", name)
		}
	}
	ma, mm := wltest.Metrics(auto), wltest.Metrics(marked)
	for k, v := range ma {
		if !strings.HasSuffix(k, "_after_warmup") && mm[k] != v {
			t.Errorf("%s: unmarked %v, marked %v", k, v, mm[k])
		}
	}
	if q := mm["queue/max_after_warmup"]; q <= 0 || q > ma["queue/max_after_warmup"] {
		t.Errorf("queue max after warmup: marked %v, unmarked %v", q, ma["queue/max_after_warmup"])
	}
	t.Logf("notes: %q", marked.Notes)
}
