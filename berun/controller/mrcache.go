package controller

import (
	"fmt"

	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/workloads/mrcache"
)

// mrcacheReport reduces a mrcache-sender's per-registration measurements
// with besim's own reduction (mrcache.Reduce): mrcache/REG/mmps and gbps
// and the mrcache table, the registrations in besim's order (block,
// buffer, message) as far as the role measured them. The NIC's MPT and
// MTT cache misses have no counter on a real NIC: the points are marked
// NoCacheCounters, so mrcache/REG/mpt_miss_rate and mtt_miss_rate are
// absent (not zero) and their table cells -1; the receiver's MTT miss
// rate is -1 too. The table's "CPU in reg_mr" is the share of the
// measured interval the sender's I/O thread spent in ibv_reg_mr, its
// regions those registered at the end of the warm-up.
func mrcacheReport(r *report.Result, rf *ResultFile) {
	for _, h := range rf.Hosts {
		for _, ro := range h.Roles {
			if ro.Role != "mrcache-sender" {
				continue
			}
			m := ro.Metrics
			var regs []mrcache.Registration
			var pts []mrcache.Point
			for _, reg := range []mrcache.Registration{mrcache.Block, mrcache.Buffer, mrcache.Message} {
				k := "/" + string(reg)
				mmps, ok := m["mmps"+k]
				if !ok {
					continue
				}
				p := mrcache.Point{Mmps: mmps, Gbps: m["gbps"+k], MPTMissRate: -1, MTTMissRate: -1, RecvMTTMissRate: -1,
					RegShare: -1, Regions: -1, NoCacheCounters: true}
				if v, ok := m["reg_share"+k]; ok {
					p.RegShare = v
				}
				if v, ok := m["regions"+k]; ok {
					p.Regions = int(v)
				}
				if s := m["measure_s"]; s > 0 {
					p.RegistrationsPerMs = m["reg_mrs"+k] / (s * 1e3)
				}
				regs = append(regs, reg)
				pts = append(pts, p)
			}
			if len(regs) == 0 {
				r.Notes = append(r.Notes, fmt.Sprintf("%s: no mrcache measurements in its result (%s)", ro.ID, ro.Status))
				continue
			}
			b := &scenarios.Benchmark{Kind: scenarios.MRCacheBench, Message: scenarios.Size(m["message_bytes"]), Buffers: int(m["buffers"]),
				Block: scenarios.Size(m["block_bytes"]), Depth: int(m["depth"])}
			mrcache.Reduce(&scenarios.Scenario{Benchmark: b}, regs, pts, r)
			r.Notes = append(r.Notes, fmt.Sprintf("mrcache: the RDMA WRITEs that completed at the sender in each registration's measured interval of %gs (besim counts the payload arriving at the receiver's NIC); the NIC's MPT/MTT translation-cache misses have no counter berun reads on a real NIC, so mrcache/*/mpt_miss_rate and mtt_miss_rate are absent and their table cells -1; the time in ibv_reg_mr and ibv_dereg_mr is in role/%s/reg_mr_us/* and dereg_mr_us/*", m["measure_s"], ro.ID))
		}
	}
}
