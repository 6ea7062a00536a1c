package controller

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/besim/besim/berun/counters"
	"github.com/besim/besim/berun/role"
	"github.com/besim/besim/byteexpress/rpc"
	"github.com/besim/besim/metrics"
	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/workloads/fragsize"
	"github.com/besim/besim/workloads/hol"
	"github.com/besim/besim/workloads/msgrate"
	"github.com/besim/besim/workloads/perftest"
	"github.com/besim/besim/workloads/ps"
)

// Report turns a run into the result format besim writes (package report),
// so that `besim compare SIM.json HW.json` puts a simulation next to a
// hardware run of the same scenario. Parameter-server runs get besim's
// ps-cluster metric names (user/, fetch/, push/, iteration/ and, with
// trainers, fetch_phase/ and push_phase/ percentiles in us,
// client/ and server/ goodput in Gbps; with workload.rpc the clients' RPC
// layers summed into rpc/* and user/failed by besim's own reduction,
// ps.ReduceRPC); incast runs besim's incast-pull
// names (pull/ count and latency in us, worker/ and victim/ goodput);
// perftest runs besim's table2 names (perftest/RATE/MTU/TRANSPORT/gbps,
// keyed by the hosts' link); fragsize runs besim's fig10 names
// (fragsize/RATE/SIZE/gbps, fragsizeReport); hol runs besim's fig13 names
// (hol/FLOWS/SETTING/mean and p99, holReport); msgrate runs besim's
// fig11 and fig11-core names (msgrate/TD/QPS/mmps, msgrateReport);
// mrcache runs besim's mr-cache names without the NIC cache miss rates
// (mrcache/REG/mmps and gbps, mrcacheReport); pingpong runs besim's
// fig8 names (pingpong/RATE/MTU/SIZE/mean_us, pingpongReport); peak runs
// besim's fig9 names (peak/RATE/MTU/{be,rc,ud}/gbps, peakReport); flow scenarios besim's
// flow/NAME/goodput, flows/sent and flows/delivered (flowsReport); failover runs besim's failover/ names
// (failoverReport); every role's own metrics follow as
// role/ID/NAME; NIC counters, where the hosts had them, become pfc/, cnp/
// and nak/ totals, and where they did not a note says so instead of a zero.
func Report(rf *ResultFile) *report.Result {
	r := &report.Result{Tool: "berun", Scenario: rf.Plan.Name, Duration: fmt.Sprintf("%gs", rf.Plan.DurationS)}
	r.Notes = append(r.Notes, fmt.Sprintf("run %s: status %s (details in the berun result file)", rf.RunID, rf.Status))
	psReport(r, rf)
	incastReport(r, rf)
	perftestReport(r, rf)
	fragsizeReport(r, rf)
	holReport(r, rf)
	msgrateReport(r, rf)
	pingpongReport(r, rf)
	peakReport(r, rf)
	mrcacheReport(r, rf)
	flowsReport(r, rf)
	failoverReport(r, rf)
	counterTotals(r, rf)
	for _, h := range rf.Hosts {
		for _, ro := range h.Roles {
			keys := make([]string, 0, len(ro.Metrics))
			for k := range ro.Metrics {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				r.Add("role/"+ro.ID+"/"+k, ro.Metrics[k], "")
			}
			if ro.Error != "" {
				r.Notes = append(r.Notes, fmt.Sprintf("%s on %s: %s: %s", ro.ID, h.Name, ro.Status, ro.Error))
			}
		}
	}
	for _, f := range rf.Failures {
		r.Notes = append(r.Notes, fmt.Sprintf("host %s failed (%s): %s", f.Host, f.Phase, f.Reason))
	}
	return r
}

