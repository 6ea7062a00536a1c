package experiment

import (
	"fmt"
	"io"

	"github.com/besim/besim/fabric"
	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/simhost"
	"github.com/besim/besim/tcpsim"
	"github.com/besim/besim/workloads"
)

// workloadSim is a workload scenario (section workload): the ByteExpress
// core over simhost, driven by package workloads.
type workloadSim struct {
	s       *scenarios.Scenario
	fabric  fabric.Config // the fabric Explain describes
	summary func(out io.Writer) error
	run     func(r *report.Result) (events uint64, err error)
}

func init() {
	Register(string(scenarios.IncastPull), buildIncast)
	Register(string(scenarios.PSCluster), buildPS)
	Register(string(scenarios.Failover), buildFailover)
}

// IncastConfig translates a workload scenario of kind incast-pull.
func IncastConfig(s *scenarios.Scenario) (workloads.IncastConfig, error) {
	w := s.Workload
	sc, err := clusterConfig(s)
	if err != nil {
		return workloads.IncastConfig{}, err
	}
	cfg := workloads.IncastConfig{Cluster: sc, HostsPerLeaf: w.HostsPerLeaf, Workers: w.Workers, Servers: w.Servers,
		Request: int(w.Request), Outstanding: w.Outstanding, Rate: w.Rate,
		Victim: w.VictimOn(), VictimMessage: int(w.VictimMessage), VictimWindow: w.VictimDepth,
		BandwidthFlows: w.BandwidthFlows, Warmup: w.Warmup.Time(), Measure: s.Duration.Time(), Seed: s.Seed,
		Response: sizeDist(w.Response)}
	if err := cfg.Response.Prepare(); err != nil {
		return cfg, s.Errorf("workload.response", "%v", err)
	}
	return cfg, nil
}

func buildIncast(s *scenarios.Scenario) (Runner, error) {
	if len(s.Faults) > 0 {
		return nil, s.Errorf("faults", "not supported by workload kind %s (use ps-cluster, failover, or flows)", s.Workload.Kind)
	}
	cfg, err := IncastConfig(s)
	if err != nil {
		return nil, err
	}
	t := s.Fabric.Topology
	return &workloadSim{s: s, fabric: cfg.Cluster.Fabric,
		summary: func(out io.Writer) error {
			win := "no software window"
			if c := cfg.Cluster.BE.Cwnd; c > 0 {
				win = fmt.Sprintf("send window %d B per engine", c)
			}
			_, err := fmt.Fprintf(out, "%s: valid (workload %s: %d workers pulling from %d servers, %s, fragments %d B; leaf-spine of %d leaves x %d hosts, 1 spine; %s measured after setup + %s warmup)\n",
				s.Name, s.Workload.Kind, cfg.Workers, cfg.Servers, win, cfg.Cluster.BE.FragSize, t.Leaves, t.HostsPerLeaf, s.Duration, s.Workload.Warmup)
			return err
		},
		run: func(r *report.Result) (uint64, error) {
			res, err := workloads.RunIncast(cfg)
			if err != nil {
				return 0, err
			}
			IncastResult(r, &cfg, res)
			return res.Events, nil
		}}, nil
}

func buildPS(s *scenarios.Scenario) (Runner, error) {
	cfg, err := PSConfig(s)
	if err != nil {
		return nil, err
	}
	cfg.Faults = FaultSpecs(s)
	t := s.Fabric.Topology
	return &workloadSim{s: s, fabric: cfg.Cluster.Fabric,
		summary: func(out io.Writer) error {
			p := &cfg
			_, err := fmt.Fprintf(out, "%s: valid (workload ps-cluster: %d shards on %d servers, %d rankers (fan-out %d), %d trainers (%d shards, compute %s), window %d B (0: none); leaf-spine of %d leaves x %d hosts, 1 spine; %s measured after setup + %s warmup)\n",
				s.Name, p.Shards, p.Servers, p.Rankers, p.FanOut, p.Trainers, p.TrainerShards, p.Compute, p.Cluster.BE.Cwnd, t.Leaves, t.HostsPerLeaf, s.Duration, s.Workload.Warmup)
			return err
		},
		run: func(r *report.Result) (uint64, error) {
			res, err := workloads.RunPS(cfg)
			if err != nil {
				return 0, err
			}
			PSResult(r, &cfg, res)
			FaultsResult(r, res.Faults, res.Report.Totals)
			return res.Events, nil
		}}, nil
}

