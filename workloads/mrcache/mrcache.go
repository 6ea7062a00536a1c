// Package mrcache is the memory-registration workload of the paper's §5.2
// claim that registering large blocks (bemalloc's 4 MiB) "limits
// memory-region proliferation and pressure on RNIC caches that hold
// memory-region metadata", written free of the simulator. One I/O thread
// keeps Depth RDMA WRITEs of Message bytes outstanding on one RC QP, each
// from the next free one of Buffers message buffers (a working set cycled
// round-robin, as a pool hands out buffers), under one of three
// registrations of the same memory:
//
//   - block: the buffers are carved from Block-byte regions registered once
//     (bemalloc);
//   - buffer: one region per buffer, registered once (a fresh MR per
//     buffer: MR proliferation without registration on the data path);
//   - message: each message's buffer is registered just before its WRITE
//     is posted and deregistered at its completion (ibv_reg_mr per
//     message).
//
// It holds the configuration, the buffer and region layout, the poster's
// state machine and the reduction to the mrcache table and metrics.
// Package mrcachesim drives it on the simulated NIC (package rnic with its
// MPT/MTT caches on). It imports no simulator model.
package mrcache

import (
	"fmt"

	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
)

// Registration is how the buffers are registered.
type Registration string

// Registrations.
const (
	Block   Registration = "block"   // Block-byte regions registered once (bemalloc)
	Buffer  Registration = "buffer"  // one region per buffer, registered once
	Message Registration = "message" // registered per message, deregistered at completion
)

// Config is one run.
type Config struct {
	Registration Registration
	Message      int      // bytes per WRITE; default 4 KiB
	Buffers      int      // message buffers cycled; default 4096
	Block        int      // block region size; default 4 MiB
	Depth        int      // WRITEs outstanding; default 16
	Rate         int64    // link rate; default 100 Gb/s
	Warmup       sim.Time // default 200 us
	Duration     sim.Time // default 1 ms
}

// WithDefaults returns c with its zero fields set to the defaults.
func (c Config) WithDefaults() Config {
	if c.Registration == "" {
		c.Registration = Block
	}
	if c.Message == 0 {
		c.Message = 4 << 10
	}
	if c.Buffers == 0 {
		c.Buffers = 4096
	}
	if c.Block == 0 {
		c.Block = 4 << 20
	}
	if c.Depth == 0 {
		c.Depth = 16
	}
	if c.Rate == 0 {
		c.Rate = 100 * units.Gbps
	}
	if c.Warmup == 0 {
		c.Warmup = 200 * sim.Microsecond
	}
	if c.Duration == 0 {
		c.Duration = sim.Millisecond
	}
	return c
}

// Check reports an inconsistent configuration (after WithDefaults).
func (c *Config) Check() error {
	switch {
	case c.Registration != Block && c.Registration != Buffer && c.Registration != Message:
		return fmt.Errorf("mrcache: registration %q (allowed: block, buffer, message)", c.Registration)
	case c.Message < 1 || c.Buffers < 1 || c.Depth < 1:
		return fmt.Errorf("mrcache: message %d, buffers %d, depth %d: each must be >= 1", c.Message, c.Buffers, c.Depth)
	case c.Depth > c.Buffers:
		return fmt.Errorf("mrcache: depth %d exceeds buffers %d (each WRITE in flight holds a buffer)", c.Depth, c.Buffers)
	case c.Block < c.Stride():
		return fmt.Errorf("mrcache: block %d is smaller than one buffer (%d bytes)", c.Block, c.Stride())
	}
	return nil
}

// FromScenario is the run of registration reg of benchmark scenario s (kind
// mrcache), no defaults applied.
func FromScenario(s *scenarios.Scenario, reg Registration) Config {
	b := s.Benchmark
	return Config{Registration: reg, Message: int(b.Message), Buffers: b.Buffers, Block: int(b.Block),
		Depth: b.Depth, Rate: int64(b.Rate), Warmup: b.Warmup.Time(), Duration: s.Duration.Time()}
}

// Stride is the distance between buffers: the message rounded up to 64
// bytes (a cache line, as an allocator's size class would).
func (c *Config) Stride() int { return (c.Message + 63) / 64 * 64 }

// Offset is buffer i's offset from the base of the working set.
func (c *Config) Offset(i int) int64 { return int64(i) * int64(c.Stride()) }

// Blocks is the block regions covering the working set.
func (c *Config) Blocks() int {
	per := c.Block / c.Stride()
	return (c.Buffers + per - 1) / per
}

// BlockOf is the block holding buffer i and the buffer's offset in it
// (buffers never straddle blocks).
func (c *Config) BlockOf(i int) (block int, off int64) {
	per := c.Block / c.Stride()
	return i / per, int64(i%per) * int64(c.Stride())
}

// Addr is buffer i's offset from the base of the working set: its block's
// place plus its offset in the block (BlockOf).
func (c *Config) Addr(i int) int64 {
	b, off := c.BlockOf(i)
	return int64(b)*int64(c.Block) + off
}

// Span is the bytes from the base of the working set to the end of its
// last block: the memory a driver maps.
func (c *Config) Span() int64 { return int64(c.Blocks()) * int64(c.Block) }

// TargetBytes is the receiver's region, one registered once for every
// registration: Depth slots of Stride bytes, the WRITEs' targets in turn
// (Poster.RemoteSlot).
func (c *Config) TargetBytes() int { return c.Depth * c.Stride() }

// Region is a memory region of the working set: Len bytes at Off from its
// base.
type Region struct {
	Off int64
	Len int
}

// PerMessage says whether each WRITE's buffer is registered (BufferRegion)
// just before the WRITE is posted and deregistered at its completion
// (registration message).
func (c *Config) PerMessage() bool { return c.Registration == Message }

