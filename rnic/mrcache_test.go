package rnic

import (
	"testing"
	"time"

	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
	"github.com/besim/besim/verbs"
)

// TestXlateCacheLRU: within a set the least recently used way is replaced;
// an invalidated tag misses again.
func TestXlateCacheLRU(t *testing.T) {
	var c xlateCache
	c.init(2, 2) // one set of two ways
	for i, s := range []struct {
		tag uint64
		hit bool
	}{{1, false}, {2, false}, {1, true}, {3, false}, {2, false}, {1, false}, {3, false}, {1, true}} {
		if got := c.lookup(s.tag, 0); got != s.hit {
			t.Fatalf("step %d: lookup(%d) hit=%v, want %v", i, s.tag, got, s.hit)
		}
	}
	c.invalidate(1, 0)
	if c.lookup(1, 0) {
		t.Fatal("an invalidated tag hit")
	}
	var off xlateCache
	off.init(0, 8)
	if off.on() {
		t.Fatal("a cache of 0 entries is on")
	}
}

// mrCacheConfig is DefaultConfig with small translation caches.
func mrCacheConfig(mpt, mtt int) Config {
	cfg := DefaultConfig()
	cfg.MPTCacheEntries, cfg.MTTCacheEntries = mpt, mtt
	return cfg
}

// writeOnce posts one signalled WRITE of n bytes from src to dst and returns
// how long it took to complete.
func writeOnce(t *testing.T, p *pair, a *ep, src, dst *region, n int) sim.Time {
	t.Helper()
	start := p.k.Now()
	wr := verbs.SendWR{Opcode: verbs.OpWrite, Flags: verbs.FlagSignaled, SGL: []verbs.SGE{src.sge(0, n)},
		RemoteAddr: uint64(dst.addr(0)), RKey: dst.mr.RKey()}
	if _, err := a.qp.PostSend(&wr); err != nil {
		t.Fatal(err)
	}
	wc := p.waitCQ(t, a.cq, 1, sim.Millisecond)
	if wc[0].Status != verbs.WCSuccess {
		t.Fatalf("WRITE: %v", wc[0].Status)
	}
	// waitCQ polls in 10 us steps; the completion time is its CQE's.
	return p.k.Now() - start
}

// TestMRCacheMissesAndReuse: the first WRITE from and into a region misses
// its MPT entry and its pages' MTT entries on both NICs; the same WRITE
// again hits; a freshly registered region misses again (its deregistered
// predecessor's entries are gone). With the caches off nothing is counted.
func TestMRCacheMissesAndReuse(t *testing.T) {
	const n = 16 << 10 // 4 pages
	p := newPair(t, mrCacheConfig(16, 256), 100*units.Gbps, sim.Microsecond)
	o := defaultOpts()
	o.mtu = 4096
	a, b := p.rc(t, o)
	src := newRegion(t, a.pd, n, allAccess)
	dst := newRegion(t, b.pd, n, allAccess)
	writeOnce(t, p, a, src, dst, n)
	sa, sb := p.a.Stats(), p.b.Stats()
	// Sender: one MPT lookup and one page per 4 KiB packet (4 packets).
	if sa.MTTCacheMisses != 4 || sa.MPTCacheMisses != 1 || sa.MPTCacheHits != 3 {
		t.Fatalf("sender after the first WRITE: %+v", sa)
	}
	if sb.MTTCacheMisses != 4 || sb.MPTCacheMisses != 1 {
		t.Fatalf("receiver after the first WRITE: %+v", sb)
	}
	writeOnce(t, p, a, src, dst, n)
	sa2, sb2 := p.a.Stats(), p.b.Stats()
	if sa2.MTTCacheMisses != 4 || sa2.MPTCacheMisses != 1 || sb2.MTTCacheMisses != 4 || sb2.MPTCacheMisses != 1 {
		t.Fatalf("a repeated WRITE missed: sender %+v receiver %+v", sa2, sb2)
	}
	if sa2.MTTCacheHits != 4 || sb2.MTTCacheHits != 4 {
		t.Fatalf("a repeated WRITE: MTT hits sender %d receiver %d, want 4", sa2.MTTCacheHits, sb2.MTTCacheHits)
	}
	// A fresh registration of the same memory misses again.
	must(t, src.mr.Dereg())
	mr, err := a.pd.RegMR(src.addr(0), n, allAccess)
	must(t, err)
	src.mr = mr
	writeOnce(t, p, a, src, dst, n)
	if s := p.a.Stats(); s.MTTCacheMisses != 8 || s.MPTCacheMisses != 2 {
		t.Fatalf("sender after re-registration: %+v", s)
	}

	off := newPair(t, DefaultConfig(), 100*units.Gbps, sim.Microsecond)
	a, b = off.rc(t, o)
	src = newRegion(t, a.pd, n, allAccess)
	dst = newRegion(t, b.pd, n, allAccess)
	writeOnce(t, off, a, src, dst, n)
	if s := off.a.Stats(); s.MPTCacheHits+s.MPTCacheMisses+s.MTTCacheHits+s.MTTCacheMisses != 0 {
		t.Fatalf("caches off but counted: %+v", s)
	}
}

