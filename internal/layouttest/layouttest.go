// Package layouttest sits outside the build of both tools, under the tests
// of fabric and rnic: it checks that a struct laid out for the cache (the
// frame, the QP) keeps the fields its hot paths read within its first bytes
// and its size within a bound. (The core's tests import nothing outside
// verbs and the core, so byteexpress writes its engine check out.) It
// follows no section of the paper: it holds the layouts of the simulator's
// performance work, which no result would show undone (bench/cachegrind.sh
// would).
package layouttest

import "testing"

// Field is one field of a struct: its name, offset and size, from
// unsafe.Offsetof and unsafe.Sizeof in the test that owns the struct.
type Field struct {
	Name      string
	Off, Size uintptr
}

// Within fails t for every field of the struct named typ that ends past
// byte limit.
func Within(t testing.TB, typ string, limit uintptr, fields ...Field) {
	t.Helper()
	for _, f := range fields {
		if end := f.Off + f.Size; end > limit {
			t.Errorf("%s.%s ends at byte %d, want within the first %d", typ, f.Name, end, limit)
		}
	}
}

// AtMost fails t if the struct named typ is larger than max bytes; why, if
// not empty, says what the bound is (for example "its size class").
func AtMost(t testing.TB, typ string, size, max uintptr, why string) {
	t.Helper()
	if size <= max {
		return
	}
	if why != "" {
		t.Errorf("%s is %d bytes, want at most %d (%s)", typ, size, max, why)
	} else {
		t.Errorf("%s is %d bytes, want at most %d", typ, size, max)
	}
}
