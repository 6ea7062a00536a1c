package pfc

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
)

// TestTraces runs the PFC scripts in testdata (go test -run TestTraces
// -rewrite regenerates the expected output). A script models one link: a
// switch ingress port whose priority group accounts the frames that arrive
// and leave (Ingress over a shared Buffer), the pause generator of that
// port (Tx), and the upstream sender's receive side (Rx) that honours the
// frames the Tx builds, with its storm watchdog. Frames in, pause state out.
//
// Commands (sizes in bytes, times as Go durations):
//
//	ingress buffer=N headroom=N (alpha=F xon-offset=N | xoff=N xon=N) [lossy]
//	link rate=Gbps [quanta=N refresh=DUR] [watchdog=DUR restore=DUR forward]
//	arrive bytes=N [count=N]   admit frames at the ingress (prints pause/drop)
//	depart bytes=N [count=N]   release frames (prints resume)
//	send                       the Tx builds its owed frame; the Rx receives it
//	frame prio=P quanta=Q      the Rx receives a frame from outside (a storm)
//	tick d=DUR                 advance time: the Rx's deadlines, the Tx's refresh
//	state                      the ingress, Tx and Rx state
func TestTraces(t *testing.T) {
	datadriven.Walk(t, "testdata/trace", func(t *testing.T, path string) {
		l := &traceLink{prio: 3}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			l.out.Reset()
			if err := l.exec(t, d); err != nil {
				return fmt.Sprintf("%s: %s: %v\n", d.Pos, d.Cmd, err)
			}
			if l.out.Len() == 0 {
				return "ok\n"
			}
			return l.out.String()
		})
	})
}

type traceLink struct {
	now  sim.Time
	prio int
	rate units.Rate
	buf  Buffer
	g    Ingress
	tx   Tx
	rx   Rx
	seen uint8 // the Rx pause mask last printed
	out  strings.Builder
}

// showPaused prints the Rx's pause mask when it changed.
func (l *traceLink) showPaused() {
	if p := l.rx.Paused(l.now); p != l.seen {
		l.seen = p
		l.printf("rx paused=%#02x", p)
	}
}

func (l *traceLink) printf(format string, args ...any) {
	fmt.Fprintf(&l.out, "t=%v ", l.now)
	fmt.Fprintf(&l.out, format, args...)
	l.out.WriteByte('\n')
}

func args(d *datadriven.TestData) map[string]string {
	m := map[string]string{}
	for _, a := range d.CmdArgs {
		v := ""
		if len(a.Vals) > 0 {
			v = a.Vals[0]
		}
		m[a.Key] = v
	}
	return m
}

func argInt(m map[string]string, k string, def int64) (int64, error) {
	v, ok := m[k]
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: want an integer", k, v)
	}
	return n, nil
}

func argDur(m map[string]string, k string) (sim.Time, error) {
	v, ok := m[k]
	if !ok {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: want a duration", k, v)
	}
	return sim.Time(d.Nanoseconds()) * sim.Nanosecond, nil
}

