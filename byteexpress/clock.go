package byteexpress

import (
	"math"
	"time"
)

// Clock is a monotonic clock: Now is the time elapsed since an arbitrary,
// fixed epoch, as a time.Duration (int64 nanoseconds).
//
// The core itself never reads a clock: time enters only as the now argument
// of (*IOThread).Poll and leaves only as Ready.Next. Clock is the small
// interface the adapters implement to produce that argument: the wall-clock
// adapter (package byteexpress/realtime) uses the process's monotonic clock,
// and the simulator adapter maps virtual time (sim.Time, int64 picoseconds)
// to nanoseconds by dividing by 1000 (truncating; the core needs no finer
// resolution, and picosecond instants that round to the same nanosecond
// simply run in the same step).
type Clock interface {
	Now() time.Duration
}

// Never is the Ready.Next of a thread with no timer pending: it needs to run
// again only when a completion or a command arrives.
const Never = time.Duration(math.MaxInt64)
