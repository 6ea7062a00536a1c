package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
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
