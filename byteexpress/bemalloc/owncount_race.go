//go:build race

package bemalloc

import "sync/atomic"

// add changes the count; only the owner goroutine calls it (see ownCount).
func (c *ownCount) add(d int64) { atomic.AddInt64(&c.v, d) }
