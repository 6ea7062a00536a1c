package incastsim

import (
	"fmt"
	"io"

	"github.com/besim/besim/experiment"
	"github.com/besim/besim/fabric"
	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/workloads/incast"
)

func init() { experiment.Register(string(scenarios.IncastPull), build) }

// FromScenario translates a workload scenario of kind incast-pull: the
// workload (incast.FromScenario) and the cluster it runs on.
func FromScenario(s *scenarios.Scenario) (Config, error) {
	sc, err := experiment.ClusterConfig(s)
	if err != nil {
		return Config{}, err
	}
	a, err := incast.FromScenario(s)
	if err != nil {
		return Config{}, err
	}
	return Config{Config: a, Cluster: sc}, nil
}

func build(s *scenarios.Scenario) (experiment.Runner, error) {
	if len(s.Faults) > 0 {
		return nil, s.Errorf("faults", "not supported by workload kind %s (use ps-cluster, failover, or flows)", s.Workload.Kind)
	}
	cfg, err := FromScenario(s)
	if err != nil {
		return nil, err
	}
	return &experiment.Workload{Scenario: s, Fabric: cfg.Cluster.Fabric,
		Summary: func(out io.Writer) error {
			win := "no software window"
			if c := cfg.Cluster.BE.Cwnd; c > 0 {
				win = fmt.Sprintf("send window %d B per engine", c)
			}
			_, err := fmt.Fprintf(out, "%s: valid (workload %s: %d workers pulling from %d servers, %s, fragments %d B; %s; %s measured after setup + %s warmup)\n",
				s.Name, s.Workload.Kind, cfg.Workers, cfg.Servers, win, cfg.Cluster.BE.FragSize, experiment.Topology(s), s.Duration, s.Workload.Warmup)
			return err
		},
		Simulate: func(r *report.Result) (uint64, error) {
			res, err := Run(cfg)
			if err != nil {
				return 0, err
			}
			Reduce(r, &cfg, res)
			return res.Events, nil
		},
		SimulateWatched: func(r *report.Result, w *experiment.Watch) (uint64, error) {
			c := cfg
			c.Watch = w
			res, err := Run(c)
			if err != nil {
				return 0, err
			}
			if !res.Stopped {
				Reduce(r, &c, res)
			}
			return res.Events, nil
		}}, nil
}

