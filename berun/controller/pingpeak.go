package controller

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/besim/besim/berun/role"
	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/workloads/peak"
	"github.com/besim/besim/workloads/pingpong"
)

// pingpongReport reduces a pingpong-sender's per-size latencies with
// besim's own reduction (pingpong.Add): the same
// pingpong/RATE/MTU/SIZE/{mean,p99,oneway_mean}_us names and the same
// table, the sizes read back from the role's metrics (mean_us/SIZE, ...).
// The point is the smaller rate and MTU the sender and the server report
// (over verbs their ports', the path the core's QPs take).
func pingpongReport(r *report.Result, rf *ResultFile) {
	var srv map[string]float64
	for _, h := range rf.Hosts {
		for _, ro := range h.Roles {
			if ro.Role == "pingpong-server" && ro.Metrics != nil {
				srv = ro.Metrics
			}
		}
	}
	for _, h := range rf.Hosts {
		for _, ro := range h.Roles {
			if ro.Role != "pingpong-sender" {
				continue
			}
			m := ro.Metrics
			var sizes []int
			for k := range m {
				if sz, ok := strings.CutPrefix(k, "mean_us/"); ok {
					if n, err := strconv.Atoi(strings.TrimSuffix(sz, "B")); err == nil {
						sizes = append(sizes, n)
					}
				}
			}
			if len(sizes) == 0 || m["rate_bps"] <= 0 || m["mtu"] <= 0 {
				r.Notes = append(r.Notes, fmt.Sprintf("%s: no pingpong measurements in its result (%s)", ro.ID, ro.Status))
				continue
			}
			sort.Ints(sizes)
			pt := pingpong.Point{Rate: int64(m["rate_bps"]), MTU: int(m["mtu"])}
			if srv != nil && srv["rate_bps"] > 0 && srv["mtu"] > 0 {
				pt.Rate, pt.MTU = min(pt.Rate, int64(srv["rate_bps"])), min(pt.MTU, int(srv["mtu"]))
			}
			b := &scenarios.Benchmark{Kind: scenarios.PingPong, Response: scenarios.Size(m["response_bytes"])}
			var st []pingpong.Stats
			unanswered := 0.0
			for _, n := range sizes {
				b.Messages = append(b.Messages, scenarios.Size(n))
				k := strconv.Itoa(n) + "B"
				st = append(st, pingpong.Stats{Message: n, RTTMean: m["mean_us/"+k], RTTP50: m["p50_us/"+k], RTTP99: m["p99_us/"+k],
					Max: m["max_us/"+k], OneWayMean: m["oneway_mean_us/"+k], OneWayP99: m["oneway_p99_us/"+k], Samples: int(m["samples/"+k])})
				unanswered += m["requests/"+k] - m["responses/"+k]
			}
			s := &scenarios.Scenario{Benchmark: b}
			tbl := pingpong.Table(s)
			pingpong.Add(s, pt, st, &tbl, r)
			r.Tables = append(r.Tables, tbl)
			how := "kernel TCP (one connection)"
			if m["verbs"] == 1 {
				how = "the ByteExpress core on the hosts' RDMA devices (one socket)"
			}
			r.Notes = append(r.Notes, fmt.Sprintf("pingpong: one message outstanding over %s, each size measured for %gs at the link %s/%dB; the round trip is the sender's clock, the one-way time the server's arrival clock minus the sender's send clock less the offset of the two clocks the sender estimated from %g probes of %g-byte messages both ways (NTP's rule on the fastest, a %.2f us round trip: it assumes a small message takes as long each way, so a response-sized message's one-way time is half its round trip by construction)", how, m["measure_s"], pingpong.RateKey(pt.Rate), pt.MTU, m["offset_probes"], m["response_bytes"], m["offset_rtt_us"]))
			if m["offset_probes"] == 0 {
				r.Notes = append(r.Notes, "pingpong: no clock-offset probe was answered (or the response has no room for the server's stamp): the one-way times are not measured (-1)")
			}
			if unanswered != 0 {
				r.Notes = append(r.Notes, fmt.Sprintf("pingpong: %g messages unanswered", unanswered))
			}
		}
	}
}

// peakReport reduces a peak run with besim's own reduction (peak.Add):
// the peak-receiver's ByteExpress goodput and the peak-perftest-server's
// RC and UD goodput become peak/RATE/MTU/{be,rc,ud}/gbps and the peak
// table, RATE/MTU the hosts' link (the perftest's path, the smaller of the
// two ports' rate and MTU, or else the ByteExpress receiver's port). The
// paper's Table 2 columns are besim's: -1 here.
func peakReport(r *report.Result, rf *ResultFile) {
	var be, perf *RoleResult
	for i := range rf.Hosts {
		for j := range rf.Hosts[i].Roles {
			switch ro := &rf.Hosts[i].Roles[j]; ro.Role {
			case "peak-receiver":
				be = ro
			case "peak-perftest-server":
				perf = ro
			}
		}
	}
	if be == nil && perf == nil {
		return
	}
	m := peak.Measured{BE: -1, RC: -1, UD: -1, BEMessages: -1}
	var pt peak.Point
	b := &scenarios.Benchmark{Kind: scenarios.Peak}
	if be != nil {
		x := be.Metrics
		k := strconv.Itoa(int(x["fragment_bytes"])) + "B"
		if g, ok := x["gbps/"+k]; ok && x["rate_bps"] > 0 {
			m.BE, m.BEMessages = g, int(x["messages/"+k])
			pt = peak.Point{Rate: int64(x["rate_bps"]), MTU: int(x["path_mtu"])}
		} else {
			r.Notes = append(r.Notes, fmt.Sprintf("%s: no ByteExpress measurement in its result (%s)", be.ID, be.Status))
		}
		b.Message, b.Depth, b.Fragment = scenarios.Size(x["message_bytes"]), int(x["depth"]), scenarios.Size(x["fragment_bytes"])
	}
	if perf != nil {
		var d role.PerftestDetail
		if len(perf.Detail) == 0 || json.Unmarshal(perf.Detail, &d) != nil || d.RateBps <= 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("%s: no perftest measurements in its result (%s)", perf.ID, perf.Status))
		} else {
			link := peak.Point{Rate: d.RateBps, MTU: d.PathMTU}
			if pt != (peak.Point{}) && pt != link {
				r.Notes = append(r.Notes, fmt.Sprintf("peak: the ByteExpress receiver's port is %s, the perftest path %s: the row is named after the path", peak.Key(pt), peak.Key(link)))
			}
			pt = link
			for _, run := range d.Runs {
				g := run.Gbps
				if run.Error != "" {
					r.Notes = append(r.Notes, fmt.Sprintf("peak: perftest %s: %s", run.Key, run.Error))
					g = -1
				}
				if run.Transport == "ud" {
					m.UD = g
				} else {
					m.RC = g
				}
			}
		}
	}
	if pt == (peak.Point{}) {
		return
	}
	s := &scenarios.Scenario{Benchmark: b}
	tbl := peak.Table(s)
	peak.Add(pt, m, peak.Paper{RC: -1, UD: -1}, &tbl, r)
	r.Tables = append(r.Tables, tbl)
	measure := 0.0
	if be != nil {
		measure = be.Metrics["measure_s"]
	}
	r.Notes = append(r.Notes, fmt.Sprintf("peak: the series took turns on the link %s: ByteExpress first (the receiver's message bytes in a measured interval of %gs; besim counts the NIC's payload, under 0.1%% more), then each perftest transport with its default message (ib_send_bw-like SENDs); the paper's Table 2 columns are in besim's result (-1 here)", peak.Key(pt), measure))
}
