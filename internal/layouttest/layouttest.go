// Package layouttest sits outside the build of both tools, under the tests
// of fabric and rnic: it checks that a struct laid out for the cache (the
// frame, the QP) keeps the fields its hot paths read within its first bytes
// and its size within a bound. (The core's tests import nothing outside
// verbs and the core, so byteexpress writes its engine check out.) It
// follows no section of the paper: it holds the layouts of the simulator's
// performance work, which no result would show undone (bench/cachegrind.sh
// would).
package layouttest

import (
	"reflect"
	"testing"
)

// Within fails t for every named field of the struct that ptr points to
// ((*T)(nil) will do) that ends past byte limit, and for every name that is
// not a field of the struct itself (a renamed field must be renamed here
// too; promoted fields are not looked through).
func Within(t testing.TB, ptr any, limit uintptr, names ...string) {
	t.Helper()
	typ := reflect.TypeOf(ptr).Elem()
	for _, name := range names {
		f, ok := typ.FieldByName(name)
		if !ok || len(f.Index) != 1 {
			t.Errorf("%s has no field %s", typ.Name(), name)
			continue
		}
		if end := f.Offset + f.Type.Size(); end > limit {
			t.Errorf("%s.%s ends at byte %d, want within the first %d", typ.Name(), name, end, limit)
		}
	}
}

// AtMost fails t if the struct that ptr points to is larger than max
// bytes; why, if not empty, says what the bound is (for example "its size
// class").
func AtMost(t testing.TB, ptr any, max uintptr, why string) {
	t.Helper()
	typ := reflect.TypeOf(ptr).Elem()
	if size := typ.Size(); size > max {
		if why != "" {
			t.Errorf("%s is %d bytes, want at most %d (%s)", typ.Name(), size, max, why)
		} else {
			t.Errorf("%s is %d bytes, want at most %d", typ.Name(), size, max)
		}
	}
}
