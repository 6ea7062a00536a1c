package role

import (
	"fmt"

	"github.com/besim/besim/metrics"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/workloads/incast"
)

// The incast roles replay a besim incast-pull scenario (package
// workloads/incast, paper §6.3: Table 4 and Figure 15's experiment) over
// the ByteExpress core on verbs (param transport verbs, the experiment's
// point: the send window against PFC) or over kernel TCP: incast-server i
// is besim's server i, incast-worker i its worker i, pulling from every
// server. They run the state machines besim's simulation drives
// (incast.Worker, incast.Server) through the fan-out runner (fanout.go),
// with the scenario's engine settings (window, fragment size). The victim
// and bandwidth flows are not these roles: the scenario mapping
// (berun/plan) adds them as tcp-bulk pairs.
func init() {
	Register(Info{Name: "incast-server", New: newIncast, Params: fanParams("server index in the scenario (required)"),
		Summary: "server of a besim incast-pull scenario over verbs or kernel TCP: answers every pull with the scenario's response size"})
	Register(Info{Name: "incast-worker", New: newIncast, Params: fanParams("worker index in the scenario (required)"),
		Summary: "worker of a besim incast-pull scenario over verbs or kernel TCP: pulls from every incast-server peer, closed loop or Poisson"})
}

func newIncast(spec Spec) (Role, error) {
	return newFan(spec, spec.Role == "incast-server", scenarios.IncastPull, incastWorkload)
}

func incastWorkload(s *scenarios.Scenario) (fanWorkload, error) {
	cfg, err := incast.FromScenario(s)
	if err != nil {
		return fanWorkload{}, err
	}
	if err := cfg.Prepare(); err != nil {
		return fanWorkload{}, err
	}
	c := &cfg
	return fanWorkload{servers: cfg.Servers, clients: cfg.Workers, headLen: incast.HeaderSize,
		maxMsg: max(cfg.Request, int(min(cfg.Response.MaxSize, fanMaxMsg))), warmup: cfg.Warmup,
		newServer: func(i int) fanServerM { return &incastServerM{m: incast.NewServer(c, i)} },
		newClient: func(i int) fanClientM {
			st := incast.NewStats()
			return &incastWorkerM{m: incast.NewWorker(c, i, st), st: st, servers: cfg.Servers}
		}}, nil
}

// incastServerM adapts incast.Server to the fan-out runner.
type incastServerM struct{ m *incast.Server }

func (s *incastServerM) reply(p []byte) (int, error) {
	if len(p) < incast.HeaderSize {
		return 0, fmt.Errorf("a pull of %d bytes", len(p))
	}
	return s.m.Reply(), nil
}

func (s *incastServerM) metrics(m map[string]float64) {
	m["pulls"], m["tx_bytes"] = float64(s.m.Pulls), float64(s.m.TxBytes)
}

// incastWorkerM adapts incast.Worker to the fan-out runner.
type incastWorkerM struct {
	m       *incast.Worker
	st      *incast.Stats
	servers int
	out     fanOut
}

func (c *incastWorkerM) add(o *incast.Out) {
	for _, s := range o.Sends {
		var m fanMsg
		m.srv, m.size = s.Server, s.Size
		s.Header.Put(m.head[:])
		c.out.msgs = append(c.out.msgs, m)
	}
	if o.SetTimer {
		c.out.setTimer, c.out.timer = true, o.Timer
	}
}

func (c *incastWorkerM) conv(o *incast.Out) *fanOut {
	c.out.msgs, c.out.setTimer = c.out.msgs[:0], false
	c.add(o)
	return &c.out
}

func (c *incastWorkerM) setInterval(from, to sim.Time) { c.st.SetInterval(from, to) }

// start: every connection is up when the load starts.
func (c *incastWorkerM) start(now sim.Time) *fanOut {
	c.out.msgs, c.out.setTimer = c.out.msgs[:0], false
	for srv := range c.servers {
		c.add(c.m.Connected(srv, now))
	}
	return &c.out
}

func (c *incastWorkerM) tick(now sim.Time) *fanOut { return c.conv(c.m.Tick(now)) }
func (c *incastWorkerM) stop(sim.Time)             { c.m.Stop() }
func (c *incastWorkerM) idle() bool                { return c.st.Sent == c.st.Done }

func (c *incastWorkerM) response(now sim.Time, srv int, p []byte, n int) (*fanOut, error) {
	h, err := incast.ParseHeader(p)
	if err != nil {
		return nil, err
	}
	return c.conv(c.m.Response(now, srv, h, n)), nil
}

func (c *incastWorkerM) result(r *Result) {
	st := c.st
	from, to := st.Interval()
	r.Detail = &IncastDetail{Latency: st.Latency, Pulls: st.Pulls, SentIn: st.SentIn, MeasuredRxBytes: st.RxBytes, MeasuredS: (to - from).Seconds()}
	r.Metrics["pulls"] = float64(st.Pulls)
	if h := st.Latency; h.Count() > 0 {
		r.Metrics["latency_us_p50"] = float64(h.P50()) / 1e3
		r.Metrics["latency_us_p99"] = float64(h.P99()) / 1e3
	}
}

// IncastDetail is an incast-worker's Detail: its pull-latency histogram
// (nanoseconds, pulls sent in the measured interval), so the controller
// can merge percentiles across workers exactly.
type IncastDetail struct {
	Latency         *metrics.Histogram `json:"latency"`
	Pulls           int64              `json:"pulls"`   // answers received in the interval
	SentIn          int64              `json:"sent_in"` // pulls sent in the interval
	MeasuredRxBytes int64              `json:"measured_rx_bytes"`
	MeasuredS       float64            `json:"measured_s"`
}
