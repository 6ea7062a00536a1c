package role

import (
	"errors"
	"fmt"
	"time"

	"github.com/besim/besim/byteexpress/rpc"
	"github.com/besim/besim/metrics"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/workloads/app"
	"github.com/besim/besim/workloads/ps"
)

// The parameter-server roles replay a besim ps-cluster scenario (package
// workloads/ps, paper §2.1) over kernel TCP or, param transport verbs,
// the ByteExpress core: ps-server i is besim's server i, ps-client i is
// besim's client i (rankers first, then trainers). Both read the workload
// from the scenario file the controller pushes (Spec.Scenario), translated
// by the function besim uses (ps.FromScenario), and run the state
// machines besim's simulation drives (ps.Client, ps.Server), with the
// same streams, header and reply rule, through the fan-out runner
// (fanout.go). With the scenario's workload.rpc the clients' fetches and
// pushes go through the RPC layer (psrpc.go), over verbs only.
func init() {
	for _, r := range []struct{ name, summary string }{
		{"ps-server", "parameter server of a besim ps-cluster scenario over kernel TCP or verbs: answers fetches with the scenario's response sizes and acknowledges pushes"},
		{"ps-client", "ranker or trainer of a besim ps-cluster scenario over kernel TCP or verbs: fan-out fetches (and compute + push for trainers) to every ps-server peer, through the RPC layer (verbs only) with workload.rpc"},
	} {
		params := fanParams("server or client index in the scenario (required; clients: rankers first, then trainers)")
		if r.name == "ps-server" {
			params = append(params, Param{Name: "mute_at", Default: "0s", Doc: "with workload.rpc: stop answering requests this long after the start (0: never), a black-holed server that still takes them in (counted) and answers the end marker; the clients' RPC layer times them out and moves on to a replica"})
		}
		Register(Info{Name: r.name, Summary: r.summary, New: newPS, Params: params})
	}
}

// fanParams are the parameters every fan-out role takes.
func fanParams(index string) []Param {
	return []Param{{Name: "index", Doc: index},
		{Name: "transport", Doc: "tcp (kernel TCP, default) or verbs (the ByteExpress core on the host's RDMA device, -tags rdma)"},
		{Name: "device", Doc: "verbs: the RDMA device (default: the first one)"},
		{Name: "gid_index", Default: "auto", Doc: "verbs: GID table index (auto: the RoCE v2 GID of the data IP, from sysfs)"},
		{Name: "prio", Doc: "verbs: 802.1p priority of the QPs (service level); default: the scenario's lossless priority"},
		{Name: "dscp", Doc: "verbs: DSCP of the QPs (traffic class DSCP << 2); default 8 x prio + 2, so 26 (AF31) for priority 3, which ConnectX's default DSCP-to-priority map (DSCP / 8) puts on that priority"}}
}

// verbsParams are the parameters every verbs role takes: device,
// gid_index, prio and dscp (-1 where not given: auto, or the scenario's).
type verbsParams struct {
	device     string
	gid        int
	prio, dscp int
}

// readVerbsParams reads the verbs parameters from p (errors collect in p).
func readVerbsParams(p *Params, spec Spec) verbsParams {
	v := verbsParams{gid: -1, prio: -1, dscp: -1}
	if _, set := spec.Params["device"]; set {
		v.device = p.String("device")
	}
	if g, set := spec.Params["gid_index"]; set && g != "auto" {
		v.gid = p.Int("gid_index", 0, 255)
	}
	if _, set := spec.Params["prio"]; set {
		v.prio = p.Int("prio", 0, 7)
	}
	if _, set := spec.Params["dscp"]; set {
		v.dscp = p.Int("dscp", 0, 63)
	}
	return v
}

// qos resolves the parameters against scenario s: the priority defaults
// to its lossless one, the DSCP to 8 x prio + 2 (26 for priority 3).
func (v verbsParams) qos(s *scenarios.Scenario) verbsQoS {
	prio, dscp := v.prio, v.dscp
	if prio < 0 {
		prio = losslessPrio(s)
	}
	if dscp < 0 {
		dscp = 8*prio + 2
	}
	return verbsQoS{gid: v.gid, prio: uint8(prio), dscp: uint8(dscp)}
}

// roleScenario parses the besim scenario the controller pushed with the
// run (Spec.Scenario).
func roleScenario(spec Spec) (*scenarios.Scenario, error) {
	if len(spec.Scenario) == 0 {
		return nil, errors.New("needs the besim scenario (run it with `berun run SCENARIO.yaml`)")
	}
	return scenarios.Parse("scenario", spec.Scenario)
}