func psReport(r *report.Result, rf *ResultFile) {
	user, fetch, iter := metrics.New(3), metrics.New(3), metrics.New(3)
	push, fetchPhase, pushPhase := metrics.New(3), metrics.New(3), metrics.New(3)
	trainers := 0
	var servers, clients int
	var rxBytes, serverRx, users, iters, sent, got float64
	measured := 0.0
	// With workload.rpc: the clients' RPC layers, reduced to besim's
	// rpc/* metrics and table (ps.ReduceRPC).
	var (
		rpcStats    *ps.RPCStats
		rpcConf     rpc.Config
		replicas    int
		usersFailed int64
	)
	for _, h := range rf.Hosts {
		for _, ro := range h.Roles {
			switch ro.Role {
			case "ps-server":
				servers++
				serverRx += ro.Metrics["rx_bytes"]
			case "ps-client":
				clients++
				sent += ro.Metrics["requests"]
				got += ro.Metrics["responses"]
				users += ro.Metrics["user_requests"]
				iters += ro.Metrics["iterations"]
				var d role.PSDetail
				if len(ro.Detail) == 0 || json.Unmarshal(ro.Detail, &d) != nil || d.User == nil || d.Fetch == nil || d.Iteration == nil {
					r.Notes = append(r.Notes, fmt.Sprintf("%s: no latency histograms in its result (%s)", ro.ID, ro.Status))
					continue
				}
				// Same digits on both sides by construction; a mismatch is a
				// corrupt result, reported rather than merged.
				if ro.Metrics["trainer"] == 1 {
					trainers++
				}
				for _, m := range [][2]*metrics.Histogram{{user, d.User}, {fetch, d.Fetch}, {iter, d.Iteration},
					{push, d.Push}, {fetchPhase, d.FetchPhase}, {pushPhase, d.PushPhase}} {
					if m[1] == nil {
						continue // a result from before push and the phases were recorded
					}
					if err := m[0].Merge(m[1]); err != nil {
						r.Notes = append(r.Notes, fmt.Sprintf("%s: %v", ro.ID, err))
					}
				}
				rxBytes += float64(d.MeasuredRxBytes)
				measured = max(measured, d.MeasuredS)
				if d.RPC != nil && d.RPCConfig != nil {
					if rpcStats == nil {
						rpcStats, rpcConf, replicas = &ps.RPCStats{}, *d.RPCConfig, d.Replicas
					}
					rpcStats.Add(d.RPC)
					usersFailed += d.UsersFailed
				}
			}
		}
	}
	if servers == 0 && clients == 0 {
		return
	}
	r.Add("workload/servers", float64(servers), "")
	tbl := report.Table{Name: "ps", Title: "Parameter-server cluster on real hosts: latency of user requests, fetch sub-requests, pushes, training iterations and their whole fetch and push phases",
		KeyName: "what", Columns: []report.Column{{Name: "count"}, {Name: "completed in interval"}, {Name: "mean", Unit: "us"},
			{Name: "P50", Unit: "us"}, {Name: "P99", Unit: "us"}, {Name: "max", Unit: "us"}}}
	type row struct {
		name string
		h    *metrics.Histogram
		done float64
	}
	rows := []row{{"user", user, users}, {"fetch", fetch, -1}, {"push", push, -1}, {"iteration", iter, iters}}
	if trainers > 0 {
		rows = append(rows, row{"fetch_phase", fetchPhase, -1}, row{"push_phase", pushPhase, -1})
	}
	for _, x := range rows {
		r.Add(x.name+"/count", float64(x.h.Count()), "")
		r.Add(x.name+"/p50", float64(x.h.P50())/1e3, "us")
		r.Add(x.name+"/p99", float64(x.h.P99())/1e3, "us")
		tbl.AddRow(x.name, float64(x.h.Count()), x.done, x.h.Mean()/1e3, float64(x.h.P50())/1e3, float64(x.h.P99())/1e3, float64(x.h.Max())/1e3)
	}
	if measured > 0 {
		r.Add("client/goodput", rxBytes*8/measured/1e9, "Gbps")
	}
	if rf.Plan.DurationS > 0 {
		r.Add("server/goodput", serverRx*8/rf.Plan.DurationS/1e9, "Gbps")
	}
	r.Add("requests/sent", sent, "")
	r.Add("requests/answered", got, "")
	r.Tables = append(r.Tables, tbl)
	if rpcStats != nil {
		ps.ReduceRPC(r, rpcStats, rpcConf, replicas, usersFailed)
	}
	r.Notes = append(r.Notes, "server/goodput counts every request byte the servers received over the whole run (besim: pushes in the measured interval)")
}

