package sim

import "sync/atomic"

// progressEvery is how many events a kernel dispatches between two
// publications of its progress (a power of two; at 1-2M events/s about
// every 30-60 ms of wall time).
const progressEvery = 1 << 16

// progress is what running kernels publish while Observe is on, read from
// another goroutine (a progress line) without a data race: the virtual
// time the last publishing kernel reached and the events all kernels
// dispatched.
var progress struct {
	on     atomic.Bool
	now    atomic.Int64
	events atomic.Uint64
}

// Observe turns the publication of progress on or off (off by default;
// a kernel then only tests an event count against a mask). It resets the
// published figures. Meant for one run per process (besim run): with
// several kernels running at once Progress's time is whichever published
// last.
func Observe(on bool) {
	progress.now.Store(0)
	progress.events.Store(0)
	progress.on.Store(on)
}

// Progress returns the virtual time the running kernel reached and the
// events dispatched since Observe(true), as of the last publication (every
// 65,536 events of each kernel); zeros while Observe is off.
func Progress() (now Time, events uint64) {
	return Time(progress.now.Load()), progress.events.Load()
}

// publish is called every progressEvery events.
func (k *Kernel) publish() {
	if !progress.on.Load() {
		k.published = k.events
		return
	}
	progress.events.Add(k.events - k.published)
	k.published = k.events
	progress.now.Store(int64(k.now))
}