func buildFailover(s *scenarios.Scenario) (Runner, error) {
	cfg, err := FailoverConfig(s)
	if err != nil {
		return nil, err
	}
	return &workloadSim{s: s, fabric: cfg.Cluster.Fabric,
		summary: func(out io.Writer) error {
			f := &cfg
			_, err := fmt.Fprintf(out, "%s: valid (workload failover: %d shards on replica pairs in two mini-pods, %d clients x %d fetches of %d B through the RPC layer (Tr %v), %d faults; %s simulated after setup)\n",
				s.Name, f.Shards, f.Clients, f.Outstanding, f.Response, f.RPC.RequestTimeout, len(f.Faults), s.Duration)
			return err
		},
		run: func(r *report.Result) (uint64, error) {
			res, err := workloads.RunFailover(cfg)
			if err != nil {
				return 0, err
			}
			FailoverResult(r, &cfg, res)
			FaultsResult(r, res.Faults, res.Report.Totals)
			return res.Events, nil
		}}, nil
}

func (w *workloadSim) Explain(out io.Writer) error {
	if err := w.summary(out); err != nil {
		return err
	}
	// The derived thresholds, headroom and BDP of the fabric the workload
	// runs on.
	net, err := fabric.New(sim.NewKernel(), w.fabric)
	if err != nil {
		return w.s.Errorf("fabric", "%v", err)
	}
	return net.WriteExplain(out)
}

func (w *workloadSim) Run() (*report.Result, error) {
	r := NewResult(w.s)
	ev, err := w.run(r)
	Events(r, ev)
	return r, Failed(r, err)
}

