//go:build !unix

package role

import "errors"

func mapMem(n int) ([]byte, error) { return nil, errors.New("perftest roles need mmap (unix)") }

func unmapMem(b []byte) {}
