package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/besim/besim/dcqcn"
	"github.com/besim/besim/fabric"
	"github.com/besim/besim/faults"
	"github.com/besim/besim/pfc"
	"github.com/besim/besim/rnic"
	"github.com/besim/besim/simhost"
	"github.com/besim/besim/tcpsim"
)

// TestRateUnitsDeclaredOnce: package units is the one place that declares
// the rate units (Gbps and its kin); a model or the scenario layer that
// declares its own again fails here.
func TestRateUnitsDeclaredOnce(t *testing.T) {
	root := filepath.Join("..", "..")
	names := map[string]bool{"BitPerSecond": true, "Kbps": true, "Mbps": true, "Gbps": true, "Tbps": true}
	found := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || (g.Tok != token.CONST && g.Tok != token.VAR) {
				continue
			}
			for _, spec := range g.Specs {
				for _, n := range spec.(*ast.ValueSpec).Names {
					if !names[n.Name] {
						continue
					}
					if filepath.ToSlash(filepath.Dir(rel)) == "units" {
						found++
						continue
					}
					t.Errorf("%s: declares %s; use units.%s", rel, n.Name, n.Name)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found != len(names) {
		t.Errorf("package units declares %d of the %d rate units", found, len(names))
	}
}

// TestModelConfigsTyped: the models' configurations (every exported field
// reachable from them, nested structs, arrays and pointers included) carry
// no plain int64: durations are sim.Time, rates units.Rate, sizes
// units.Size. A rate or size added as int64 fails here. The core's own
// byteexpress.Config (simhost.Config.BE) is not a model and is skipped: the
// core imports only verbs.
func TestModelConfigsTyped(t *testing.T) {
	int64Type := reflect.TypeOf(int64(0))
	var walk func(path string, ty reflect.Type, seen map[reflect.Type]bool) int
	walk = func(path string, ty reflect.Type, seen map[reflect.Type]bool) int {
		switch ty.Kind() {
		case reflect.Struct:
			if seen[ty] || strings.HasPrefix(ty.PkgPath(), Module+"byteexpress") {
				return 0
			}
			seen[ty] = true
			n := 0
			for i := 0; i < ty.NumField(); i++ {
				if f := ty.Field(i); f.IsExported() {
					n += walk(path+"."+f.Name, f.Type, seen)
				}
			}
			return n
		case reflect.Array, reflect.Slice, reflect.Pointer:
			return walk(path+"[]", ty.Elem(), seen)
		}
		if ty == int64Type {
			t.Errorf("%s is a plain int64: use sim.Time, units.Rate or units.Size", path)
		}
		return 1
	}
	for _, v := range []any{fabric.Config{}, fabric.Flow{}, pfc.Thresholds{}, pfc.Watchdog{}, rnic.Config{},
		dcqcn.Config{}, tcpsim.Config{}, simhost.Config{}, simhost.CPUCost{}, faults.Spec{}} {
		ty := reflect.TypeOf(v)
		if n := walk(ty.String(), ty, map[reflect.Type]bool{}); n < 3 {
			t.Errorf("%s: only %d fields walked", ty, n)
		}
	}
}
