package mrcachesim

import (
	"fmt"

	"github.com/besim/besim/experiment"
	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/units"
	"github.com/besim/besim/workloads/mrcache"
)

func init() {
	experiment.Register(string(scenarios.MRCacheBench), func(s *scenarios.Scenario) (experiment.Runner, error) {
		b := s.Benchmark
		return experiment.NewBenchmark(s, []scenarios.Rate{b.Rate}, len(b.Registrations), runMRCache)
	})
}

func runMRCache(s *scenarios.Scenario, r *report.Result) {
	b := s.Benchmark
	nic, err := experiment.NICConfig(s, units.Rate(b.Rate))
	regs := make([]mrcache.Registration, len(b.Registrations))
	points := make([]mrcache.Point, len(b.Registrations))
	for i, reg := range b.Registrations {
		regs[i] = mrcache.Registration(reg)
		points[i] = mrcache.Point{Mmps: -1, Gbps: -1, MPTMissRate: -1, MTTMissRate: -1, RecvMTTMissRate: -1, RegShare: -1, Regions: -1}
		if err != nil {
			continue
		}
		m, e := Test(Config{Config: mrcache.FromScenario(s, regs[i]), NIC: &nic})
		if e != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("registration %s: %v", reg, e))
			continue
		}
		points[i] = m.Point
	}
	if err != nil {
		r.Notes = append(r.Notes, err.Error())
	}
	mrcache.Reduce(s, regs, points, r)
	mpt, mtt := nic.MPTCacheEntries, nic.MTTCacheEntries
	if mpt == 0 && mtt == 0 {
		r.Notes = append(r.Notes, "the translation caches are off (rnic.mr_cache absent): only the CPU cost of registration differs between the settings")
	} else {
		r.Notes = append(r.Notes, fmt.Sprintf("translation caches: %d MPT and %d MTT entries, %d ways, %d B pages (assumptions: ConnectX cache sizes are unpublished; sweep rnic.mr_cache); a miss costs the NIC unit one PCIe read (%v)",
			mpt, mtt, nic.MRCacheWays, nic.MTTPage, nic.DMAReadLatency))
	}
}
