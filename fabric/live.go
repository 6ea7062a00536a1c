package fabric

// Live is a subset of the whole-network Totals that only grows during a
// run, read while the run goes on: what an early-stop condition (a
// search probe that stops once "pfc/frames_tx>0" is decided) polls. Each
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

// Live sums the monotone counters now. It visits every port and priority
// (no allocation), so poll it every few microseconds of virtual time, not
// per packet.
func (n *Network) Live() Live {
	var l Live
	for _, h := range n.Hosts {
		l.PFCFramesTx += h.tx.Stats().Frames
	}
	for _, sw := range n.Switches {
		for _, p := range sw.Ports {
			tx, rx := p.tx.Stats(), p.rx.Stats()
			l.PFCFramesTx += tx.Frames
			for i := 0; i < NumPrio; i++ {
				c := p.Counters(i)
				l.Drops += c.Drops + c.HeadroomDrops
				l.WatchdogDrops += c.WatchdogDrops
				l.ECNMarks += c.ECNMarks
				l.XOFFEvents += tx.XOFF[i]
				l.StormTrips += rx.StormTrips[i]
			}
		}
	}
	return l
}
