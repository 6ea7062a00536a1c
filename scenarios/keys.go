package scenarios

import (
	"reflect"
	"sort"
)

// Keys returns every key path of the scenario format that holds a value,
// sorted: "duration", "fabric.links.rate", "flows[0].src" (a list's items
// as [0]). It is what `besim run --set` and `besim sweep --set` accept
// (other indices too), generated from the Go types as the loader's schema
// check is; shell completion offers it.
func Keys() []string {
	var out []string
	var walk func(path string, t reflect.Type)
	walk = func(path string, t reflect.Type) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		isRPC := t == reflect.TypeFor[RPC]()
		if reflect.PointerTo(t).Implements(unmarshalerType) || t.Kind() != reflect.Struct && t.Kind() != reflect.Slice {
			out = append(out, path)
			if !isRPC {
				return
			}
		}
		switch t.Kind() {
		case reflect.Slice:
			if e := t.Elem(); e.Kind() == reflect.Struct || e.Kind() == reflect.Pointer {
				walk(path+"[0]", e)
			} else {
				out = append(out, path) // a list of scalars is set whole
			}
		case reflect.Struct:
			for _, f := range structKeys(t) {
				walk(joinPath(path, f.key), f.typ)
			}
		}
	}
	walk("", reflect.TypeFor[Scenario]())
	sort.Strings(out)
	return out
}
