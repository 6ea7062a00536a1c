package pfc

import (
	"encoding/binary"

	"github.com/besim/besim/sim"
)

// Recorder records a Compact series as the runs offered to it (AddN's n
// samples of value v) while they are few, and builds the Compact only when
// the series is read: a queue whose depth changes now and then costs a few
// bytes a change, and no halving, where its Compact takes a byte a sample
// and halves every time it fills. Once the runs take more room than a full
// Compact would, it becomes that Compact (the same AddN calls, replayed)
// and records into it directly, so its memory stays bounded by the
// capacity. Either way Compact returns the Compact that the same AddN calls
// build, byte for byte.
type Recorder struct {
	t0, dt sim.Time
	cap    int
	last   int64  // value of the last run logged
	log    []byte // per run: n as a uvarint, v-last as a varint
	c      *Compact
}

// NewRecorder returns an empty recorder of a Compact NewCompact(capacity,
// t0, dt) would hold.
func NewRecorder(capacity int, t0, dt sim.Time) *Recorder {
	return &Recorder{t0: t0, dt: dt, cap: capacity}
}

// AddN offers n samples of value v, as Compact.AddN does.
func (r *Recorder) AddN(n, v int64) {
	if r.c != nil {
		r.c.AddN(n, v)
		return
	}
	if n <= 0 {
		return
	}
	r.log = binary.AppendUvarint(r.log, uint64(n))
	r.log = binary.AppendVarint(r.log, v-r.last)
	r.last = v
	if len(r.log) > 2*r.cap { // about what a full Compact holds, with room
		r.c = r.replay()
		r.log = nil
	}
}

// Compact is the series recorded: a Compact built from the logged runs
// (a new one at each call), or the one the recorder became.
func (r *Recorder) Compact() *Compact {
	if r.c != nil {
		return r.c
	}
	return r.replay()
}

// replay offers the logged runs to a new Compact.
func (r *Recorder) replay() *Compact {
	c := NewCompact(r.cap, r.t0, r.dt)
	var v int64
	for i := 0; i < len(r.log); {
		n, k := binary.Uvarint(r.log[i:])
		i += k
		d, k := binary.Varint(r.log[i:])
		i += k
		v += d
		c.AddN(int64(n), v)
	}
	return c
}
