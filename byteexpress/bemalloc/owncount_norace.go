//go:build !race

package bemalloc

// add changes the count; only the owner goroutine calls it (see ownCount).
func (c *ownCount) add(d int64) { c.v += d }
