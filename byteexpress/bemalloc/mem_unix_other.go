//go:build unix && !linux

package bemalloc

// advise is a no-op outside Linux: Config.HugePages is Linux's
// MADV_HUGEPAGE.
func advise(m mapping, _ bool) mapping { return m }
