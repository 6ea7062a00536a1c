package msgratesim

import (
	"fmt"
	"strings"

	"github.com/besim/besim/experiment"
	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/workloads/msgrate"
)

func init() {
	experiment.Register(string(scenarios.MsgRate), func(s *scenarios.Scenario) (experiment.Runner, error) {
		b := s.Benchmark
		return experiment.NewBenchmark(s, []scenarios.Rate{b.Rate}, len(b.QPs)*len(b.ThreadDomains), runMsgRate)
	})
}

func runMsgRate(s *scenarios.Scenario, r *report.Result) {
	b := s.Benchmark
	label := func(td bool) string {
		if td {
			return "TD"
		}
		return "no TD"
	}
	res := make([][]msgrate.Point, len(b.QPs))
	nic, err := experiment.NICConfig(s, int64(b.Rate))
	for i, q := range b.QPs {
		res[i] = make([]msgrate.Point, len(b.ThreadDomains))
		for j, td := range b.ThreadDomains {
			p := msgrate.Point{Mmps: -1, LockPct: -1, Shared: -1}
			if err == nil {
				m, e := Test(Config{Config: msgrate.FromScenario(s, q, td), NIC: &nic})
				if e != nil {
					r.Notes = append(r.Notes, fmt.Sprintf("%d QPs, %s: %v", q, label(td), e))
				} else {
					p = msgrate.Point{Mmps: m.Mmps, LockPct: 100 * m.LockShare, Shared: m.SharedQPs}
				}
			}
			res[i][j] = p
		}
	}
	if err != nil {
		r.Notes = append(r.Notes, err.Error())
	}
	msgrate.Reduce(s, res, r)
	var lf []string
	if d := nic.DedicatedBFRegs; d >= 0 {
		lf = append(lf, fmt.Sprintf("the first %d QPs of the process get lock-free doorbell registers (rnic.doorbells.lock_free, an input: the knee of the no-TD curve sits there)", d))
	}
	lf = append(lf, fmt.Sprintf("later QPs share %d locked registers across threads; the drop beyond the knee is the lock model (spinning plus one cache-line transfer per contender at each handoff); a thread domain gives each thread its own register and no lock", nic.SharedBFRegs))
	r.Notes = append(r.Notes, "paper Figure 11 publishes no numbers, only the shape: the rate drops sharply beyond 64 QPs without thread domains and stays flat with them; "+strings.Join(lf, "; "))
}
