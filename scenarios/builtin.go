package scenarios

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/besim/besim/report"

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

// Stamp stamps r with where it came from: the build of the running binary
// (report.Result.SetBuild), the scenario's name, seed and digest, and the
// scenario with every default (experiment.Provenance; sweeps, which also
// run without the simulator, call it directly).
func (s *Scenario) Stamp(r *report.Result) error {
	r.SetBuild()
	r.Scenario, r.Seed = s.Name, s.Seed
	r.ScenarioSHA256 = s.Digest()
	j, err := s.JSON()
	if err != nil {
		return fmt.Errorf("resolved scenario: %w", err)
	}
	r.ResolvedScenario = j
	return nil
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

// Digest is the hex SHA-256 of the bytes the scenario was parsed from
// (empty for one built in Go).
func (s *Scenario) Digest() string {
	if s.src == nil {
		return ""
	}
	return s.src.sha256
}

// JSON is the normalized scenario (YAML) as one JSON object with the same
// keys in the same order; scalars keep their YAML type (numbers and
// booleans stay numbers and booleans, values with units stay strings such
// as "25Gbps"). It is what a result records as its resolved scenario.
func (s *Scenario) JSON() ([]byte, error) {
	y, err := s.YAML()
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(y, &doc); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := nodeJSON(&b, &doc); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func nodeJSON(b *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return fmt.Errorf("scenarios: JSON of a document with %d nodes", len(n.Content))
		}
		return nodeJSON(b, n.Content[0])
	case yaml.AliasNode:
		return nodeJSON(b, n.Alias)
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(n.Content[i].Value)
			b.Write(k)
			b.WriteByte(':')
			if err := nodeJSON(b, n.Content[i+1]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := nodeJSON(b, c); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			b.WriteString("null")
		case "!!bool", "!!int", "!!float":
			var v any
			if err := n.Decode(&v); err != nil {
				return err
			}
			j, err := json.Marshal(v)
			if err != nil { // .inf, .nan
				j, _ = json.Marshal(n.Value)
			}
			b.Write(j)
		default:
			j, _ := json.Marshal(n.Value)
			b.Write(j)
		}
	}
	return nil
}
