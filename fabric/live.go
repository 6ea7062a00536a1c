package fabric

// Live is a subset of the whole-network Totals that only grows during a
// run, read while the run goes on: what an early-stop condition (a
// search probe that stops once "pfc/frames_tx>0" is decided) reads. Each
// field means what the Totals field of the same name means; Drops is
// Totals.Drops + Totals.HeadroomDrops (the metric fabric/drops).
type Live struct {
	PFCFramesTx   int64
	XOFFEvents    int64
	Drops         int64
	WatchdogDrops int64
	StormTrips    int64
	ECNMarks      int64
}

// Live is the monotone counters now. It reads running totals kept as
// frames are sent, packets dropped and marked and storms trip, so it costs
// O(1) whatever the fabric's size and allocates nothing.
func (n *Network) Live() Live {
	l := n.live
	l.PFCFramesTx = n.swPFC.Frames + n.hostPFC.Frames
	l.XOFFEvents = n.swPFC.XOFF
	l.StormTrips = n.swPFC.StormTrips
	return l
}

// OnLive makes the network call f after every change of a Live counter,
// inside the event that made it (nil: stop): an early-stop watch reads
// Live there and may stop the kernel, which then ends the run after that
// event. It schedules nothing, so a run whose f never stops it is the run
// without f.
func (n *Network) OnLive(f func()) {
	n.onLive = f
	n.swPFC.Notify, n.hostPFC.Notify = f, f
}

// liveChanged calls the OnLive function, if any.
func (n *Network) liveChanged() {
	if n.onLive != nil {
		n.onLive()
	}
}

// Live is the subset of t that Network.Live reads during a run.
func (t *Totals) Live() Live {
	return Live{PFCFramesTx: t.PFCFramesTx, XOFFEvents: t.XOFFEvents, Drops: t.Drops + t.HeadroomDrops,
		WatchdogDrops: t.WatchdogDrops, StormTrips: t.StormTrips, ECNMarks: t.ECNMarks}
}
