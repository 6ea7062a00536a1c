package main

import (
	"fmt"
	"io"
	"time"

	"github.com/besim/besim/sim"
)

// progressInterval is the wall time between two progress lines of a run.
var progressInterval = 2 * time.Second

// runProgress prints a single run's progress to stderr every
// progressInterval: the virtual time reached against the scenario's
// duration, the events dispatched, their rate and an estimate of the wall
// time left. On a terminal each line overwrites the last and the last is
// erased at the end; elsewhere (--progress under a batch scheduler) the
// lines stay, one per interval.
type runProgress struct {
	w       io.Writer
	term    bool
	total   sim.Time
	start   time.Time
	stop    chan struct{}
	done    chan struct{}
	printed bool
}

// startProgress starts the progress lines of a run of the given virtual
// duration and returns the function that stops them (call it before
// writing anything else to w).
func startProgress(w io.Writer, total sim.Time, term bool) (stop func()) {
	sim.Observe(true)
	p := &runProgress{w: w, term: term, total: total, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	go p.loop()
	return func() {
		close(p.stop)
		<-p.done
		sim.Observe(false)
		if p.term && p.printed {
			fmt.Fprint(p.w, "\r\033[K")
		}
	}
}

func (p *runProgress) loop() {
	defer close(p.done)
	t := time.NewTicker(progressInterval)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			now, events := sim.Progress()
			line := progressLine(now, p.total, events, time.Since(p.start))
			if p.term {
				fmt.Fprint(p.w, "\r\033[K"+line)
			} else {
				fmt.Fprintln(p.w, line)
			}
			p.printed = true
		}
	}
}

// progressLine is one progress line: "progress: simulated 3.2ms of 10ms
// (32%), about 9s left, 4.1M events, 1.6M events/s". total is the virtual
// time the run ends at, 0 when it is not known beforehand (a workload
// sets up connections and warms up before its measured duration; a
// benchmark runs many kernels): the line then has no share or estimate.
// Before the first publication (a run's first 65,536 events) it says the
// run is starting.
func progressLine(now, total sim.Time, events uint64, elapsed time.Duration) string {
	wall := elapsed.Seconds()
	if events == 0 || wall <= 0 {
		return fmt.Sprintf("progress: %.0fs wall, starting (no progress published yet)", wall)
	}
	s := fmt.Sprintf("progress: simulated %s", now)
	if total > 0 && total != sim.Never && now <= total {
		frac := float64(now) / float64(total)
		s += fmt.Sprintf(" of %s (%.0f%%)", total, 100*frac)
		if frac > 0 {
			left := time.Duration(wall * (1 - frac) / frac * float64(time.Second))
			s += fmt.Sprintf(", about %s left", left.Round(time.Second))
		}
	}
	return s + fmt.Sprintf(", %.1fM events, %.2fM events/s", float64(events)/1e6, float64(events)/wall/1e6)
}
