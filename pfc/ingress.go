package pfc

import (
	"errors"
	"fmt"

	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
)

// Defaults for priority-group thresholds. Sources: the HPCC ns-3 simulator's
// switch MMU (alibaba-edu/High-Precision-Congestion-Control, switch-mmu.cc:
// pfc_a_shift = 3, i.e. XOFF = free/8; resume_offset = 3 KiB), which models a
// Broadcom-style dynamic-threshold MMU.
const (
	DefaultAlpha     = 1.0 / 8
	DefaultXONOffset = units.Size(3 * units.KiB)
)

// Buffer is a switch's packet memory: a shared pool plus a headroom pool
// reserved for lossless priority groups. Every admitted frame is charged to
// exactly one of the two; Free is what dynamic thresholds scale.
type Buffer struct {
	Size     int64 // total bytes
	Reserved int64 // headroom carved out for lossless PGs

	SharedUsed   int64
	HeadroomUsed int64

	// High-water marks.
	MaxSharedUsed   int64
	MaxHeadroomUsed int64
}

// Init sets the total size and clears all use and reservations. The
// accounting fields stay plain int64 bytes: the packet path adds to them.
func (b *Buffer) Init(size units.Size) { *b = Buffer{Size: size.Bytes()} }

// Reserve carves n bytes of headroom out of the shared pool.
func (b *Buffer) Reserve(n units.Size) error {
	if n < 0 {
		return fmt.Errorf("pfc: negative headroom reservation %d", n)
	}
	if b.Reserved+n.Bytes() >= b.Size {
		return fmt.Errorf("pfc: headroom reservations (%d B) leave no shared buffer in %d B", b.Reserved+n.Bytes(), b.Size)
	}
	b.Reserved += n.Bytes()
	return nil
}

// SharedSize is the shared pool: total minus headroom reservations.
func (b *Buffer) SharedSize() int64 { return b.Size - b.Reserved }

// Free is the unused part of the shared pool.
func (b *Buffer) Free() int64 {
	f := b.Size - b.Reserved - b.SharedUsed
	if f < 0 {
		return 0
	}
	return f
}

// Used is all bytes held, shared and headroom.
func (b *Buffer) Used() int64 { return b.SharedUsed + b.HeadroomUsed }

// Thresholds configures one priority group.
type Thresholds struct {
	// Lossless enables PFC for the group: it pauses instead of dropping.
	// A lossy group is only charged to the shared pool and drops when it is
	// full (egress admission is the caller's business).
	Lossless bool
	// Alpha > 0 selects dynamic thresholds: XOFF = Alpha × Buffer.Free(),
	// XON = XOFF − XONOffset (not below 0).
	Alpha     float64
	XONOffset units.Size
	// XOFF and XON are static thresholds of shared buffer, used when Alpha is
	// 0. XON <= XOFF.
	XOFF, XON units.Size
	// Headroom is this group's reservation (see Headroom).
	Headroom units.Size
}

// Validate reports a configuration error in words.
func (t Thresholds) Validate() error {
	if !t.Lossless {
		return nil
	}
	switch {
	case t.Alpha < 0:
		return fmt.Errorf("pfc: alpha %v is negative", t.Alpha)
	case t.Alpha > 0 && t.XONOffset < 0:
		return fmt.Errorf("pfc: XON offset %d is negative", t.XONOffset)
	case t.Alpha == 0 && t.XOFF <= 0:
		return errors.New("pfc: static thresholds need XOFF > 0 (or set alpha for dynamic thresholds)")
	case t.Alpha == 0 && (t.XON < 0 || t.XON > t.XOFF):
		return fmt.Errorf("pfc: static XON %d must be in [0, XOFF=%d]", t.XON, t.XOFF)
	case t.Headroom <= 0:
		return fmt.Errorf("pfc: lossless headroom %d must be positive", t.Headroom)
	}
	return nil
}

// Action is what the caller must do after an accounting step.
type Action uint8

// Actions.
const (
	None   Action = iota
	Pause         // assert pause (send XOFF) for this priority on the ingress port
	Resume        // release pause (send XON)
	Drop          // do not admit: lossy buffer full, or lossless headroom overflow
)

func (a Action) String() string {
	switch a {
	case None:
		return "none"
	case Pause:
		return "pause"
	case Resume:
		return "resume"
	case Drop:
		return "drop"
	}
	return fmt.Sprintf("Action(%d)", uint8(a))
}

// IngressStats are one priority group's counters.
type IngressStats struct {
	XOFF, XON         int64 // pause asserted / released events
	HeadroomDrops     int64 // lossless frames dropped: headroom overflow (misconfiguration)
	HeadroomDropBytes int64
	BufferDrops       int64 // lossy frames dropped: shared pool full
	MaxBytes          int64 // high-water mark of shared + headroom bytes
	MaxShared         int64
	MaxHeadroom       int64
	MaxXOFF           int64 // largest XOFF threshold in force at an admission
}