// Regions is the regions registered once, before the first WRITE, in the
// order they are registered: the Blocks (registration block), one
// BufferRegion per buffer (buffer), none (message).
func (c *Config) Regions() []Region {
	var rs []Region
	switch c.Registration {
	case Block:
		for b := range c.Blocks() {
			rs = append(rs, Region{Off: int64(b) * int64(c.Block), Len: c.Block})
		}
	case Buffer:
		for i := range c.Buffers {
			rs = append(rs, c.BufferRegion(i))
		}
	}
	return rs
}

// RegionOf is the index in Regions of the region holding buffer i; -1
// with registration message (PerMessage: no region holds it before its
// WRITE).
func (c *Config) RegionOf(i int) int {
	switch c.Registration {
	case Block:
		b, _ := c.BlockOf(i)
		return b
	case Buffer:
		return i
	}
	return -1
}

// BufferRegion is buffer i's own region: its Message bytes at Addr(i).
func (c *Config) BufferRegion(i int) Region { return Region{Off: c.Addr(i), Len: c.Message} }

// Poster hands out buffers round-robin, skipping those in flight.
type Poster struct {
	cfg   *Config
	busy  []bool
	next  int
	out   int
	Posts uint64
}

// NewPoster returns the poster of cfg (defaults applied).
func NewPoster(cfg *Config) *Poster {
	return &Poster{cfg: cfg, busy: make([]bool, cfg.Buffers)}
}

// Next is the buffer of the next WRITE; ok is false when Depth are in
// flight.
func (p *Poster) Next() (buf int, ok bool) {
	if p.out >= p.cfg.Depth {
		return 0, false
	}
	for range p.cfg.Buffers {
		i := p.next
		p.next = (p.next + 1) % p.cfg.Buffers
		if !p.busy[i] {
			p.busy[i] = true
			p.out++
			p.Posts++
			return i, true
		}
	}
	return 0, false
}

// RemoteSlot is the offset, in the receiver's region (TargetBytes), of
// the target of the WRITE Next last handed out: the slots in turn.
func (p *Poster) RemoteSlot() int64 {
	return int64(p.Posts%uint64(p.cfg.Depth)) * int64(p.cfg.Stride())
}

// Done returns buffer i (its WRITE completed).
func (p *Poster) Done(i int) {
	if p.busy[i] {
		p.busy[i] = false
		p.out--
	}
}

// Outstanding is the WRITEs in flight.
func (p *Poster) Outstanding() int { return p.out }

// Point is one run's measurement (the sender's NIC counters over the
// measured interval; -1 where not measured).
type Point struct {
	Mmps, Gbps         float64
	MPTMissRate        float64 // sender NIC: MPT misses / lookups
	MTTMissRate        float64 // sender NIC: MTT misses / lookups
	MPTMisses          uint64
	MTTMisses          uint64
	RecvMTTMissRate    float64 // receiver NIC (the WRITE targets, registered once)
	RegShare           float64 // share of the I/O thread's busy time in ibv_reg_mr
	Regions            int     // regions registered at the end of the warmup
	RegistrationsPerMs float64
	// NoCacheCounters marks a point measured where the NIC's MPT/MTT
	// cache counters cannot be read (a real NIC, berun): Reduce leaves its
	// miss-rate metrics out rather than report a number nobody measured.
	NoCacheCounters bool
}

// Reduce adds the mrcache table and the metrics
// mrcache/<registration>/{mmps,gbps,mpt_miss_rate,mtt_miss_rate} for
// points[i] (the scenario's registrations, in order); the miss rates only
// where the point has them (not NoCacheCounters; its table cells of the
// cache counters are then -1).
func Reduce(s *scenarios.Scenario, regs []Registration, points []Point, r *report.Result) {
	b := s.Benchmark
	tbl := report.Table{Name: "mrcache", KeyName: "registration",
		Title: fmt.Sprintf("%d B WRITEs from %d buffers, %d outstanding, by registration (block %d B): throughput and the sender NIC's translation-cache misses",
			int64(b.Message), b.Buffers, b.Depth, int64(b.Block)),
		Columns: []report.Column{{Name: "rate", Unit: "Mmsg/s"}, {Name: "goodput", Unit: "Gbps"},
			{Name: "MPT miss rate", Unit: "%"}, {Name: "MTT miss rate", Unit: "%"}, {Name: "MPT misses"}, {Name: "MTT misses"},
			{Name: "receiver MTT miss rate", Unit: "%"}, {Name: "CPU in reg_mr", Unit: "%"}, {Name: "regions"}}}
	for i, reg := range regs {
		p := points[i]
		k := "mrcache/" + string(reg) + "/"
		r.Add(k+"mmps", p.Mmps, "Mmsg/s")
		r.Add(k+"gbps", p.Gbps, "Gbps")
		if !p.NoCacheCounters {
			r.Add(k+"mpt_miss_rate", p.MPTMissRate, "")
			r.Add(k+"mtt_miss_rate", p.MTTMissRate, "")
		}
		mptMisses, mttMisses := float64(p.MPTMisses), float64(p.MTTMisses)
		if p.NoCacheCounters {
			mptMisses, mttMisses = -1, -1
		}
		tbl.AddRow(string(reg), p.Mmps, p.Gbps, pct(p.MPTMissRate), pct(p.MTTMissRate), mptMisses, mttMisses,
			pct(p.RecvMTTMissRate), pct(p.RegShare), float64(p.Regions))
	}
	r.Tables = append(r.Tables, tbl)
}

// pct is fraction f in percent; -1 (not measured) stays -1.
func pct(f float64) float64 {
	if f < 0 {
		return -1
	}
	return 100 * f
}