// Reduce adds one incast run's metrics, tables and notes to r.
func Reduce(r *report.Result, cfg *Config, res *Result) {
	t := res.Report.Totals
	cwnd := cfg.Cluster.BE.Cwnd
	r.Add("workload/servers", float64(cfg.Servers), "")
	r.Add("workload/window", float64(cwnd), "bytes")
	r.Add("workload/hosts", float64(res.Hosts), "")
	r.Add("pull/count", float64(res.Pulls), "")
	h := res.Latency
	r.Add("pull/mean", h.Mean()/1e3, "us")
	r.Add("pull/p50", float64(h.P50())/1e3, "us")
	r.Add("pull/p99", float64(h.P99())/1e3, "us")
	r.Add("pull/max", float64(h.Max())/1e3, "us")
	r.Add("worker/goodput", res.WorkerGbps, "Gbps")
	if cfg.Victim {
		r.Add("victim/goodput", res.VictimGbps, "Gbps")
		r.Add("victim/paused", res.VictimPaused.Seconds()*1e6, "us")
	}
	experiment.FabricMetrics(r, &t)
	r.Add("cpu/server_util", res.ServerCPU, "")
	r.Add("cpu/worker_util", res.WorkerCPU, "")
	r.Add("workload/setup", res.Setup.Seconds()*1e6, "us")
	if cfg.Sockets > 0 {
		// The multiplexing experiment (workload.sockets set): sockets,
		// engines and the NICs' QP context caches over the interval.
		// Left out otherwise, so earlier incast results keep their
		// metrics.
		rate := func(miss, hit uint64) float64 {
			if miss+hit == 0 {
				return 0
			}
			return float64(miss) / float64(miss+hit)
		}
		r.Add("workload/sockets", float64(cfg.Workers*cfg.Servers*cfg.Sockets), "")
		r.Add("workload/engines", float64(res.Engines), "")
		r.Add("nic/server_qp_cache_misses", float64(res.ServerQPMisses), "")
		r.Add("nic/server_qp_cache_miss_rate", rate(res.ServerQPMisses, res.ServerQPHits), "")
		r.Add("nic/worker_qp_cache_misses", float64(res.WorkerQPMisses), "")
		r.Add("nic/worker_qp_cache_miss_rate", rate(res.WorkerQPMisses, res.WorkerQPHits), "")
	}

	tbl := report.Table{Name: "incast", Title: "Synthetic incast (paper Figure 14): pulls, bandwidth, PFC", KeyName: "window",
		Columns: []report.Column{{Name: "servers"}, {Name: "pulls"}, {Name: "P50", Unit: "us"}, {Name: "P99", Unit: "us"},
			{Name: "worker bw", Unit: "Gbps"}, {Name: "victim bw", Unit: "Gbps"}, {Name: "PFC frames"}, {Name: "victim paused", Unit: "us"},
			{Name: "max shared", Unit: "KB"}, {Name: "server CPU", Unit: "%"}, {Name: "worker CPU", Unit: "%"}}}
	key := "none"
	if cwnd > 0 {
		key = scenarios.Size(cwnd).String()
	}
	tbl.AddRow(key, float64(cfg.Servers), float64(res.Pulls), float64(h.P50())/1e3, float64(h.P99())/1e3,
		res.WorkerGbps, res.VictimGbps, float64(t.PFCFramesTx), res.VictimPaused.Seconds()*1e6,
		float64(t.SharedUsedMax)/1e3, 100*res.ServerCPU, 100*res.WorkerCPU)
	r.Tables = append(r.Tables, tbl, h.Table("pull_latency", "ns"))

	// Switch ports that paused or were paused.
	ports := report.Table{Name: "ports", Title: "Switch ports with PFC activity (lossless priority)", KeyName: "port/prio",
		Columns: []report.Column{{Name: "pause tx"}, {Name: "pause rx"}, {Name: "paused", Unit: "us"},
			{Name: "max queue", Unit: "KB"}, {Name: "max ingress", Unit: "KB"}, {Name: "XOFF now", Unit: "KB"}}}
	var xoff int64
	for _, sw := range res.Report.Switches {
		for _, p := range sw.Ports {
			for _, q := range p.Prios {
				if q.PauseTx+q.PauseRx > 0 {
					ports.AddRow(fabric.QueueName(sw.Name, p.PeerName, q.Prio), float64(q.PauseTx), float64(q.PauseRx),
						q.PausedTime.Seconds()*1e6, float64(q.MaxQueue)/1e3, float64(q.Ingress.MaxBytes)/1e3, float64(q.XOFF)/1e3)
				}
			}
			if sw.Name == "leaf0" && p.PeerName == "spine0" {
				xoff = p.Prio(fabric.DefaultLosslessPrio).XOFF
			}
		}
	}
	if len(ports.Rows) > 0 {
		r.Tables = append(r.Tables, ports)
	}
	per := "a whole response"
	if cwnd > 0 {
		per = fmt.Sprintf("at most the %d B window", cwnd)
	}
	r.Notes = append(r.Notes, fmt.Sprintf("each of the %d servers has %s per worker outstanding (x %d requests); leaf0's XOFF threshold for its ingress from the spine is now %d B (dynamic: alpha x free buffer)",
		cfg.Servers, per, cfg.Outstanding, xoff))
	if t.PFCFramesTx > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("PFC fired: %d pause frames, %d XOFF events; the victim's uplink was paused %s", t.PFCFramesTx, t.XOFFEvents, res.VictimPaused))
	} else {
		r.Notes = append(r.Notes, fmt.Sprintf("PFC did not fire: the most shared buffer used was %d B", t.SharedUsedMax))
	}
	for _, e := range res.Errors {
		r.Notes = append(r.Notes, "error: "+e.Error())
	}
}
