package byteexpress

import "fmt"

// creditLedger is an engine's receive-credit accounting (paper §5.4.2), both
// directions:
//
//   - towards the peer (on when the peer advertised a dedicated RQ of depth
//     d): credits is how many of its receives we may still consume; SEND
//     and WRITE_WITH_IMM take one, the 4-byte field heading each SEND of
//     the peer gives some back, never above d;
//   - from the peer (rqDepth > 0 when we advertised a dedicated RQ): we
//     re-post consumed receives in batches of k = d/2 and owe the peer
//     toReturn credits until a SEND of ours reports them.
//
// The repost rule (see the package doc for why it cannot deadlock): a SEND
// that reports credits may take the last credit; any other consuming WR
// needs two, so one credit is always kept for a credit update.
type creditLedger struct {
	on       bool
	credits  int
	initial  int
	toReturn int

	rqDepth  int
	consumed int    // dedicated RQ: consumed, not yet re-posted
	rqNext   uint64 // absolute index of the next receive to re-post
}

// start adopts the peer's advertised receive depth (0: the peer uses an
// SRQ and nothing is counted).
func (c *creditLedger) start(peerDepth int) {
	c.on = peerDepth > 0
	c.credits = peerDepth
	c.initial = peerDepth
}

// canSend reports whether a SEND may open; it may take the last credit
// only if it carries a credit return.
func (c *creditLedger) canSend() bool {
	if !c.on {
		return true
	}
	need := 2
	if c.toReturn > 0 {
		need = 1
	}
	return c.credits >= need
}

// canWriteImm reports whether a WRITE_WITH_IMM (the last fragment of a
// large message) may be prepared: it never carries a return, so needs two.
func (c *creditLedger) canWriteImm() bool { return !c.on || c.credits >= 2 }

// take consumes one credit (no-op when off) and returns the count left.
func (c *creditLedger) take() int {
	if c.on {
		c.credits--
	}
	return c.credits
}

// claimReturn hands the credits owed to the peer to the SEND being opened.
func (c *creditLedger) claimReturn() int {
	n := c.toReturn
	c.toReturn = 0
	return n
}

// onReturn adds credits the peer reported; an error if they exceed d.
func (c *creditLedger) onReturn(n uint32) error {
	if !c.on {
		return nil
	}
	c.credits += int(n)
	if c.credits > c.initial {
		return fmt.Errorf("credit overflow")
	}
	return nil
}

// consume notes one receive completion on the dedicated RQ.
func (c *creditLedger) consume() {
	if c.rqDepth > 0 {
		c.consumed++
	}
}

// expectRecv reports whether position idx is the next receive to complete
// (the dedicated RQ completes in order).
func (c *creditLedger) expectRecv(idx int) bool {
	return idx < c.rqDepth && uint64(idx) == (c.rqNext+uint64(c.consumed))%uint64(c.rqDepth)
}

// batch is the next batch of k = d/2 receives to re-post, if k have been
// consumed: the position of the first and k. ok is false otherwise.
func (c *creditLedger) batch() (first uint64, k int, ok bool) {
	if c.rqDepth == 0 {
		return 0, 0, false
	}
	k = c.rqDepth / 2
	if c.consumed < k {
		return 0, 0, false
	}
	return c.rqNext % uint64(c.rqDepth), k, true
}

// reposted records that the batch went out: its receives are credits owed.
func (c *creditLedger) reposted(k int) {
	c.rqNext += uint64(k)
	c.consumed -= k
}

// owe adds k re-posted receives to the credits to return.
func (c *creditLedger) owe(k int) { c.toReturn += k }

// check verifies 0 <= credits <= d and that no full batch waits.
func (c *creditLedger) check() error {
	if c.on && (c.credits < 0 || c.credits > c.initial) {
		return fmt.Errorf("credits %d outside [0,%d]", c.credits, c.initial)
	}
	if c.rqDepth > 0 && c.consumed >= c.rqDepth/2 {
		return fmt.Errorf("%d receives consumed but not re-posted", c.consumed)
	}
	return nil
}