// losslessPrio is the scenario's first lossless priority (3 if it names
// none: the priority besim's fabric defaults make lossless).
func losslessPrio(s *scenarios.Scenario) int {
	for _, p := range s.Fabric.Priorities {
		if p.Lossless {
			return int(p.Prio)
		}
	}
	return 3
}

// newFan reads a fan-out role's parameters and its scenario (which must
// have a workload of kind), and returns the role with the workload that
// work builds from the scenario.
func newFan(spec Spec, server bool, kind scenarios.WorkloadKind, work func(s *scenarios.Scenario) (fanWorkload, error)) (*fanRole, error) {
	info, _ := Lookup(spec.Role)
	p := ReadParams(info, spec)
	idx := p.Int("index", 0, 1<<20)
	transport := "tcp"
	if _, set := spec.Params["transport"]; set {
		transport = p.Enum("transport", "tcp", "verbs")
	}
	vp := readVerbsParams(p, spec)
	if err := p.Err(); err != nil {
		return nil, err
	}
	s, err := roleScenario(spec)
	if err != nil {
		return nil, err
	}
	if s.Workload == nil || s.Workload.Kind != kind {
		return nil, fmt.Errorf("the scenario has no %s workload", kind)
	}
	w, err := work(s)
	if err != nil {
		return nil, err
	}
	r := &fanRole{w: w, server: server, idx: idx, verbs: transport == "verbs", device: vp.device, qos: vp.qos(s), be: app.Engine(s.Workload)}
	if _, set := spec.Params["mute_at"]; set {
		r.muteAt = p.Duration("mute_at", 0, 24*time.Hour)
		if err := p.Err(); err != nil {
			return nil, err
		}
	}
	if w.rpc != nil {
		if !r.verbs {
			return nil, errors.New("workload.rpc: the ps roles run the RPC layer (byteexpress/rpc) over the ByteExpress core only (param transport verbs, berun --transport verbs); over kernel TCP the fan-out runner has one connection per client and server and no paths or replicas to move to; replay with --transport verbs, or with rpc: false")
		}
		if r.be.ConnectTimeout == 0 {
			// Archon's connection timeout Tc bounds a new engine's
			// exchange, as in besim (pssim) and the failover roles.
			r.be.ConnectTimeout = w.rpc.rc.ConnTimeout
		}
	} else if r.muteAt > 0 {
		return nil, errors.New("mute_at needs workload.rpc: without the RPC layer nothing times a request out, and its client would wait for the answer to the end")
	}
	switch {
	case server && idx >= w.servers:
		return nil, fmt.Errorf("index %d: the scenario has %d servers", idx, w.servers)
	case server && len(spec.Peers) > 0:
		return nil, fmt.Errorf("a server connects to nobody; remove its peers %v", spec.Peers)
	case !server && idx >= w.clients:
		return nil, fmt.Errorf("index %d: the scenario has %d clients", idx, w.clients)
	case !server && len(spec.Peers) != w.servers:
		return nil, fmt.Errorf("a client needs the scenario's %d servers as peers, in index order (has %d)", w.servers, len(spec.Peers))
	}
	return r, nil
}

func newPS(spec Spec) (Role, error) {
	return newFan(spec, spec.Role == "ps-server", scenarios.PSCluster, psWorkload)
}

func psWorkload(s *scenarios.Scenario) (fanWorkload, error) {
	if s.Workload.RPCOn() && s.Workload.Transport == scenarios.OverTCP {
		return fanWorkload{}, errors.New("workload.rpc with workload.transport tcp: the RPC layer (byteexpress/rpc) runs over ByteExpress (besim refuses it too); use transport rdma")
	}
	cfg, err := ps.FromScenario(s)
	if err != nil {
		return fanWorkload{}, err
	}
	if err := cfg.Prepare(); err != nil {
		return fanWorkload{}, err
	}
	c := &cfg
	shardOf := ps.ShardServers(cfg.Shards, cfg.Servers)
	w := fanWorkload{servers: cfg.Servers, clients: cfg.Rankers + cfg.Trainers, headLen: ps.HeaderSize,
		maxMsg: fanMaxMsg, warmup: cfg.Warmup,
		newServer: func(i int) fanServerM { return &psServerM{m: ps.NewServer(c, i)} },
		newClient: func(i int) fanClientM {
			st := ps.NewStats()
			return &psClientM{m: ps.NewClient(c, i, shardOf, st), st: st}
		}}
	if rc := ps.RPCConfig(s.Workload); rc != nil {
		// Through the RPC layer (psrpc.go): the servers echo the RPC
		// header and the ps header, and answer with Server.RPCReply.
		w.rpc = &psRPC{cfg: c, rc: *rc, shardOf: shardOf}
		w.headLen = ps.RPCEcho
		w.newServer = func(i int) fanServerM { return &psServerM{m: ps.NewServer(c, i), rpc: true} }
	}
	return w, nil
}