func (l *traceLink) exec(t *testing.T, d *datadriven.TestData) error {
	m := args(d)
	switch d.Cmd {
	case "ingress":
		size, err := argInt(m, "buffer", 0)
		if err != nil {
			return err
		}
		th := Thresholds{Lossless: true}
		if _, lossy := m["lossy"]; lossy {
			th.Lossless = false
		}
		if v, ok := m["alpha"]; ok {
			if th.Alpha, err = strconv.ParseFloat(v, 64); err != nil {
				return fmt.Errorf("alpha=%q: want a number", v)
			}
		}
		for k, p := range map[string]*units.Size{"xon-offset": &th.XONOffset, "xoff": &th.XOFF, "xon": &th.XON, "headroom": &th.Headroom} {
			v, err := argInt(m, k, 0)
			if err != nil {
				return err
			}
			*p = units.Size(v)
		}
		if err := th.Validate(); err != nil {
			return err
		}
		l.buf.Init(units.Size(size))
		if th.Lossless {
			if err := l.buf.Reserve(th.Headroom); err != nil {
				return err
			}
		}
		l.g.Init(th, &l.buf)
	case "link":
		gb, err := argInt(m, "rate", 25)
		if err != nil {
			return err
		}
		q, err := argInt(m, "quanta", 0)
		if err != nil {
			return err
		}
		refresh, err := argDur(m, "refresh")
		if err != nil {
			return err
		}
		wd := Watchdog{}
		if det, err := argDur(m, "watchdog"); err != nil {
			return err
		} else if det > 0 {
			wd = DefaultWatchdog()
			wd.Detection = det
			if r, err := argDur(m, "restore"); err != nil {
				return err
			} else if r > 0 {
				wd.Restore = r
			}
			if _, ok := m["forward"]; ok {
				wd.Action = ActionForward
			}
		}
		l.rate = units.Rate(gb * units.Gbps)
		l.tx.Init(l.rate, uint16(q), refresh)
		l.rx.Init(l.rate, 1<<l.prio, wd)
		l.printf("pause %d quanta = %v, refresh every %v", l.tx.Quanta(), QuantaToTime(l.tx.Quanta(), l.rate), l.tx.RefreshInterval())
	case "arrive", "depart":
		n, err := argInt(m, "bytes", 1000)
		if err != nil {
			return err
		}
		count, err := argInt(m, "count", 1)
		if err != nil {
			return err
		}
		for k := range count {
			var a Action
			if d.Cmd == "arrive" {
				a = l.g.Admit(l.now, n)
			} else {
				a = l.g.Release(l.now, n)
			}
			switch a {
			case Pause:
				l.tx.Assert(l.now, l.prio)
				l.printf("%s #%d: XOFF (holding %dB)", d.Cmd, k+1, l.g.Bytes())
			case Resume:
				l.tx.Deassert(l.now, l.prio)
				l.printf("%s #%d: XON (holding %dB)", d.Cmd, k+1, l.g.Bytes())
			case Drop:
				l.printf("%s #%d: drop (headroom %d/%d, shared pool %d/%d)", d.Cmd, k+1, l.g.Hdrm, l.g.t.Headroom, l.buf.SharedUsed, l.buf.SharedSize())
			}
		}
		l.state()
	case "send":
		if !l.tx.Pending() {
			l.printf("no frame owed")
			return nil
		}
		mask, quanta := l.tx.Build(l.now)
		l.printf("frame %s", fmtFrame(mask, &quanta))
		l.rx.OnFrame(l.now, mask, &quanta)
		l.showPaused()
	case "frame":
		p, err := argInt(m, "prio", int64(l.prio))
		if err != nil {
			return err
		}
		q, err := argInt(m, "quanta", MaxQuanta)
		if err != nil {
			return err
		}
		var quanta [NumPrio]uint16
		quanta[p] = uint16(q)
		mask := uint8(1) << p
		l.printf("frame in %s", fmtFrame(mask, &quanta))
		l.rx.OnFrame(l.now, mask, &quanta)
		l.showPaused()
	case "tick":
		dt, err := argDur(m, "d")
		if err != nil {
			return err
		}
		end := l.now + dt
		for {
			next := min(l.rx.NextDeadline(), l.tx.NextRefresh())
			if next > end {
				break
			}
			l.now = max(l.now, next)
			tripped, restored := l.rx.Advance(l.now)
			if tripped != 0 {
				l.printf("watchdog trips %#02x (paused for %v)", tripped, l.rx.LongestPause(l.now, l.prio))
			}
			if restored != 0 {
				l.printf("watchdog restores %#02x", restored)
			}
			l.showPaused()
			if l.tx.Refresh(l.now) {
				mask, quanta := l.tx.Build(l.now)
				l.printf("refresh frame %s", fmtFrame(mask, &quanta))
				l.rx.OnFrame(l.now, mask, &quanta)
			}
		}
		l.now = end
		l.printf("now")
	case "state":
		l.state()
	default:
		return fmt.Errorf("unknown command (allowed: ingress, link, arrive, depart, send, frame, tick, state)")
	}
	return nil
}

func (l *traceLink) state() {
	if l.g.buf != nil {
		l.printf("ingress shared=%d headroom=%d asserted=%v xoff=%d xon=%d pool=%d/%d",
			l.g.Shared, l.g.Hdrm, l.g.Asserted(), l.g.XOFF(), l.g.XON(), l.buf.SharedUsed, l.buf.SharedSize())
	}
	if l.rate > 0 {
		l.printf("tx asserted=%#02x owed=%v rx paused=%#02x requested=%#02x stormed=%#02x paused-for=%v",
			l.tx.Asserted(), l.tx.Pending(), l.rx.Paused(l.now), l.rx.Requested(l.now), l.rx.Stormed(), l.rx.PausedTime(l.now, l.prio))
	}
}

func fmtFrame(mask uint8, q *[NumPrio]uint16) string {
	var parts []string
	for i := range NumPrio {
		if mask&(1<<i) != 0 {
			if q[i] == 0 {
				parts = append(parts, fmt.Sprintf("p%d:XON", i))
			} else {
				parts = append(parts, fmt.Sprintf("p%d:%d", i, q[i]))
			}
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}
