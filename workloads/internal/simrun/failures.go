// Package simrun sits between the workloads' simulation drivers (incastsim,
// pssim, fragsizesim, holsim, ...) and simhost: what they share (the error
// list, the setup bound, the two-host testbed of the core benchmarks).
package simrun

import (
	"fmt"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/simhost"
)

// Failures keeps the first few errors of a run; workloads report them rather
// than aborting, so one failed engine does not hide the rest of the result.
type Failures struct {
	Errs []error
}

// Fail records err (the first eight are kept).
func (f *Failures) Fail(err error) {
	if len(f.Errs) < 8 {
		f.Errs = append(f.Errs, err)
	}
}

// Failed records a failure event, returning any buffer it hands back.
func (f *Failures) Failed(h *simhost.Host, ev byteexpress.Event) {
	if ev.Kind == byteexpress.EvSendFailed || ev.Kind == byteexpress.EvBufferReturned {
		_ = h.Free(ev.Buf)
	}
	f.Fail(fmt.Errorf("%s: %v %v", h.Name(), ev.Kind, ev.Err))
}

// SetupLimit bounds a workload's connection phase (virtual time).
const SetupLimit = sim.Second