// incastReport reduces incast-worker results (merged pull-latency
// histograms, goodput) and the victim's tcp-bulk sink to besim's
// incast-pull metric names.
func incastReport(r *report.Result, rf *ResultFile) {
	lat := metrics.New(3)
	var servers, workers int
	var pulls, rxBytes, measured float64
	victim, haveVictim := 0.0, false
	for _, h := range rf.Hosts {
		for _, ro := range h.Roles {
			switch {
			case ro.Role == "incast-server":
				servers++
			case ro.Role == "incast-worker":
				workers++
				var d role.IncastDetail
				if len(ro.Detail) == 0 || json.Unmarshal(ro.Detail, &d) != nil || d.Latency == nil {
					r.Notes = append(r.Notes, fmt.Sprintf("%s: no latency histogram in its result (%s)", ro.ID, ro.Status))
					continue
				}
				if err := lat.Merge(d.Latency); err != nil {
					r.Notes = append(r.Notes, fmt.Sprintf("%s: %v", ro.ID, err))
				}
				pulls += float64(d.Pulls)
				rxBytes += float64(d.MeasuredRxBytes)
				measured = max(measured, d.MeasuredS)
			case ro.ID == "victim-rx" && ro.Role == "tcp-bulk":
				victim, haveVictim = ro.Metrics["throughput_gbps"], true
			}
		}
	}
	if servers == 0 && workers == 0 {
		return
	}
	r.Add("workload/servers", float64(servers), "")
	r.Add("pull/count", pulls, "")
	r.Add("pull/mean", lat.Mean()/1e3, "us")
	r.Add("pull/p50", float64(lat.P50())/1e3, "us")
	r.Add("pull/p99", float64(lat.P99())/1e3, "us")
	r.Add("pull/max", float64(lat.Max())/1e3, "us")
	if measured > 0 {
		r.Add("worker/goodput", rxBytes*8/measured/1e9, "Gbps")
	}
	if haveVictim {
		r.Add("victim/goodput", victim, "Gbps")
		r.Notes = append(r.Notes, "victim/goodput is a kernel TCP stream on real hosts (besim: a perftest-like RC WRITE stream), over the whole run")
	}
	r.Tables = append(r.Tables, lat.Table("pull_latency", "ns"))
}

// perftestReport reduces perftest-server results to besim's table2 metric
// names, perftest/KEY/gbps, where KEY is the hosts' link ("100G/4096B/rc"):
// the same name as besim's point when the link is one of the scenario's
// points, a name besim does not have (and compare lists as one-sided)
// when it is not.
func perftestReport(r *report.Result, rf *ResultFile) {
	for _, h := range rf.Hosts {
		for _, ro := range h.Roles {
			if ro.Role != "perftest-server" {
				continue
			}
			var d role.PerftestDetail
			if len(ro.Detail) == 0 || json.Unmarshal(ro.Detail, &d) != nil {
				r.Notes = append(r.Notes, fmt.Sprintf("%s: no perftest measurements in its result (%s)", ro.ID, ro.Status))
				continue
			}
			link := fmt.Sprintf("%s/%dB", perftest.RateKey(d.RateBps), d.PathMTU)
			if d.Match != "" {
				r.Notes = append(r.Notes, fmt.Sprintf("perftest: %s to %s over %s (GID index %d): the link is the scenario's point %s", ro.ID, h.Name, d.Device, d.GIDIndex, d.Match))
			} else {
				r.Notes = append(r.Notes, fmt.Sprintf("perftest: the hosts' link %s is none of the scenario's points (%s): its metrics have no besim counterpart, and besim's points none on hardware", link, strings.Join(d.Points, ", ")))
			}
			tbl := report.Table{Name: "perftest", Title: "perftest (ib_send_bw-like) between two real hosts, measured against the link's payload line rate",
				KeyName: "rate/MTU/transport", Columns: []report.Column{
					{Name: "measured", Unit: "Gbps"}, {Name: "line", Unit: "Gbps"}, {Name: "measured/line", Unit: "%"},
					{Name: "msg rate", Unit: "Mmsg/s"}, {Name: "pkt rate", Unit: "Mpkt/s"}, {Name: "message", Unit: "B"},
				}}
			for _, run := range d.Runs {
				if run.Error != "" {
					r.Notes = append(r.Notes, fmt.Sprintf("perftest %s: %s", run.Key, run.Error))
					continue
				}
				r.Add(perftest.Metric(run.Key), run.Gbps, "Gbps")
				vsLine := -1.0
				if run.LineGbps > 0 {
					vsLine = 100 * run.Gbps / run.LineGbps
				}
				tbl.AddRow(run.Key, run.Gbps, run.LineGbps, vsLine, run.MsgRate/1e6, run.PktRate/1e6, float64(run.Message))
			}
			if len(tbl.Rows) > 0 {
				r.Tables = append(r.Tables, tbl)
			}
		}
	}
}

