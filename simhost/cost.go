package simhost

import (
	"fmt"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
)

// CPUCost is the modelled CPU time of the ByteExpress core's own work in one
// I/O-thread step, charged from the step's byteexpress.Ops on top of what the
// simulated RNIC's provider already charges for verbs calls (rnic.Config:
// PostSendCall, PostSendPerWQE, DoorbellCost, PostRecvCall, PostRecvPerWQE,
// PollCall, PollPerCQE, RegMR*). All values are sim.Time (picoseconds);
// CopyBandwidth is a units.Rate. DefaultCPUCost documents each default.
type CPUCost struct {
	Step    sim.Time // per Poll call: inbox check, timer heap peek, loop overhead
	Command sim.Time // per API command taken from the inbox (Send, Dial, Close, connect reply)
	CQE     sim.Time // per completion dispatched (QPN lookup, ring/credit bookkeeping)
	SendWR  sim.Time // per send WR prepared (scheduler turn, WR and SGE fill, slot bookkeeping)
	RecvWR  sim.Time // per receive WR re-armed (beyond the provider's PostRecvPerWQE)
	Record  sim.Time // per control/data record written into or parsed from a SEND
	Message sim.Time // per message handed to the application (event, ownership transfer)
	Alloc   sim.Time // per bemalloc Allocate or Deallocate call
	Timer   sim.Time // per timer fired (keepalive send/check, connect timeout)
	// CopyBandwidth is the memcpy rate of small-message payload copies (into
	// the SEND staging buffer at the sender, out of the receive buffer at the
	// receiver). 0 makes copies free.
	CopyBandwidth units.Rate
}

// Default CPU costs. They are assumptions (the paper gives no per-operation
// CPU profile): each is a short, cache-resident bookkeeping path of a few
// dozen to a hundred-odd instructions on a ~3 GHz server core, the order that
// user-space RDMA stacks report for their per-request software overhead
// (eRPC, NSDI 2019, spends about 100-200 ns of CPU per small RPC end to end
// including the NIC driver; FaSST and Kalia et al.'s "Design guidelines",
// ATC 2016, put WQE construction at tens of ns). CopyBandwidth is a single
// core's memcpy of L2/L3-resident data (about 10 GB/s).
const (
	DefaultStepCost      = 50 * sim.Nanosecond
	DefaultCommandCost   = 30 * sim.Nanosecond
	DefaultCQECost       = 30 * sim.Nanosecond
	DefaultSendWRCost    = 40 * sim.Nanosecond
	DefaultRecvWRCost    = 5 * sim.Nanosecond
	DefaultRecordCost    = 15 * sim.Nanosecond
	DefaultMessageCost   = 50 * sim.Nanosecond
	DefaultAllocCost     = 20 * sim.Nanosecond
	DefaultTimerCost     = 20 * sim.Nanosecond
	DefaultCopyBandwidth = units.Rate(8 * 10 * units.GB) // 10 GB/s
)

// DefaultCPUCost returns the default costs above.
func DefaultCPUCost() CPUCost {
	return CPUCost{
		Step:          DefaultStepCost,
		Command:       DefaultCommandCost,
		CQE:           DefaultCQECost,
		SendWR:        DefaultSendWRCost,
		RecvWR:        DefaultRecvWRCost,
		Record:        DefaultRecordCost,
		Message:       DefaultMessageCost,
		Alloc:         DefaultAllocCost,
		Timer:         DefaultTimerCost,
		CopyBandwidth: DefaultCopyBandwidth,
	}
}

// Validate reports the first negative field.
func (c *CPUCost) Validate() error {
	for _, f := range []struct {
		n string
		v sim.Time
	}{{"Step", c.Step}, {"Command", c.Command}, {"CQE", c.CQE}, {"SendWR", c.SendWR}, {"RecvWR", c.RecvWR},
		{"Record", c.Record}, {"Message", c.Message}, {"Alloc", c.Alloc}, {"Timer", c.Timer}} {
		if f.v < 0 {
			return fmt.Errorf("simhost: CPUCost.%s = %v: must be >= 0", f.n, f.v)
		}
	}
	if c.CopyBandwidth < 0 {
		return fmt.Errorf("simhost: CPUCost.CopyBandwidth = %d bit/s: must be >= 0", c.CopyBandwidth)
	}
	return nil
}

// copyTime is the time to copy n bytes.
func (c *CPUCost) copyTime(n int64) sim.Time {
	if c.CopyBandwidth <= 0 || n <= 0 {
		return 0
	}
	return sim.TxTime(n, c.CopyBandwidth)
}

// Of is the CPU time of one step that performed ops (excluding the verbs
// calls, which the RNIC's provider model charges itself).
func (c *CPUCost) Of(ops *byteexpress.Ops) sim.Time {
	t := sim.Time(ops.Steps)*c.Step +
		sim.Time(ops.Commands)*c.Command +
		sim.Time(ops.CQEs)*c.CQE +
		sim.Time(ops.SendWRs)*c.SendWR +
		sim.Time(ops.RecvWRs)*c.RecvWR +
		sim.Time(ops.RecordsOut+ops.RecordsIn)*c.Record +
		sim.Time(ops.Messages)*c.Message +
		sim.Time(ops.Allocs+ops.Frees)*c.Alloc +
		sim.Time(ops.Timers)*c.Timer
	return t + c.copyTime(ops.BytesCopied)
}