// psServerM adapts ps.Server to the fan-out runner.
type psServerM struct {
	m   *ps.Server
	rpc bool // requests come through the RPC layer
}

func (s *psServerM) reply(p []byte) (int, error) {
	if s.rpc {
		return s.m.RPCReply(p)
	}
	h, err := ps.ParseHeader(p)
	if err != nil {
		return 0, err
	}
	return s.m.Reply(h, len(p))
}

func (s *psServerM) metrics(m map[string]float64) {
	m["fetches"], m["pushes"] = float64(s.m.Fetches), float64(s.m.Pushes)
	m["tx_bytes"] = float64(s.m.TxBytes)
}

// psClientM adapts ps.Client to the fan-out runner.
type psClientM struct {
	m   *ps.Client
	st  *ps.Stats
	out fanOut
}

func (c *psClientM) conv(o *ps.Out) *fanOut {
	c.out.msgs = c.out.msgs[:0]
	for _, s := range o.Sends {
		var m fanMsg
		m.srv, m.size = s.Server, s.Size
		s.Header.Put(m.head[:])
		c.out.msgs = append(c.out.msgs, m)
	}
	c.out.setTimer, c.out.timer = o.SetTimer, o.Timer
	return &c.out
}

func (c *psClientM) setInterval(from, to sim.Time) { c.st.SetInterval(from, to) }
func (c *psClientM) start(now sim.Time) *fanOut    { return c.conv(c.m.Start(now)) }
func (c *psClientM) tick(now sim.Time) *fanOut     { return c.conv(c.m.Tick(now)) }
func (c *psClientM) stop(now sim.Time)             { c.m.Stop(now) }
func (c *psClientM) idle() bool                    { return c.m.Idle() }

func (c *psClientM) response(now sim.Time, _ int, p []byte, n int) (*fanOut, error) {
	h, err := ps.ParseHeader(p)
	if err != nil {
		return nil, err
	}
	o, err := c.m.Response(now, h, n)
	if err != nil {
		return nil, err
	}
	return c.conv(o), nil
}

func (c *psClientM) result(r *Result) {
	st := c.st
	from, to := st.Interval()
	r.Detail = &PSDetail{User: st.User, Fetch: st.Fetch, Iteration: st.Iteration, Push: st.Push,
		FetchPhase: st.FetchPhase, PushPhase: st.PushPhase, MeasuredRxBytes: st.RxBytes, MeasuredS: (to - from).Seconds()}
	r.Metrics["user_requests"] = float64(st.Users)
	r.Metrics["iterations"] = float64(st.Iterations)
	r.Metrics["dropped"] = float64(st.Dropped)
	if c.m.Trainer() {
		r.Metrics["trainer"] = 1
	}
	if h := st.Fetch; h.Count() > 0 {
		r.Metrics["latency_us_p50"] = float64(h.P50()) / 1e3
		r.Metrics["latency_us_p99"] = float64(h.P99()) / 1e3
	}
}

// PSDetail is a ps-client's Detail: its histograms (nanoseconds), so the
// controller can merge percentiles across clients exactly.
type PSDetail struct {
	User  *metrics.Histogram `json:"user"`
	Fetch *metrics.Histogram `json:"fetch"`
	// Iteration holds trainer iterations started in the interval; one the
	// end of the run stops before its push is in at its age then.
	Iteration *metrics.Histogram `json:"iteration"`
	// Push and the trainer phases (besim's push, fetch_phase, push_phase):
	// absent from results written before they were added.
	Push       *metrics.Histogram `json:"push,omitempty"`
	FetchPhase *metrics.Histogram `json:"fetch_phase,omitempty"`
	PushPhase  *metrics.Histogram `json:"push_phase,omitempty"`
	// MeasuredRxBytes is the answer payload received in the measured
	// interval (besim's client/goodput counts the same).
	MeasuredRxBytes int64   `json:"measured_rx_bytes"`
	MeasuredS       float64 `json:"measured_s"`
	// With workload.rpc (psrpc.go): what the client's RPC layer did (the
	// whole run), its policy, the scenario's replicas and the user
	// requests completed with a failed fetch, for besim's rpc/* metrics
	// (ps.ReduceRPC).
	RPC         *ps.RPCStats `json:"rpc,omitempty"`
	RPCConfig   *rpc.Config  `json:"rpc_config,omitempty"`
	Replicas    int          `json:"replicas,omitempty"`
	UsersFailed int64        `json:"users_failed,omitempty"`
}
