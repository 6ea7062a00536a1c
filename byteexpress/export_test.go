package byteexpress

// EngineInfo describes one engine, for the external tests (not public API:
// it exists only in test builds).
type EngineInfo struct {
	ID            uint64
	Remote        Addr
	QPN           uint32
	State         string
	Credits       int // -1 when the peer uses an SRQ (no credits)
	InflightBytes int
	InFlightWRs   int
	PendingWRs    int
	Sockets       int
}

// Engines describes the thread's engines (call between Polls).
func (t *IOThread) Engines() []EngineInfo {
	out := make([]EngineInfo, 0, len(t.engines))
	for _, e := range t.engines {
		c := e.cred.credits
		if !e.cred.on {
			c = -1
		}
		out = append(out, EngineInfo{ID: e.id, Remote: e.remote, QPN: e.qpn, State: e.state.String(),
			Credits: c, InflightBytes: e.win.inflight, InFlightWRs: e.ring.inFlight(),
			PendingWRs: e.ring.pendingWRs(), Sockets: len(e.mine) + len(e.theirs)})
	}
	return out
}
