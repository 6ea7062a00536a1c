package byteexpress

import "time"

// keepalive is an engine's liveness state (paper §7.2): every interval it
// sends the peer an increasing sequence number, and the engine fails if the
// peer's number has not advanced for timeout. An interval of 0 turns it off.
type keepalive struct {
	interval time.Duration
	timeout  time.Duration
	seq      uint64 // last sequence number sent
	peerSeq  uint64 // highest sequence number heard
	sendAt   time.Duration
	deadline time.Duration
	due      bool // a keepalive record should go out
}

func (k *keepalive) on() bool { return k.interval > 0 }

// start arms the timers when the engine comes up at now.
func (k *keepalive) start(now time.Duration) {
	if k.on() {
		k.sendAt = now + k.interval
		k.deadline = now + k.timeout
	}
}

// next is when the keepalive needs attention.
func (k *keepalive) next() time.Duration { return min(k.sendAt, k.deadline) }

// tick handles the timer at now: expired when the peer went silent for
// timeout; otherwise, when the interval elapsed, a record becomes due
// (send reports that it did so now).
func (k *keepalive) tick(now time.Duration) (expired, send bool) {
	if now >= k.deadline {
		return true, false
	}
	if now >= k.sendAt {
		k.due = true
		k.sendAt = now + k.interval
		return false, true
	}
	return false, false
}

// nextSeq is the number of the record being written; it clears due.
func (k *keepalive) nextSeq() uint64 {
	k.seq++
	k.due = false
	return k.seq
}

// heard records a peer's sequence number; it reports whether the number
// advanced (stale or repeated numbers do not extend the deadline).
func (k *keepalive) heard(seq uint64) bool {
	if seq <= k.peerSeq {
		return false
	}
	k.peerSeq = seq
	return true
}

// extend moves the deadline to now + timeout after the peer was heard.
func (k *keepalive) extend(now time.Duration) { k.deadline = now + k.timeout }
