package workloads

import (
	"fmt"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/simhost"
)

// failures keeps the first few errors of a run; workloads report them rather
// than aborting, so one failed engine does not hide the rest of the result.
type failures struct {
	errs []error
}

func (f *failures) fail(err error) {
	if len(f.errs) < 8 {
		f.errs = append(f.errs, err)
	}
}

// failed records a failure event, returning any buffer it hands back.
func (f *failures) failed(h *simhost.Host, ev byteexpress.Event) {
	if ev.Kind == byteexpress.EvSendFailed || ev.Kind == byteexpress.EvBufferReturned {
		_ = h.Free(ev.Buf)
	}
	f.fail(fmt.Errorf("%s: %v %v", h.Name(), ev.Kind, ev.Err))
}