// fragsizeReport reduces a fragsize-receiver's per-fragment goodput to
// besim's fig10 names, fragsize/RATE/SIZE/gbps, RATE the link's (the
// receiver's port's active rate, or its rate parameter), and a table.
// besim's efficiency (goodput over its NIC model's payload line rate) has
// no hardware counterpart here.
func fragsizeReport(r *report.Result, rf *ResultFile) {
	for _, h := range rf.Hosts {
		for _, ro := range h.Roles {
			if ro.Role != "fragsize-receiver" {
				continue
			}
			type pt struct {
				size int
				key  string
			}
			var pts []pt
			for k := range ro.Metrics {
				if sz, ok := strings.CutPrefix(k, "gbps/"); ok {
					if n, err := strconv.Atoi(strings.TrimSuffix(sz, "B")); err == nil {
						pts = append(pts, pt{n, sz})
					}
				}
			}
			if len(pts) == 0 || ro.Metrics["rate_bps"] <= 0 {
				r.Notes = append(r.Notes, fmt.Sprintf("%s: no fragsize measurements in its result (%s)", ro.ID, ro.Status))
				continue
			}
			sort.Slice(pts, func(i, j int) bool { return pts[i].size < pts[j].size })
			rate := fragsize.RateKey(int64(ro.Metrics["rate_bps"]))
			tbl := report.Table{Name: "fragsize", KeyName: "rate/fragment",
				Title:   fmt.Sprintf("Goodput of one engine against the fragment size between two real hosts (%s, receiver %s)", rate, h.Name),
				Columns: []report.Column{{Name: "goodput", Unit: "Gbps"}, {Name: "messages"}}}
			for _, p := range pts {
				key := rate + "/" + p.key
				g := ro.Metrics["gbps/"+p.key]
				r.Add("fragsize/"+key+"/gbps", g, "Gbps")
				tbl.AddRow(key, g, ro.Metrics["messages/"+p.key])
			}
			r.Tables = append(r.Tables, tbl)
			r.Notes = append(r.Notes, fmt.Sprintf("fragsize: the receiver's message bytes in each fragment size's measured interval of %gs, on a %s link", ro.Metrics["measure_s"], rate))
		}
	}
}

// holReport reduces a hol-receiver's per-point latency and goodput with
// besim's own reduction (hol.Reduce): the same hol/FLOWS/SETTING/mean and
// .../p99 names and the same table, its points read back from the role's
// metrics (mean_us/KEY, ...); the large-flow counts are those the role
// measured, in order.
func holReport(r *report.Result, rf *ResultFile) {
	for _, h := range rf.Hosts {
		for _, ro := range h.Roles {
			if ro.Role != "hol-receiver" {
				continue
			}
			var flows []int
			for k := range ro.Metrics {
				if key, ok := strings.CutPrefix(k, "mean_us/"); ok {
					if n, ok := strings.CutSuffix(key, "/fragmented"); ok {
						if v, err := strconv.Atoi(n); err == nil {
							flows = append(flows, v)
						}
					}
				}
			}
			if len(flows) == 0 {
				r.Notes = append(r.Notes, fmt.Sprintf("%s: no hol measurements in its result (%s)", ro.ID, ro.Status))
				continue
			}
			sort.Ints(flows)
			s := &scenarios.Scenario{Benchmark: &scenarios.Benchmark{Kind: scenarios.HOL, LargeFlows: flows,
				Message: scenarios.Size(ro.Metrics["small_bytes"]), LargeMessage: scenarios.Size(ro.Metrics["large_bytes"]),
				Fragment: scenarios.Size(ro.Metrics["fragment_bytes"]), Interval: scenarios.Duration(ro.Metrics["interval_s"] * float64(sim.Second))}}
			var pts []hol.Point
			for _, n := range flows {
				for _, set := range []string{"fragmented", "whole"} {
					k := strconv.Itoa(n) + "/" + set
					m := ro.Metrics
					pts = append(pts, hol.Point{LargeFlows: n, Fragmented: set == "fragmented", MeanUs: m["mean_us/"+k], P50Us: m["p50_us/"+k],
						P99Us: m["p99_us/"+k], Samples: int(m["samples/"+k]), LargeGbps: m["large_gbps/"+k]})
				}
			}
			hol.Reduce(s, pts, r)
			r.Notes = append(r.Notes, fmt.Sprintf("hol: the receiver's latencies in each point's measured interval of %gs; the one-way latency on real hosts is the receiver's clock minus the sender's (each agent's view of the synchronized start), so across hosts it carries the error of the clock-offset estimate in the result file", ro.Metrics["measure_s"]))
		}
	}
}

