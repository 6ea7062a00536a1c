package role

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/workloads/fragsize"
	"github.com/besim/besim/workloads/peak"
	"github.com/besim/besim/workloads/perftest"
)

// The peak roles replay a besim peak benchmark (package workloads/peak,
// the paper's Figure 9, §5.5: ByteExpress's peak throughput beside RC and
// UD perftest) between two hosts' RDMA devices, always over verbs. The
// series take turns on the link (peak.Schedule): first ByteExpress, then
// each perftest transport of the scenario.
//
//   - peak-sender and peak-receiver are ByteExpress: the fragsize roles'
//     machines (fragsize.Sender and Receiver, as besim's peaksim runs them
//     through fragsizesim) at the scenario's one fragment size, message
//     size and depth, in the schedule's ByteExpress slot. The receiver
//     measures the message bytes of the slot's measured interval and
//     reports its port's rate and MTU.
//   - peak-perftest-client and peak-perftest-server are the perftest roles
//     (perftest.Endpoint, ib_send_bw-like SENDs) with perftest's default
//     message for each transport, as peaksim measures its baselines,
//     started at the schedule's perftest part, which they split between
//     the transports as a perftest run does.
//
// ByteExpress's sender drains its last answers into the first half of the
// first transport's warm-up, which measures nothing. The hosts' link is
// one point: the controller names the metrics
// (peak/RATE/MTU/{be,rc,ud}/gbps) after it, and besim's names when it is
// one of the scenario's points.
func init() {
	for _, r := range []struct{ name, summary string }{
		{"peak-receiver", "receiver of a besim peak benchmark's ByteExpress series (Figure 9) over verbs: answers every message with 32 bytes and measures the goodput"},
		{"peak-sender", "sender of a besim peak benchmark's ByteExpress series (Figure 9) over verbs: one engine, the scenario's fragment size and depth of messages outstanding"},
		{"peak-perftest-server", "receiver of a besim peak benchmark's perftest series (Figure 9) over verbs, after the ByteExpress slot: each transport's goodput at the link's MTU"},
		{"peak-perftest-client", "sender of a besim peak benchmark's perftest series (Figure 9) over verbs, after the ByteExpress slot"},
	} {
		Register(Info{Name: r.name, New: newPeak, Params: fragsizeParams()[1:], Summary: r.summary})
	}
}

// peakRole runs a fragsize or perftest role in its part of the run.
type peakRole struct {
	be    *fragsizeRole // the ByteExpress series, or
	perf  *perfRole     // the perftest series
	trans int
	warm  sim.Time
	mtu   int // the ByteExpress receiver's port's
}

func newPeak(spec Spec) (Role, error) {
	info, _ := Lookup(spec.Role)
	p := ReadParams(info, spec)
	vp := readVerbsParams(p, spec)
	if err := p.Err(); err != nil {
		return nil, err
	}
	s, err := roleScenario(spec)
	if err != nil {
		return nil, err
	}
	b := s.Benchmark
	if b == nil || b.Kind != scenarios.Peak {
		return nil, errors.New("the scenario has no peak benchmark")
	}
	r := &peakRole{trans: len(perftest.Transports(s)), warm: b.Warmup.Time()}
	sender := spec.Role == "peak-sender" || spec.Role == "peak-perftest-client"
	switch {
	case sender && len(spec.Peers) != 1:
		return nil, fmt.Errorf("a %s needs one peer, its receiver (has %d)", spec.Role, len(spec.Peers))
	case !sender && len(spec.Peers) != 0:
		return nil, fmt.Errorf("a %s connects to nobody; remove its peers %v", spec.Role, spec.Peers)
	}
	switch spec.Role {
	case "peak-sender", "peak-receiver":
		var rates []scenarios.Rate
		for _, pt := range peak.Points(b) {
			rates = append(rates, scenarios.Rate(pt.Rate))
		}
		r.be = &fragsizeRole{sender: sender, rates: rates, device: vp.device, qos: vp.qos(s),
			cfg: fragsize.Config{Rates: []int64{int64(rates[0])}, FragSizes: []int{int(b.Fragment)}, MsgSize: int(b.Message), Window: b.Depth,
				Warmup: b.Warmup.Time(), Measure: s.Duration.Time()}}
		if err := r.be.cfg.Prepare(); err != nil {
			return nil, err
		}
	default:
		if r.trans == 0 {
			return nil, errors.New("the scenario's peak benchmark measures no perftest transport")
		}
		// perftest's default message per transport (msg 0), as peaksim.
		r.perf = &perfRole{server: !sender, device: vp.device, qos: vp.qos(s), scen: s, trans: perftest.Transports(s),
			warmup: time.Duration(b.Warmup.Time() / sim.Nanosecond)}
	}
	return r, nil
}

// part is the role's part of the run: spec with its start and duration.
func (r *peakRole) part(spec Spec) (Spec, peak.Schedule, error) {
	sc, err := peak.NewSchedule(sim.Time(spec.Duration.Nanoseconds())*sim.Nanosecond, r.trans, r.warm)
	if err != nil {
		return spec, sc, err
	}
	d := func(t sim.Time) time.Duration { return time.Duration(t / sim.Nanosecond) }
	sub := spec
	if r.be != nil {
		sub.Duration = d(sc.BESlot)
	} else {
		sub.Start, sub.Duration = spec.Start.Add(d(sc.Perftest)), d(sim.Time(sc.Transports)*sc.Each)
	}
	return sub, sc, nil
}

func (r *peakRole) Prepare(ctx context.Context, spec Spec) (string, error) {
	sub, _, err := r.part(spec)
	if err != nil {
		return "", err
	}
	if r.perf != nil {
		return r.perf.Prepare(ctx, sub)
	}
	if !r.be.sender {
		a, err := portAttr(spec, r.be.device, r.be.qos)
		if err != nil {
			return "", err
		}
		r.be.rate, r.mtu = scenarios.Rate(a.PortRate), int(a.PortMTU)
	}
	return r.be.Prepare(ctx, sub)
}

func (r *peakRole) Run(ctx context.Context, spec Spec, peers PeerMap) (Result, error) {
	sub, sc, err := r.part(spec)
	if err != nil {
		return Result{}, err
	}
	if err := sleepUntil(ctx, sub.Start); err != nil {
		return Result{}, err
	}
	var res Result
	if r.perf != nil {
		res, err = r.perf.Run(ctx, sub, peers)
	} else {
		res, err = r.be.Run(ctx, sub, peers)
	}
	if res.Metrics == nil {
		res.Metrics = map[string]float64{}
	}
	res.Metrics["start_s"] = sub.Start.Sub(spec.Start).Seconds()
	res.Metrics["part_s"] = sub.Duration.Seconds()
	if r.be != nil && !r.be.sender {
		res.Metrics["path_mtu"] = float64(r.mtu)
		res.Metrics["message_bytes"] = float64(r.be.cfg.MsgSize)
		res.Metrics["fragment_bytes"] = float64(r.be.cfg.FragSizes[0])
		res.Metrics["depth"] = float64(r.be.cfg.Window)
		res.Metrics["measure_s"] = sc.BE.Measure.Seconds()
	}
	return res, err
}

func (r *peakRole) Close() error {
	if r.perf != nil {
		return r.perf.Close()
	}
	return r.be.Close()
}
