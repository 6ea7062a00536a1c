//go:build unix

package rnic

import (
	"syscall"
	"testing"
)

// mapMem maps n bytes outside the Go heap (as bemalloc does) and unmaps
// them when the test ends.
func mapMem(t testing.TB, n int) []byte {
	t.Helper()
	ps := syscall.Getpagesize()
	b, err := syscall.Mmap(-1, 0, (n+ps-1)/ps*ps, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Munmap(b) })
	return b[:n]
}
