package scenarios

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/besim/besim/internal/fileio"
)

//go:embed builtin/*.yaml
var builtinFS embed.FS

// Default is the embedded scenario `besim run` uses when given none.
const Default = "incast"

// Info describes one embedded scenario.
type Info struct {
	Name        string
	Description string
}

// List returns the embedded scenarios, sorted by name.
func List() []Info {
	entries, _ := fs.ReadDir(builtinFS, "builtin")
	var out []Info
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".yaml")
		if !ok || e.IsDir() {
			continue
		}
		info := Info{Name: name}
		if s, err := loadBuiltin(name); err == nil {
			info.Description = s.Description
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Builtin returns the YAML text of an embedded scenario (to print, or to
// copy and edit).
func Builtin(name string) ([]byte, error) {
	name = strings.TrimSuffix(name, ".yaml")
	if name == "" || strings.ContainsAny(name, "/\\") {
		return nil, notFound(name)
	}
	data, err := builtinFS.ReadFile("builtin/" + name + ".yaml")
	if err != nil {
		return nil, notFound(name)
	}
	return data, nil
}

// builtinFile is how embedded scenarios are named in error messages: their
// path in the repository.
func builtinFile(name string) string { return path.Join("scenarios", "builtin", name+".yaml") }

func loadBuiltin(name string) (*Scenario, error) {
	data, err := Builtin(name)
	if err != nil {
		return nil, err
	}
	return Parse(builtinFile(strings.TrimSuffix(name, ".yaml")), data)
}

func notFound(name string) error {
	var names []string
	entries, _ := fs.ReadDir(builtinFS, "builtin")
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return fmt.Errorf("scenario %q: no such file, and not an embedded scenario (embedded: %s)", name, strings.Join(names, ", "))
}

// Load reads a scenario: nameOrPath is a file if one exists there,
// otherwise the name of an embedded scenario (see List), with or without
// ".yaml".
func Load(nameOrPath string) (*Scenario, error) {
	if _, err := os.Stat(nameOrPath); err == nil {
		data, err := fileio.ReadFile(nameOrPath, MaxFile, "scenario")
		if err != nil {
			return nil, err
		}
		return Parse(nameOrPath, data)
	}
	if _, err := Builtin(nameOrPath); err != nil {
		return nil, err
	}
	return loadBuiltin(nameOrPath)
}

// YAML writes the scenario, with its defaults, in the file format: the
// normalized form `besim validate` can show. Parsing the output gives an
// equal scenario.
func (s *Scenario) YAML() ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
