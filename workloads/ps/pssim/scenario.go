package pssim

import (
	"fmt"
	"io"
	"math"

	"github.com/besim/besim/experiment"
	"github.com/besim/besim/metrics"
	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/workloads/ps"
)

func init() { experiment.Register(string(scenarios.PSCluster), build) }

// FromScenario translates a workload scenario of kind ps-cluster: the
// workload (ps.FromScenario), the cluster it runs on, its TCP model and
// its faults.
func FromScenario(s *scenarios.Scenario) (Config, error) {
	w := s.Workload
	sc, err := experiment.ClusterConfig(s)
	if err != nil {
		return Config{}, err
	}
	app, err := ps.FromScenario(s)
	if err != nil {
		return Config{}, err
	}
	cfg := Config{Config: app, Cluster: sc, Faults: experiment.FaultSpecs(s)}
	if s.Outputs.Series == scenarios.SeriesAll {
		// ps-cluster records no series under auto (its results stay as
		// they were); all adds its latency and memory series.
		cfg.Series = s.Outputs.SampleInterval.Time()
	}
	cfg.RPC = ps.RPCConfig(w)
	if t := w.TCP; t != nil && w.Transport == scenarios.OverTCP {
		cfg.TCP = experiment.TCPConfig(t)
	}
	return cfg, nil
}

func build(s *scenarios.Scenario) (experiment.Runner, error) {
	cfg, err := FromScenario(s)
	if err != nil {
		return nil, err
	}
	return &experiment.Workload{Scenario: s, Fabric: cfg.Cluster.Fabric,
		Summary: func(out io.Writer) error {
			p := &cfg
			shards := fmt.Sprintf("%d shards on %d servers", p.Shards, p.Servers)
			if p.Replicas > 1 {
				shards += fmt.Sprintf(" (%d replicas per shard group)", p.Replicas)
			}
			_, err := fmt.Fprintf(out, "%s: valid (workload ps-cluster: %s, %d rankers (fan-out %d), %d trainers (%d shards, compute %s), window %d B (0: none); %s; %s measured after setup + %s warmup)\n",
				s.Name, shards, p.Rankers, p.FanOut, p.Trainers, p.TrainerShards, p.Compute, p.Cluster.BE.Cwnd, experiment.Topology(s), s.Duration, s.Workload.Warmup)
			return err
		},
		Simulate: func(r *report.Result) (uint64, error) {
			res, err := Run(cfg)
			if err != nil {
				return 0, err
			}
			Reduce(r, &cfg, res)
			experiment.FaultsResult(r, res.Faults, res.Report.Totals)
			return res.Events, nil
		}}, nil
}

