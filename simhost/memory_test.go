package simhost

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/besim/besim/sim"
)

// memNow is the live Go heap after a collection and the process's resident
// set (VmRSS, 0 where /proc is missing), in bytes.
func memNow() (heap, rss int64) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) == 3 && f[0] == "VmRSS:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				rss = kb << 10
			}
		}
	}
	return int64(m.HeapAlloc), rss
}

// TestMemoryPerHost reports (does not assert) what a simulated host, one
// ByteExpress engine with its QP, and traffic through it hold: Go heap
// (runtime.MemStats.HeapAlloc after GC) and resident memory (VmRSS, which
// also counts the bemalloc blocks mmap'ed outside the Go heap). Run with
// -v to see the figures. The NICs are those of a workload cluster
// (experiment.ClusterConfig): RecvView, so the thread's SRQ buffers
// (SRQDepth x RecvBufSize, mapped and registered by the bemalloc pool) are
// never written and stay out of the resident set, and RDMAHead = AppHead,
// so a large message's WRITEs place only its first AppHead bytes. Per
// engine the send staging, SQDepth x RecvBufSize, is resident as it is
// written (a SEND takes the lowest free slot). At the training scenario's
// 85,808 engines (346 trainers x 124 servers, both ends) the staging is
// 2.6 GiB registered, of which a page or two per engine are written.
func TestMemoryPerHost(t *testing.T) {
	if testing.Short() {
		t.Skip("memory report")
	}
	const hosts = 16
	h0, r0 := memNow()
	// The training scenario's per-engine resources: per-thread SRQs, 8 send
	// WRs, 4 KiB receive buffers.
	cfg := DefaultConfig(hosts)
	cfg.BE.UseSRQ, cfg.BE.SQDepth, cfg.BE.RecvBufSize = true, 8, 4<<10
	cfg.NIC.RDMAHead, cfg.NIC.RecvView = AppHead, true
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	inUse := func() (n int64) {
		for _, h := range c.Hosts() {
			n += h.Pool().Stats().InUseBytes
		}
		return n
	}
	h1, r1 := memNow()
	b1 := inUse()
	t.Logf("per host (NIC, context, pool, endpoint, %d I/O threads): heap %d KiB, RSS %d KiB",
		len(c.Host(0).Threads()), (h1-h0)/hosts>>10, (r1-r0)/hosts>>10)

	// One engine (a socket: QP, rings, staging) per ordered pair 0 -> i.
	for i := 1; i < hosts; i++ {
		c.Host(i).Listen()
	}
	for i := 1; i < hosts; i++ {
		if _, err := c.Host(0).Dial(c.Host(i)); err != nil {
			t.Fatal(err)
		}
	}
	c.Run(5 * sim.Millisecond)
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
	h2, r2 := memNow()
	t.Logf("per connection (an engine and its QP at each end): heap %d KiB, RSS %d KiB, bemalloc buffers %d KiB (send staging, resident once written)",
		(h2-h1)/(hosts-1)>>10, (r2-r1)/(hosts-1)>>10, (inUse()-b1)/(hosts-1)>>10)

	// Traffic: a 64 KiB stream over a fresh pair, after which its buffers
	// are resident.
	s := newStreamCfg(t, 64<<10, 4, true)
	h3, r3 := memNow()
	s.c.Run(2 * sim.Millisecond)
	s.check(t)
	h4, r4 := memNow()
	t.Logf("two-host 64 KiB stream: build heap %d KiB RSS %d KiB; after 2 ms (%d messages) heap +%d KiB, RSS +%d KiB",
		(h3-h2)>>10, (r3-r2)>>10, s.rx.msgs, (h4-h3)>>10, (r4-r3)>>10)
	runtime.KeepAlive(c)
	runtime.KeepAlive(s)
}
