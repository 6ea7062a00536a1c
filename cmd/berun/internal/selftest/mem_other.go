//go:build !unix

package selftest

import "errors"

func mapMem(n int) ([]byte, error) { return nil, errors.New("selftest: needs mmap (unix)") }

func unmapMem(b []byte) {}