// Reduce adds one PS-cluster run's metrics and tables to r.
func Reduce(r *report.Result, cfg *Config, res *Result) {
	t := res.Report.Totals
	r.Add("workload/servers", float64(cfg.Servers), "")
	r.Add("workload/window", float64(cfg.Cluster.BE.Cwnd), "bytes")
	tbl := report.Table{Name: "ps", Title: "Parameter-server cluster (paper §2.1): latency of user requests, fetch sub-requests, pushes, training iterations and their whole fetch and push phases",
		KeyName: "what", Columns: []report.Column{{Name: "count"}, {Name: "completed in interval"}, {Name: "mean", Unit: "us"},
			{Name: "P50", Unit: "us"}, {Name: "P99", Unit: "us"}, {Name: "max", Unit: "us"}}}
	type row struct {
		name string
		h    interface {
			Count() int64
			Mean() float64
			P50() int64
			P99() int64
			Max() int64
		}
		done int64
	}
	rows := []row{{"user", res.UserLatency, res.UserRequests}, {"fetch", res.SubLatency, -1}, {"push", res.PushLatency, -1}, {"iteration", res.IterTime, res.Iterations}}
	if cfg.Trainers > 0 {
		rows = append(rows, row{"fetch_phase", res.FetchPhase, -1}, row{"push_phase", res.PushPhase, -1})
	}
	for _, h := range rows {
		r.Add(h.name+"/count", float64(h.h.Count()), "")
		r.Add(h.name+"/p50", float64(h.h.P50())/1e3, "us")
		r.Add(h.name+"/p99", float64(h.h.P99())/1e3, "us")
		tbl.AddRow(h.name, float64(h.h.Count()), float64(h.done), h.h.Mean()/1e3, float64(h.h.P50())/1e3, float64(h.h.P99())/1e3, float64(h.h.Max())/1e3)
	}
	if cfg.RankerRate > 0 {
		r.Add("user/dropped", float64(res.UserDropped), "")
	}
	r.Add("fetch/incomplete", float64(res.FetchIncomplete), "")
	r.Add("push/incomplete", float64(res.PushIncomplete), "")
	if n := res.FetchIncomplete + res.PushIncomplete; n > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d fetches and %d pushes sent in the interval were unanswered at its end; they are in the fetch and push rows at their age then, so those percentiles are lower bounds", res.FetchIncomplete, res.PushIncomplete))
	}
	r.Add("client/goodput", res.ClientGbps, "Gbps")
	r.Add("server/goodput", res.ServerGbps, "Gbps")
	experiment.FabricMetrics(r, &t)
	r.Add("pfc/frames_tx_interval", float64(res.PFCFramesInterval), "frames")
	r.Add("pfc/host_paused_interval", res.HostPausedInterval.Seconds()*1e6, "us")
	cpu := report.Table{Name: "cpu", Title: "Modelled CPU per host, % of one core, over the measured interval (the classes of the paper's Table 5)",
		KeyName: "hosts", Columns: []report.Column{{Name: "total", Unit: "%"}, {Name: "softirq", Unit: "%"}, {Name: "system", Unit: "%"}, {Name: "user", Unit: "%"}}}
	for i, g := range []string{"client", "server"} {
		c := res.CPU[i]
		cpu.AddRow(g+"s", c.Total(), c.Softirq, c.Sys, c.User)
		r.Add("cpu/"+g+"_total", c.Total(), "%")
		r.Add("cpu/"+g+"_softirq", c.Softirq, "%")
		r.Add("cpu/"+g+"_sys", c.Sys, "%")
		r.Add("cpu/"+g+"_user", c.User, "%")
	}
	transport := cfg.Transport
	if transport == "" {
		transport = ps.RDMA
	}
	if ts := res.TCP; ts != nil {
		r.Add("tcp/segments", float64(ts.TxSegments), "frames")
		r.Add("tcp/retransmits", float64(ts.Retransmits), "frames")
		r.Add("tcp/timeouts", float64(ts.Timeouts), "")
		r.Add("tcp/fast_retransmits", float64(ts.FastRetransmits), "")
		r.Add("tcp/loss", 100*float64(ts.Retransmits)/float64(max(ts.TxSegments, 1)), "%")
		tc := cfg.TCP
		transport = fmt.Sprintf("tcp (%s, MSS %d B, min RTO %v, delayed ACK %v)", tc.CC, tc.MSS, tc.MinRTO, tc.DelAck)
	} else {
		r.Add("rnic/naks", float64(res.NAKs), "")
		r.Add("rnic/timeouts", float64(res.RCTimeouts), "")
		r.Add("rnic/retransmits", float64(res.Retransmits), "packets")
	}
	r.Tables = append(r.Tables, tbl, cpu)
	if q := res.RPC; q != nil {
		ps.ReduceRPC(r, q, *cfg.RPC, cfg.Replicas, res.UsersFailed)
	}
	r.Notes = append(r.Notes, "transport: "+transport)
	r.Series = append(r.Series, Series(res)...)
	if res.Window > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("series: user and fetch latency (mean, P99) of the requests started in each %v window of the measured interval, at the window's start (simulated time from the start of the run; an empty window is missing); over RDMA, registered memory (bemalloc footprint, blocks, MRs) of client 0 and server 0 and over all hosts, sampled every %v from the start of the run (connection setup included)", res.Window, res.Window))
	}
	r.Notes = append(r.Notes, fmt.Sprintf("fetch sub-requests: one per distinct server of a request's shards (the \"fetch\" and \"push\" rows have no completion count); %d PFC frames", t.PFCFramesTx))
	for _, e := range res.Errors {
		r.Notes = append(r.Notes, "error: "+e.Error())
	}
}

// Series are the time series of a run with Config.Series (none without):
// user/mean, user/p99, fetch/mean, fetch/p99 per latency window (us, at
// the window's start), and over RDMA memory/{client0,server0}/{registered,
// blocks,mrs} and memory/all/{registered,blocks} (bytes or counts) per
// sample. Times are seconds of simulated time from the start of the run.
func Series(res *Result) []report.Series {
	var out []report.Series
	if res.Window > 0 {
		for _, w := range []struct {
			name string
			hs   []*metrics.Histogram
		}{{"user", res.UserWin}, {"fetch", res.FetchWin}} {
			mean := report.Series{Name: w.name + "/mean", Unit: "us"}
			p99 := report.Series{Name: w.name + "/p99", Unit: "us"}
			for i, h := range w.hs {
				t := (res.From + sim.Time(i)*res.Window).Seconds()
				m, q := math.NaN(), math.NaN()
				if h.Count() > 0 {
					m, q = h.Mean()/1e3, float64(h.P99())/1e3
				}
				mean.T, mean.V = append(mean.T, t), append(mean.V, m)
				p99.T, p99.V = append(p99.T, t), append(p99.V, q)
			}
			out = append(out, mean, p99)
		}
	}
	if len(res.Memory) == 0 {
		return out
	}
	type col struct {
		name, unit string
		v          func(m *MemSample) int64
	}
	cols := []col{
		{"memory/client0/registered", "bytes", func(m *MemSample) int64 { return m.Client.Footprint }},
		{"memory/client0/blocks", "", func(m *MemSample) int64 { return m.Client.BlocksLive }},
		{"memory/client0/mrs", "", func(m *MemSample) int64 { return m.Client.Registrations - m.Client.Deregistrations }},
		{"memory/server0/registered", "bytes", func(m *MemSample) int64 { return m.Server.Footprint }},
		{"memory/server0/blocks", "", func(m *MemSample) int64 { return m.Server.BlocksLive }},
		{"memory/server0/mrs", "", func(m *MemSample) int64 { return m.Server.Registrations - m.Server.Deregistrations }},
		{"memory/all/registered", "bytes", func(m *MemSample) int64 { return m.TotalBytes }},
		{"memory/all/blocks", "", func(m *MemSample) int64 { return m.TotalBlocks }},
	}
	for _, c := range cols {
		ser := report.Series{Name: c.name, Unit: c.unit}
		for i := range res.Memory {
			m := &res.Memory[i]
			ser.T, ser.V = append(ser.T, m.At.Seconds()), append(ser.V, float64(c.v(m)))
		}
		out = append(out, ser)
	}
	return out
}
