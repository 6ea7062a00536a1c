package experiment

import (
	"bytes"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/besim/besim/dcqcn"
	"github.com/besim/besim/report"
	"github.com/besim/besim/rnic"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/verbs"
)

func parse(t *testing.T, name, text string) *scenarios.Scenario {
	t.Helper()
	s, err := scenarios.Parse(name+".yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func runScenario(t *testing.T, s *scenarios.Scenario) *report.Result {
	t.Helper()
	x, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	r, err := x.Run()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func runBuiltin(t *testing.T, name string) *report.Result {
	t.Helper()
	s, err := scenarios.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	return runScenario(t, s)
}

func metrics(r *report.Result) map[string]float64 {
	m := map[string]float64{}
	for _, v := range r.Metrics {
		m[v.Name] = v.Value
	}
	return m
}

// TestDefaultsAgree: the defaults the scenario schema documents are the
// NIC model's and DCQCN's own.
func TestDefaultsAgree(t *testing.T) {
	s := parse(t, "d", "name: d\nduration: 1ms\nfabric: {topology: {kind: star, hosts: 2}}\nhosts: {nic: rnic}\nflows: [{src: 0, dst: 1}]\n")
	got, err := NICConfig(s, 25*rnic.Gbps)
	if err != nil {
		t.Fatal(err)
	}
	want := rnic.DefaultConfig()
	want.SizesOnly = true
	if !reflect.DeepEqual(got, want) {
		t.Errorf("NICConfig of an empty rnic section:\n got %+v\nwant %+v", got, want)
	}
	q := s.RNIC.QP
	if *q.Timeout != 14 || *q.RetryCnt != 7 || *q.RNRRetry != 7 || *q.MinRNRTimer != 12 {
		t.Errorf("QP attributes %+v: want perftest's 14/7/7/12", q)
	}

	d := parse(t, "d", "name: d\nduration: 1ms\nfabric: {topology: {kind: star, hosts: 2}}\nhosts: {nic: rnic}\nrnic: {cc: dcqcn}\nflows: [{src: 0, dst: 1}]\n")
	gotD, err := NICConfig(d, 25*rnic.Gbps)
	if err != nil {
		t.Fatal(err)
	}
	if w := dcqcn.DefaultConfig(25 * rnic.Gbps); !reflect.DeepEqual(gotD.DCQCN, w) {
		t.Errorf("DCQCN defaults:\n got %+v\nwant %+v", gotD.DCQCN, w)
	}
	if gotD.CC != rnic.CCDCQCN || gotD.CNPInterval != sim.Time(dcqcn.DefaultCNPInterval) {
		t.Errorf("cc %v, CNP interval %v", gotD.CC, gotD.CNPInterval)
	}

	// Every key reaches the model.
	o := parse(t, "o", `name: o
duration: 1ms
fabric: {topology: {kind: star, hosts: 2}}
hosts: {nic: rnic}
rnic:
  cc: dcqcn
  payload: bytes
  wqe_cost: 1ns
  packet_cost: 2ns
  units: 3
  cqe_cost: 4ns
  qp_cache_entries: 5
  rx_buffer: 6KiB
  ack_req_every: 7
  cnp_prio: 5
  pcie: {bandwidth: 9Gbps, read_latency: 10ns, write_latency: 11ns, mmio_latency: 12ns}
  doorbells: {lock_free: 13, shared: 14}
  cpu: {post_send: 15ns, post_send_per_wqe: 16ns, doorbell: 17ns, post_recv: 18ns, post_recv_per_wqe: 19ns,
        poll: 20ns, poll_per_cqe: 21ns, lock_acquire: 22ns, lock_transfer: 23ns, reg_mr: 24ns, reg_mr_per_page: 25ns}
dcqcn: {g: 1/16, initial_alpha: 1/2, alpha_timer: 26us, rate_timer: 27us, byte_counter: 28KB, fast_recovery: 2,
        ai_rate: 30Mbps, hai_rate: 31Mbps, min_rate: 32Mbps, cnp_interval: 33us}
flows: [{src: 0, dst: 1}]
`)
	c, err := NICConfig(o, 25*rnic.Gbps)
	if err != nil {
		t.Fatal(err)
	}
	ns := sim.Nanosecond
	w := rnic.Config{PortMTU: 4096, TrafficPrio: 3, CNPPrio: 5, AckReqEvery: 7, RxBuffer: 6 << 10,
		WQECost: 1 * ns, PacketCost: 2 * ns, Units: 3, DMABandwidth: 9 * rnic.Gbps, DMAReadLatency: 10 * ns,
		DMAWriteLatency: 11 * ns, MMIOLatency: 12 * ns, CQECost: 4 * ns, QPCacheEntries: 5,
		PostSendCall: 15 * ns, PostSendPerWQE: 16 * ns, DoorbellCost: 17 * ns, PostRecvCall: 18 * ns, PostRecvPerWQE: 19 * ns,
		PollCall: 20 * ns, PollPerCQE: 21 * ns, LockAcquire: 22 * ns, LockTransfer: 23 * ns, DedicatedBFRegs: 13, SharedBFRegs: 14,
		RegMRBase: 24 * ns, RegMRPerPage: 25 * ns, CC: rnic.CCDCQCN, CNPInterval: 33 * sim.Microsecond,
		DCQCN: dcqcn.Config{LineRate: 25 * rnic.Gbps, MinRate: 32_000_000, G: 1.0 / 16, InitialAlpha: 0.5,
			AlphaTimer: int64(26 * sim.Microsecond), RateTimer: int64(27 * sim.Microsecond), ByteCounter: 28000,
			FastRecoveryStages: 2, AdditiveIncrease: 30_000_000, HyperIncrease: 31_000_000}}
	if !reflect.DeepEqual(c, w) {
		t.Errorf("every key:\n got %+v\nwant %+v", c, w)
	}
}

// TestDCQCNIncast: with DCQCN the 8-to-1 incast never pauses, drops
// nothing, and after warmup the bottleneck queue stays in or near the ECN
// band; without congestion control the same incast is held by PFC, still
// lossless.
func TestDCQCNIncast(t *testing.T) {
	m := metrics(runBuiltin(t, "dcqcn-incast"))
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
	line := rnic.LinePayloadGbps(verbs.RC, 25*rnic.Gbps, 1024)
	if g := m["flows/goodput"]; g < 0.85*line || g > line*1.001 {
		t.Errorf("goodput %.2f of line %.2f Gbps", g, line)
	}

	p := metrics(runBuiltin(t, "pfc-incast"))
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
	r := runBuiltin(t, "dcqcn-fairness")
	m := metrics(r)
	a, b := m["flow/first/goodput"], m["flow/second/goodput"]
	t.Logf("goodput %.2f / %.2f Gbps, DCQCN rates %.2f / %.2f, Jain %.4f", a, b, m["flow/first/rate"], m["flow/second/rate"], m["flows/jain_fairness"])
	if max(a, b) > 1.1*min(a, b) {
		t.Errorf("unfair: %.2f vs %.2f Gbps", a, b)
	}
	if a+b < 0.85*rnic.LinePayloadGbps(verbs.RC, 25*rnic.Gbps, 1024) {
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

// TestTable2Shape: the table2 benchmark reproduces the paper's shape.
func TestTable2Shape(t *testing.T) {
	r := runBuiltin(t, "table2")
	tb, ok := r.Table("perftest")
	if !ok || len(tb.Rows) != 8 {
		t.Fatalf("perftest table: %+v", tb)
	}
	get := func(key, col string) float64 {
		v, ok := tb.Value(key, col)
		if !ok {
			t.Fatalf("no %s/%s", key, col)
		}
		return v
	}
	for _, row := range tb.Rows {
		t.Logf("%-16s model %7.2f paper %7.2f line %7.2f", row.Key, get(row.Key, "model"), get(row.Key, "paper"), get(row.Key, "line"))
		if strings.HasSuffix(row.Key, "/rc") && get(row.Key, "model") < 0.9*get(row.Key, "line") {
			t.Errorf("%s: RC %.2f below 90%% of line %.2f", row.Key, get(row.Key, "model"), get(row.Key, "line"))
		}
		if get(row.Key, "paper") <= 0 {
			t.Errorf("%s: no paper value", row.Key)
		}
	}
	if v := get("100G/1024B/ud", "model"); v < 35 || v > 65 {
		t.Errorf("UD 100G/1KB %.2f Gbps, want 35..65", v)
	}
	if v := get("200G/4096B/ud", "model"); v < 90 || v > 140 {
		t.Errorf("UD 200G/4KB %.2f Gbps, want 90..140", v)
	}
	if _, ok := r.Table("rc_vs_ud"); !ok {
		t.Error("no rc_vs_ud table")
	}
}

// TestFig11Shape: without thread domains the rate at 512 QPs falls below
// 75% of the rate at 64; with them it stays within 10% of its peak.
func TestFig11Shape(t *testing.T) {
	r := runBuiltin(t, "fig11")
	m := metrics(r)
	no64, no512 := m["msgrate/no_td/64/mmps"], m["msgrate/no_td/512/mmps"]
	t.Logf("no TD: 64 QPs %.2f, 512 QPs %.2f Mmsg/s; TD: 64 %.2f, 512 %.2f", no64, no512, m["msgrate/td/64/mmps"], m["msgrate/td/512/mmps"])
	if no64 <= 0 || no512 >= 0.75*no64 {
		t.Errorf("no TD: 512 QPs %.2f vs 64 QPs %.2f Mmsg/s (want < 75%%)", no512, no64)
	}
	var peak float64
	for _, q := range []int{8, 16, 32, 64, 128, 256, 512} {
		peak = max(peak, m["msgrate/td/"+strconv.Itoa(q)+"/mmps"])
	}
	for _, q := range []int{8, 16, 32, 64, 128, 256, 512} {
		if v := m["msgrate/td/"+strconv.Itoa(q)+"/mmps"]; v < 0.9*peak {
			t.Errorf("TD at %d QPs: %.2f of peak %.2f Mmsg/s", q, v, peak)
		}
	}
	if tb, ok := r.Table("msgrate"); !ok || len(tb.Rows) != 7 {
		t.Errorf("msgrate table: %+v", tb)
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
	r := runScenario(t, parse(t, "f", text))
	again := runScenario(t, parse(t, "f", text))
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
	m := metrics(r)
	udLine := rnic.LinePayloadGbps(verbs.UD, 25*rnic.Gbps, 1024)
	rcLine := rnic.LinePayloadGbps(verbs.RC, 25*rnic.Gbps, 1024)
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
	s := parse(t, "l", `name: l
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
	m := metrics(runScenario(t, s))
	t.Logf("drops %v, retransmits %v, seq NAKs %v, timeouts %v", m["fabric/drops"], m["nic/retransmits"], m["nic/seq_naks_rcvd"], m["nic/timeouts"])
	if m["fabric/drops"] == 0 || m["nic/retransmits"] == 0 || m["nic/seq_naks_rcvd"]+m["nic/timeouts"] == 0 {
		t.Errorf("no loss recovery visible: %v", m)
	}
	if m["flows/delivered"] != 4e6 {
		t.Errorf("delivered %v bytes, want 4 MB", m["flows/delivered"])
	}
}

// TestRNICValidateExplains: validate's explanation covers the NICs and
// benchmarks.
func TestRNICValidateExplains(t *testing.T) {
	for name, want := range map[string]string{
		"dcqcn-incast": "DCQCN (g 0.0039062",
		"table2":       "benchmark perftest, 8 runs",
		"fig11":        "benchmark msgrate, 14 runs",
	} {
		s, err := scenarios.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		x, err := Build(s)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := x.Explain(&b); err != nil || !strings.Contains(b.String(), want) {
			t.Errorf("%s: %v\n%s", name, err, b.String())
		}
	}
}
