package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/besim/besim/scenarios"
)

func completion(t *testing.T, shell string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if rc := run([]string{"completion", shell}, &out, &errb); rc != 0 {
		t.Fatalf("besim completion %s: exit %d: %s", shell, rc, errb.String())
	}
	return out.String()
}

// TestCompletionBash: the script names every subcommand, every flag of
// each, every embedded scenario and every scenario key; bash -n accepts it;
// and sourced in bash, it completes what a user types.
func TestCompletionBash(t *testing.T) {
	script := completion(t, "bash")
	for _, c := range commands {
		if !strings.Contains(script, " "+c.name+" ") && !strings.Contains(script, "\""+c.name+" ") && !strings.Contains(script, " "+c.name+"\"") {
			t.Errorf("subcommand %s missing from the bash script", c.name)
		}
		if !strings.Contains(script, "\n        "+c.name+")") && !strings.Contains(script, "\n        "+c.name+"|") {
			t.Errorf("no flag case for %s", c.name)
		}
		for _, f := range complFlags(c) {
			if !strings.Contains(script, dashed(f.name)) {
				t.Errorf("flag %s of %s missing", dashed(f.name), c.name)
			}
		}
	}
	for _, s := range scenarioNames() {
		if !strings.Contains(script, " "+s+" ") && !strings.Contains(script, " "+s+"\"") && !strings.Contains(script, "\""+s+" ") {
			t.Errorf("scenario %s missing", s)
		}
	}
	for _, k := range scenarios.Keys() {
		if !strings.Contains(script, k) {
			t.Errorf("key %s missing", k)
		}
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash in this environment: the script's syntax and behaviour are not checked")
	}
	file := filepath.Join(t.TempDir(), "besim.bash")
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bash, "-n", file).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, out)
	}
	// Complete some words: COMP_WORDS as bash fills them, one reply a line.
	probe := `source "$1"; shift
COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _besim
printf '%s\n' "${COMPREPLY[@]}"`
	for _, c := range []struct {
		words []string
		want  []string // exactly, in order
	}{
		{[]string{"besim", "vers"}, []string{"version"}},
		{[]string{"besim", "run", "--se"}, []string{"--seed", "--set"}},
		{[]string{"besim", "run", "--set", "fabric.links.r"}, []string{"fabric.links.rate="}},
		{[]string{"besim", "sweep", "--set", "flows[0].sr"}, []string{"flows[0].src="}},
		{[]string{"besim", "show", "incast-l"}, []string{"incast-lossy"}},
		{[]string{"besim", "help", "compl"}, []string{"completion"}},
		{[]string{"besim", "completion", "z"}, []string{"zsh"}},
		{[]string{"besim", "list", "x"}, nil},
	} {
		cmd := exec.Command(bash, append([]string{"-c", probe, "probe", file}, c.words...)...)
		cmd.Dir = t.TempDir() // no files to complete
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", c.words, err, out)
		}
		got := strings.Fields(string(out))
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("complete %q: got %q, want %q", c.words, got, c.want)
		}
	}
}

// TestCompletionZshFish: the other scripts name every subcommand and the
// keys; zsh -n and fish -n check them where those shells exist.
func TestCompletionZshFish(t *testing.T) {
	for _, shell := range []string{"zsh", "fish"} {
		script := completion(t, shell)
		for _, c := range commands {
			if !strings.Contains(script, c.name) {
				t.Errorf("%s: subcommand %s missing", shell, c.name)
			}
		}
		if !strings.Contains(script, "fabric.switch.buffer") || !strings.Contains(script, "incast-lossy") {
			t.Errorf("%s: keys or scenarios missing", shell)
		}
		if shell == "fish" {
			for _, l := range strings.Split(strings.TrimSuffix(script, "\n"), "\n") {
				if !strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "complete -c besim ") {
					t.Errorf("fish: a line that is not a complete command (a description with a newline?): %q", l)
				}
			}
		}
		sh, err := exec.LookPath(shell)
		if err != nil {
			t.Logf("no %s in this environment: its syntax is not checked", shell)
			continue
		}
		file := filepath.Join(t.TempDir(), "besim."+shell)
		if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(sh, "-n", file).CombinedOutput(); err != nil {
			t.Errorf("%s -n: %v\n%s", shell, err, out)
		}
	}
	var out, errb bytes.Buffer
	if rc := run([]string{"completion", "tcsh"}, &out, &errb); rc != 2 || !strings.Contains(errb.String(), "allowed: bash, zsh, fish") {
		t.Errorf("unknown shell: exit %d, %q", rc, errb.String())
	}
}
