//go:build unix

package selftest

import (
	"os"
	"syscall"
)

// mapMem maps n bytes outside the Go heap, so a device may DMA into them.
func mapMem(n int) ([]byte, error) {
	ps := os.Getpagesize()
	size := (max(n, 1) + ps - 1) / ps * ps
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, err
	}
	return b[:n], nil
}

func unmapMem(b []byte) { _ = syscall.Munmap(b[:cap(b)]) }
