package mrcachesim

import (
	"testing"

	"github.com/besim/besim/rnic"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/workloads/internal/wltest"
	"github.com/besim/besim/workloads/mrcache"
)

// TestPerMessageRegistration: the same WRITE traffic from 512 buffers with
// 128 MPT and 1024 MTT entries. bemalloc's blocks (one 4 MiB region) hit
// both caches once warm; one region per buffer misses the MPT cache on
// every message (its MTT entries, one page per region, mostly hit);
// registering per message misses both (its regions are
// new) and pays ibv_reg_mr on the CPU. Throughput falls in that order.
func TestPerMessageRegistration(t *testing.T) {
	nic := rnic.DefaultConfig()
	nic.MPTCacheEntries, nic.MTTCacheEntries = 128, 1024
	run := func(reg mrcache.Registration) mrcache.Point {
		r, err := Test(Config{Config: mrcache.Config{Registration: reg, Buffers: 512, Warmup: 2 * sim.Millisecond,
			Duration: sim.Millisecond}, NIC: &nic})
		if err != nil {
			t.Fatal(err)
		}
		p := r.Point
		t.Logf("%-7s %.3f Mmsg/s, MPT miss %.3f (%d), MTT miss %.3f (%d), %.0f%% CPU in reg_mr, %d regions",
			reg, p.Mmps, p.MPTMissRate, p.MPTMisses, p.MTTMissRate, p.MTTMisses, 100*p.RegShare, p.Regions)
		return p
	}
	blk, buf, msg := run(mrcache.Block), run(mrcache.Buffer), run(mrcache.Message)
	if blk.MPTMisses != 0 || blk.MTTMisses != 0 {
		t.Errorf("blocks: %d MPT and %d MTT misses once warm, want 0", blk.MPTMisses, blk.MTTMisses)
	}
	// One page per region, each region's entry in a set of its own: a few
	// set conflicts, no more.
	if buf.MPTMissRate < 0.9 || buf.MTTMissRate > 0.1 {
		t.Errorf("a region per buffer: MPT miss rate %.3f (want > 0.9), MTT miss rate %.3f (want < 0.1)", buf.MPTMissRate, buf.MTTMissRate)
	}
	if msg.MPTMissRate < 0.99 || msg.MTTMissRate < 0.99 || msg.RegShare < 0.5 {
		t.Errorf("per message: MPT miss %.3f, MTT miss %.3f (want 1), CPU in reg_mr %.2f", msg.MPTMissRate, msg.MTTMissRate, msg.RegShare)
	}
	if !(blk.Mmps > 1.5*buf.Mmps && buf.Mmps > 2*msg.Mmps) {
		t.Errorf("throughput block %.3f, buffer %.3f, message %.3f Mmsg/s: want block > 1.5 buffer > 3 message", blk.Mmps, buf.Mmps, msg.Mmps)
	}
	// With the caches off, a region per buffer costs the NIC nothing: the
	// difference above is the MPT cache.
	off := rnic.DefaultConfig()
	r, err := Test(Config{Config: mrcache.Config{Registration: mrcache.Buffer, Buffers: 512, Warmup: 2 * sim.Millisecond,
		Duration: sim.Millisecond}, NIC: &off})
	if err != nil {
		t.Fatal(err)
	}
	if r.Point.Mmps < 0.99*blk.Mmps || r.Point.MPTMisses != 0 {
		t.Errorf("caches off, a region per buffer: %.3f Mmsg/s (blocks with caches %.3f), %d MPT misses", r.Point.Mmps, blk.Mmps, r.Point.MPTMisses)
	}
}

// TestMRCacheScenario: the embedded mr-cache runs every registration and
// reports its metrics.
func TestMRCacheScenario(t *testing.T) {
	r := wltest.Builtin(t, "mr-cache")
	m := wltest.Metrics(r)
	b, f, g := m["mrcache/block/mmps"], m["mrcache/buffer/mmps"], m["mrcache/message/mmps"]
	t.Logf("block %.3f, buffer %.3f, message %.3f Mmsg/s; buffer MPT miss rate %.3f", b, f, g, m["mrcache/buffer/mpt_miss_rate"])
	if !(b > f && f > g && g > 0) {
		t.Errorf("mr-cache: block %.3f, buffer %.3f, message %.3f Mmsg/s", b, f, g)
	}
	if tb, ok := r.Table("mrcache"); !ok || len(tb.Rows) != 3 {
		t.Errorf("mrcache table: %+v", tb)
	}
}