// msgrateReport reduces a msgrate-sender's (or, through the core, a
// msgrate-core-target's) per-point message rates with besim's own
// reduction (msgrate.Reduce): the same msgrate/td|no_td/QPS/mmps names
// and table, the points read back from the role's metrics (mmps/KEY). besim's shared-doorbell QPs and lock time are the simulated
// provider's internals, not measured on hardware: -1.
func msgrateReport(r *report.Result, rf *ResultFile) {
	for _, h := range rf.Hosts {
		for _, ro := range h.Roles {
			core := ro.Role == "msgrate-core-target"
			if ro.Role != "msgrate-sender" && !core {
				continue
			}
			qset := map[int]bool{}
			tdset := map[bool]bool{}
			for k := range ro.Metrics {
				key, ok := strings.CutPrefix(k, "mmps/")
				if !ok {
					continue
				}
				td, q, ok := strings.Cut(key, "/")
				n, err := strconv.Atoi(q)
				if !ok || err != nil || td != "td" && td != "no_td" {
					continue
				}
				qset[n], tdset[td == "td"] = true, true
			}
			if len(qset) == 0 {
				r.Notes = append(r.Notes, fmt.Sprintf("%s: no msgrate measurements in its result (%s)", ro.ID, ro.Status))
				continue
			}
			b := &scenarios.Benchmark{Kind: scenarios.MsgRate, Threads: int(ro.Metrics["threads"]), Message: scenarios.Size(ro.Metrics["message_bytes"])}
			if core {
				b.Through = scenarios.ThroughCore
			}
			for q := range qset {
				b.QPs = append(b.QPs, q)
			}
			sort.Ints(b.QPs)
			for _, td := range []bool{false, true} {
				if tdset[td] {
					b.ThreadDomains = append(b.ThreadDomains, td)
				}
			}
			pts := make([][]msgrate.Point, len(b.QPs))
			for i, q := range b.QPs {
				for _, td := range b.ThreadDomains {
					k := "no_td/"
					if td {
						k = "td/"
					}
					v, ok := ro.Metrics["mmps/"+k+strconv.Itoa(q)]
					if !ok {
						v = -1
					}
					pts[i] = append(pts[i], msgrate.Point{Mmps: v, Shared: -1, LockPct: -1})
				}
			}
			msgrate.Reduce(&scenarios.Scenario{Benchmark: b}, pts, r)
			if core {
				r.Notes = append(r.Notes, fmt.Sprintf("msgrate through the core: the messages the target received in each point's measured interval of %gs, as besim's server counts them; the shared-doorbell QPs and the CPU time in doorbell locks are the simulated provider's and are not measured on hardware (-1)", ro.Metrics["measure_s"]))
				continue
			}
			r.Notes = append(r.Notes, fmt.Sprintf("msgrate: the RDMA WRITEs the sender's I/O threads posted in each point's measured interval of %gs; the shared-doorbell QPs and the CPU time in doorbell locks are the simulated provider's and are not measured on hardware (-1)", ro.Metrics["measure_s"]))
		}
	}
}

