//go:build !unix

package rnic

import "testing"

// mapMem falls back to Go heap memory, which does not move either.
func mapMem(t testing.TB, n int) []byte { return make([]byte, n) }