// IncastResult adds one incast run's metrics, tables and notes to r.
func IncastResult(r *report.Result, cfg *workloads.IncastConfig, res *workloads.IncastResult) {
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
	FabricMetrics(r, &t)
	r.Add("cpu/server_util", res.ServerCPU, "")
	r.Add("cpu/worker_util", res.WorkerCPU, "")
	r.Add("workload/setup", res.Setup.Seconds()*1e6, "us")

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
			for prio, q := range p.Prio {
				if q.PauseTx+q.PauseRx > 0 {
					ports.AddRow(fmt.Sprintf("%s->%s/%d", sw.Name, p.PeerName, prio), float64(q.PauseTx), float64(q.PauseRx),
						q.PausedTime.Seconds()*1e6, float64(q.MaxQueue)/1e3, float64(q.Ingress.MaxBytes)/1e3, float64(q.XOFF)/1e3)
				}
				if sw.Name == "leaf0" && p.PeerName == "spine0" && prio == fabric.DefaultLosslessPrio {
					xoff = q.XOFF
				}
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

// clusterConfig is the simhost configuration of a workload scenario.
func clusterConfig(s *scenarios.Scenario) (simhost.Config, error) {
	w := s.Workload
	fc, err := FabricConfig(s)
	if err != nil {
		return simhost.Config{}, err
	}
	nic, err := NICConfig(s, int64(s.Fabric.Links.HostRate))
	if err != nil {
		return simhost.Config{}, err
	}
	nic.SizesOnly = false
	sc := simhost.Config{Fabric: fc, NIC: nic, CPU: simhost.DefaultCPUCost()}
	sc.BE.Cwnd = int(w.Window.Bytes())
	sc.BE.FragSize = int(w.Fragment)
	sc.BE.UseSRQ = w.SRQ
	sc.BE.SQDepth, sc.BE.RecvBufSize = w.SQDepth, int(w.RecvBuffer)
	sc.BE.AckTimeout = uint8(w.AckTimeout) // validated 0..31
	return sc, nil
}

func sizeDist(d scenarios.SizeDist) workloads.SizeDist {
	out := workloads.SizeDist{Kind: workloads.DistKind(d.Dist), Size: int(d.Size), Min: int(d.Min),
		Max: int(d.Max), Mean: int(d.Mean), P99: int(d.P99)}
	for _, p := range d.CDF {
		out.CDF = append(out.CDF, workloads.CDFPoint{Size: int(p.Size), P: p.P.Float64()})
	}
	return out
}

// PSConfig translates a workload scenario of kind ps-cluster.
func PSConfig(s *scenarios.Scenario) (workloads.PSConfig, error) {
	w := s.Workload
	sc, err := clusterConfig(s)
	if err != nil {
		return workloads.PSConfig{}, err
	}
	cfg := workloads.PSConfig{Cluster: sc, HostsPerLeaf: w.HostsPerLeaf, Servers: w.Servers, Shards: w.Shards,
		Rankers: w.Rankers, Trainers: w.Trainers, Request: int(w.Request), FanOut: w.FanOut,
		RankerOutstanding: w.Outstanding, RankerRate: w.Rate, FetchResponse: sizeDist(w.Response),
		TrainerShards: w.TrainerShards, Warmup: w.Warmup.Time(), Measure: s.Duration.Time(), Seed: s.Seed}
	if w.Compute != nil {
		cfg.Compute = max(w.Compute.Time(), 1)
	}
	if w.Push != nil {
		cfg.PushSize = sizeDist(*w.Push)
	}
	cfg.Transport = string(w.Transport)
	if t := w.TCP; t != nil && w.Transport == scenarios.OverTCP {
		cfg.TCP = tcpsim.Config{CC: tcpsim.CC(t.CC), MSS: int(t.MSS), Prio: uint8(t.Prio), InitCwnd: t.InitCwnd,
			MinRTO: t.MinRTO.Time(), DelAck: t.DelayedAck.Time(), AckEvery: t.AckEvery, Threads: t.Threads,
			RxUsecs: t.RxUsecs.Time(), RxFrames: t.RxFrames, NoRxModeration: t.RxUsecs == 0}
	}
	for _, d := range []*workloads.SizeDist{&cfg.FetchResponse, &cfg.PushSize} {
		if err := d.Prepare(); err != nil {
			return cfg, s.Errorf("workload.response", "%v", err)
		}
	}
	return cfg, nil
}

// PSResult adds one PS-cluster run's metrics and table to r.
func PSResult(r *report.Result, cfg *workloads.PSConfig, res *workloads.PSResult) {
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
	FabricMetrics(r, &t)
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
		transport = workloads.RDMA
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
	r.Notes = append(r.Notes, "transport: "+transport)
	r.Notes = append(r.Notes, fmt.Sprintf("fetch sub-requests: one per distinct server of a request's shards (the \"fetch\" and \"push\" rows have no completion count); %d PFC frames", t.PFCFramesTx))
	for _, e := range res.Errors {
		r.Notes = append(r.Notes, "error: "+e.Error())
	}
}

// FabricMetrics adds the whole run's PFC and fabric totals that both
// workloads report (SCHEMA.md lists them).
func FabricMetrics(r *report.Result, t *fabric.Totals) {
	r.Add("pfc/frames_tx", float64(t.PFCFramesTx), "frames")
	r.Add("pfc/xoff_events", float64(t.XOFFEvents), "")
	r.Add("pfc/host_paused", t.HostPausedTime.Seconds()*1e6, "us")
	r.Add("pfc/longest_pause_host", t.LongestHostPause.Seconds()*1e6, "us")
	r.Add("pfc/longest_pause_switch", t.LongestPortPause.Seconds()*1e6, "us")
	r.Add("fabric/drops", float64(t.Drops+t.HeadroomDrops), "packets")
	r.Add("fabric/watchdog_drops", float64(t.WatchdogDrops), "packets")
	r.Add("pfc/storm_trips", float64(t.StormTrips), "")
	r.Add("fabric/ecn_marks", float64(t.ECNMarks), "packets")
	r.Add("switch/max_shared_used", float64(t.SharedUsedMax), "bytes")
}