// flowsReport reduces the flow roles of a flow scenario to besim's names:
// flow/NAME/goodput (Gbps, the receiver's, measured as besim does),
// flows/sent and flows/delivered (bytes over all flows), and a flows table
// with each flow's completion time (sized flows) and whether it completed.
func flowsReport(r *report.Result, rf *ResultFile) {
	type flow struct {
		name     string
		tx, rx   *RoleResult
		txh, rxh string
	}
	byName := map[string]*flow{}
	var order []string
	for _, h := range rf.Hosts {
		for i := range h.Roles {
			ro := &h.Roles[i]
			if ro.Role != "flow-sender" && ro.Role != "flow-receiver" {
				continue
			}
			id := strings.TrimSuffix(strings.TrimSuffix(ro.ID, "-tx"), "-rx")
			f := byName[id]
			if f == nil {
				f = &flow{}
				byName[id] = f
				order = append(order, id)
			}
			if ro.Role == "flow-sender" {
				f.tx, f.txh = ro, h.Name
			} else {
				f.rx, f.rxh = ro, h.Name
			}
		}
	}
	if len(order) == 0 {
		return
	}
	// In plan order (f0, f1, ...), besim's flow order.
	sort.Slice(order, func(i, j int) bool {
		a, _ := strconv.Atoi(strings.TrimPrefix(order[i], "f"))
		b, _ := strconv.Atoi(strings.TrimPrefix(order[j], "f"))
		return a < b
	})
	tbl := report.Table{Name: "flows", Title: "Flows (kernel TCP between real hosts)", KeyName: "flow", Columns: []report.Column{
		{Name: "sent", Unit: "KB"}, {Name: "delivered", Unit: "KB"},
		{Name: "goodput", Unit: "Gbps"}, {Name: "FCT", Unit: "us"}, {Name: "completed"}}}
	var sent, delivered float64
	incomplete := 0
	for _, id := range order {
		f := byName[id]
		if f.tx == nil || f.rx == nil || f.tx.Metrics == nil || f.rx.Metrics == nil {
			r.Notes = append(r.Notes, fmt.Sprintf("flow %s: a role's result is missing", id))
			continue
		}
		name := id
		var d struct {
			Flow string `json:"flow"`
		}
		if json.Unmarshal(f.tx.Detail, &d) == nil && d.Flow != "" {
			name = d.Flow
		}
		tx, rx := f.tx.Metrics, f.rx.Metrics
		sent += tx["bytes"]
		delivered += rx["bytes"]
		fct := -1.0
		if tx["completed"] == 1 && tx["size"] > 0 {
			fct = tx["fct_s"] * 1e6
		}
		if tx["completed"] != 1 {
			incomplete++
		}
		r.Add("flow/"+name+"/goodput", rx["goodput_gbps"], "Gbps")
		tbl.AddRow(name+" ("+f.txh+"->"+f.rxh+")", tx["bytes"]/1e3, rx["bytes"]/1e3, rx["goodput_gbps"], fct, tx["completed"])
	}
	r.Add("flows/sent", sent, "bytes")
	r.Add("flows/delivered", delivered, "bytes")
	r.Add("flows/incomplete", float64(incomplete), "")
	r.Tables = append(r.Tables, tbl)
	r.Notes = append(r.Notes, "flows: each flow is a kernel TCP stream between the hosts (besim's raw, rc or ud flows are not): TCP's own congestion control paces it, and it rides the scenario's priority only where the hosts map TCP to it; goodput is the receiver's bytes after the first message over the first to the last arrival (besim's), FCT from the flow's start to the receiver's acknowledgement of every byte")
}

// counterTotals sums NIC counter deltas over hosts into the names besim
// uses, when at least one host read a matching counter.
func counterTotals(r *report.Result, rf *ResultFile) {
	type total struct {
		name, unit string
		match      func(k string) bool
		sum        float64
		seen       bool
	}
	ts := []*total{
		{name: "pfc/frames_tx", unit: "frames", match: func(k string) bool {
			return strings.Contains(k, "tx") && strings.Contains(k, "pause") && !strings.Contains(k, "duration")
		}},
		{name: "cnp/sent", match: func(k string) bool { return strings.HasSuffix(k, "np_cnp_sent") }},
		{name: "cnp/handled", match: func(k string) bool { return strings.HasSuffix(k, "rp_cnp_handled") }},
		{name: "nak/out_of_sequence", match: func(k string) bool { return strings.HasSuffix(k, "out_of_sequence") }},
	}
	var absent []string
	for _, h := range rf.Hosts {
		if h.Counters == nil {
			continue
		}
		var c counters.Report
		if json.Unmarshal(*h.Counters, &c) != nil {
			continue
		}
		for k, v := range c.Delta {
			for _, t := range ts {
				if t.match(k) {
					t.sum += float64(v)
					t.seen = true
				}
			}
		}
		srcs := make([]string, 0, len(c.Absent))
		for s := range c.Absent {
			srcs = append(srcs, s)
		}
		sort.Strings(srcs)
		for _, s := range srcs {
			absent = append(absent, fmt.Sprintf("%s: %s: %s", h.Name, s, c.Absent[s]))
		}
	}
	for _, t := range ts {
		if t.seen {
			r.Add(t.name, t.sum, t.unit)
		} else {
			r.Notes = append(r.Notes, t.name+": absent (no host had a matching NIC counter)")
		}
	}
	for _, a := range absent {
		r.Notes = append(r.Notes, "counters absent: "+a)
	}
}
