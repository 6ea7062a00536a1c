//go:build !unix

package verbstest

// mapMem falls back to the Go heap where mmap is unavailable; such platforms
// only run simulated backends, which copy through the address.
func mapMem(n int) ([]byte, error) { return make([]byte, max(n, 1))[:n], nil }

func unmapMem([]byte) {}