// TestMTTThrashSlowsStream: a 64 KiB WRITE stream whose pages do not fit in
// the MTT cache misses on every packet and runs slower than with a cache
// that holds them (4 KiB packets: every packet is a new page, so the miss
// is one read round trip of unit time per packet).
func TestMTTThrashSlowsStream(t *testing.T) {
	rate := func(mtt int) (gbps float64, s Stats) {
		cfg := mrCacheConfig(64, mtt)
		p, _ := newStream(t, cfg, 100*units.Gbps)
		p.runFor(200 * time.Microsecond)
		rx0 := p.b.Stats().RxPayload
		p.runFor(500 * time.Microsecond)
		return float64(p.b.Stats().RxPayload-rx0) * 8 / 500e-6 / 1e9, p.a.Stats()
	}
	big, sb := rate(1024)
	small, ss := rate(8)
	t.Logf("MTT 1024: %.1f Gb/s (sender misses %d hits %d); MTT 8: %.1f Gb/s (misses %d hits %d)",
		big, sb.MTTCacheMisses, sb.MTTCacheHits, small, ss.MTTCacheMisses, ss.MTTCacheHits)
	if sb.MTTCacheMisses > 32 || ss.MTTCacheMisses < 10*sb.MTTCacheMisses {
		t.Fatalf("MTT misses %d (1024 entries) vs %d (8 entries)", sb.MTTCacheMisses, ss.MTTCacheMisses)
	}
	if small > 0.7*big {
		t.Fatalf("thrashing MTT: %.1f Gb/s vs %.1f", small, big)
	}
}

// TestSteadyWriteZeroAllocsMRCache: the translation caches allocate nothing
// on the packet path.
func TestSteadyWriteZeroAllocsMRCache(t *testing.T) {
	p, _ := newStream(t, mrCacheConfig(64, 8), 100*units.Gbps)
	p.runFor(2 * time.Millisecond)
	if allocs := testing.AllocsPerRun(50, func() { p.runFor(10 * time.Microsecond) }); allocs != 0 {
		t.Fatalf("%v allocations per 10 us run", allocs)
	}
	if s := p.a.Stats(); s.MTTCacheMisses == 0 {
		t.Fatalf("no MTT misses: %+v", s)
	}
}

// TestMRCacheConfigValidate names the fields it refuses.
func TestMRCacheConfigValidate(t *testing.T) {
	for _, c := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.MPTCacheEntries = -1 }, "MPTCacheEntries"},
		{func(c *Config) { c.MTTCacheEntries, c.MRCacheWays = 8, 0 }, "MRCacheWays"},
		{func(c *Config) { c.MTTCacheEntries, c.MTTPage = 8, 3000 }, "MTTPage"},
	} {
		cfg := DefaultConfig()
		c.mod(&cfg)
		err := cfg.Validate()
		if err == nil || !contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.want, err)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