// Ingress accounts one (ingress port, priority) group. The zero value is
// unusable; call Init. Not safe for concurrent use.
type Ingress struct {
	t   Thresholds
	buf *Buffer

	Shared   int64 // bytes charged to the shared pool
	Hdrm     int64 // bytes charged to headroom
	asserted bool

	Stats IngressStats
	// Trace, if set, receives (time, bytes held) at every XOFF and XON.
	Trace Sampler
}

// Init binds the group to its buffer. The headroom must already be reserved
// in buf by the caller (Buffer.Reserve), once per lossless group.
func (g *Ingress) Init(t Thresholds, buf *Buffer) {
	*g = Ingress{t: t, buf: buf}
}

// Thresholds returns the group's configuration.
func (g *Ingress) Thresholds() Thresholds { return g.t }

// XOFF is the pause threshold now, in shared bytes (a plain int64, as the
// accounting it is compared with; the conversions from the typed thresholds
// here and below cost nothing at run time).
func (g *Ingress) XOFF() int64 {
	if g.t.Alpha > 0 {
		return int64(g.t.Alpha * float64(g.buf.Free()))
	}
	return g.t.XOFF.Bytes()
}

// XON is the resume threshold now, in shared bytes.
func (g *Ingress) XON() int64 {
	if g.t.Alpha > 0 {
		x := g.XOFF() - g.t.XONOffset.Bytes()
		if x < 0 {
			return 0
		}
		return x
	}
	return g.t.XON.Bytes()
}

// Bytes is what the group holds.
func (g *Ingress) Bytes() int64 { return g.Shared + g.Hdrm }

// Asserted reports whether the group is asserting pause on its port.
func (g *Ingress) Asserted() bool { return g.asserted }

// Admit charges an arriving frame of n bytes. It returns Drop (do not keep
// the frame; counted), Pause (keep it and send XOFF), or None.
func (g *Ingress) Admit(now sim.Time, n int64) Action {
	b := g.buf
	if !g.t.Lossless {
		if b.SharedUsed+n > b.SharedSize() {
			g.Stats.BufferDrops++
			return Drop
		}
		g.chargeShared(n)
		return None
	}
	xoff := g.XOFF()
	if xoff > g.Stats.MaxXOFF {
		g.Stats.MaxXOFF = xoff
	}
	switch {
	case (!g.asserted || g.Shared < xoff) && b.SharedUsed+n <= b.SharedSize():
		g.chargeShared(n)
	case g.Hdrm+n <= g.t.Headroom.Bytes():
		g.Hdrm += n
		b.HeadroomUsed += n
		if g.Hdrm > g.Stats.MaxHeadroom {
			g.Stats.MaxHeadroom = g.Hdrm
		}
		if b.HeadroomUsed > b.MaxHeadroomUsed {
			b.MaxHeadroomUsed = b.HeadroomUsed
		}
	default:
		g.Stats.HeadroomDrops++
		g.Stats.HeadroomDropBytes += n
		return Drop
	}
	if m := g.Shared + g.Hdrm; m > g.Stats.MaxBytes {
		g.Stats.MaxBytes = m
	}
	if !g.asserted && (g.Hdrm > 0 || g.Shared >= xoff) {
		g.asserted = true
		g.Stats.XOFF++
		if g.Trace != nil {
			g.Trace.Sample(now, g.Shared+g.Hdrm)
		}
		return Pause
	}
	return None
}

func (g *Ingress) chargeShared(n int64) {
	b := g.buf
	g.Shared += n
	b.SharedUsed += n
	if g.Shared > g.Stats.MaxShared {
		g.Stats.MaxShared = g.Shared
	}
	if b.SharedUsed > b.MaxSharedUsed {
		b.MaxSharedUsed = b.SharedUsed
	}
	if m := g.Shared + g.Hdrm; m > g.Stats.MaxBytes {
		g.Stats.MaxBytes = m
	}
}

// Release returns n bytes of a departing (or dropped-after-admission) frame,
// headroom first, and returns Resume when the group should send XON.
func (g *Ingress) Release(now sim.Time, n int64) Action {
	b := g.buf
	h := min(n, g.Hdrm)
	g.Hdrm -= h
	b.HeadroomUsed -= h
	s := n - h
	if s > g.Shared {
		s = g.Shared // never underflow on a caller bug; accounting stays sane
	}
	g.Shared -= s
	b.SharedUsed -= s
	if g.asserted && g.Hdrm == 0 && g.Shared <= g.XON() {
		g.asserted = false
		g.Stats.XON++
		if g.Trace != nil {
			g.Trace.Sample(now, g.Shared)
		}
		return Resume
	}
	return None
}
