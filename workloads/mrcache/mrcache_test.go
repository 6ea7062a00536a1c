package mrcache

import (
	"testing"

	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
)

// TestRegions: for every registration each buffer lies inside the region
// that holds it (RegionOf) and inside the mapped span, no two buffers
// overlap, block registers the Blocks once, buffer one region per buffer,
// message none (PerMessage); the WRITEs' targets cycle inside the
// receiver's region.
func TestRegions(t *testing.T) {
	for _, reg := range []Registration{Block, Buffer, Message} {
		// 100 buffers of 1000 B (stride 1024) in blocks of 10000 B: 9 per
		// block, 1784 B left over at each block's end.
		cfg := Config{Registration: reg, Message: 1000, Buffers: 100, Block: 10000, Depth: 8}.WithDefaults()
		if err := cfg.Check(); err != nil {
			t.Fatal(err)
		}
		rs := cfg.Regions()
		want := map[Registration]int{Block: cfg.Blocks(), Buffer: cfg.Buffers, Message: 0}[reg]
		if len(rs) != want || cfg.PerMessage() != (reg == Message) {
			t.Fatalf("%s: %d regions (per message %v), want %d", reg, len(rs), cfg.PerMessage(), want)
		}
		end := int64(-1)
		for i := range cfg.Buffers {
			b := cfg.BufferRegion(i)
			if b.Off <= end || b.Off+int64(b.Len) > cfg.Span() || b.Len != cfg.Message {
				t.Fatalf("%s: buffer %d at %d+%d overlaps the previous (ending %d) or leaves the span %d", reg, i, b.Off, b.Len, end, cfg.Span())
			}
			end = b.Off + int64(b.Len) - 1
			k := cfg.RegionOf(i)
			if reg == Message {
				if k != -1 {
					t.Fatalf("message: buffer %d is held by region %d, want none", i, k)
				}
				continue
			}
			if r := rs[k]; b.Off < r.Off || b.Off+int64(b.Len) > r.Off+int64(r.Len) {
				t.Fatalf("%s: buffer %d (%d+%d) outside its region %d (%d+%d)", reg, i, b.Off, b.Len, k, r.Off, r.Len)
			}
		}
		p := NewPoster(&cfg)
		seen := map[int64]bool{}
		for range 3 * cfg.Depth {
			i, ok := p.Next()
			if !ok {
				break
			}
			s := p.RemoteSlot()
			if s < 0 || s+int64(cfg.Message) > int64(cfg.TargetBytes()) {
				t.Fatalf("%s: target slot %d outside the receiver's %d bytes", reg, s, cfg.TargetBytes())
			}
			seen[s] = true
			p.Done(i)
		}
		if len(seen) != cfg.Depth {
			t.Errorf("%s: the WRITEs used %d target slots, want Depth %d", reg, len(seen), cfg.Depth)
		}
	}
}

// TestReduceWithoutCacheCounters: a point measured without the NIC's cache
// counters (berun) has no miss-rate metrics; its throughput is reported.
func TestReduceWithoutCacheCounters(t *testing.T) {
	s := &scenarios.Scenario{Benchmark: &scenarios.Benchmark{Kind: scenarios.MRCacheBench, Message: 4096, Buffers: 64, Block: 1 << 20, Depth: 4}}
	regs := []Registration{Block, Message}
	var r report.Result
	Reduce(s, regs, []Point{{Mmps: 2, Gbps: 60, MPTMissRate: 0.5, MTTMissRate: 0.25},
		{Mmps: 1, Gbps: 30, MPTMissRate: -1, MTTMissRate: -1, NoCacheCounters: true}}, &r)
	for name, want := range map[string]bool{"mrcache/block/mmps": true, "mrcache/block/mpt_miss_rate": true, "mrcache/block/mtt_miss_rate": true,
		"mrcache/message/mmps": true, "mrcache/message/gbps": true, "mrcache/message/mpt_miss_rate": false, "mrcache/message/mtt_miss_rate": false} {
		if _, ok := r.Metric(name); ok != want {
			t.Errorf("%s present %v, want %v", name, ok, want)
		}
	}
}
