package fileio

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n []string
	for _, e := range ents {
		n = append(n, e.Name())
	}
	return n
}

// TestWriteDirReplaces: a second run into the same folder leaves only its
// own files (the earlier run's extra CSV is gone), and no temporary
// folder is left beside it.
func TestWriteDirReplaces(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "out", "run")
	if _, err := WriteDir(dir, []File{{Name: "result.json", Data: []byte("1")}, {Name: "old.csv", Data: []byte("a")}}, ".json", ".csv"); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "plot.png"), []byte("png"), 0o644)
	paths, err := WriteDir(dir, []File{{Name: "result.json", Data: []byte("2")}, {Name: "new.csv", Data: []byte("b")}}, ".json", ".csv", ".png")
	if err != nil {
		t.Fatal(err)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"new.csv", "result.json"}) {
		t.Errorf("folder holds %v", got)
	}
	if b, _ := os.ReadFile(paths[0]); string(b) != "2" {
		t.Errorf("result.json = %q", b)
	}
	if got := names(t, filepath.Join(parent, "out")); !slices.Equal(got, []string{"run"}) {
		t.Errorf("left beside the folder: %v", got)
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o755 {
		t.Errorf("folder mode %v", st.Mode().Perm())
	}
}

// TestWriteDirFailureKeepsEarlier: a write error half-way leaves the
// earlier output as it was and nothing of the new one.
func TestWriteDirFailureKeepsEarlier(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "run")
	if _, err := WriteDir(dir, []File{{Name: "result.json", Data: []byte("old")}, {Name: "a.csv", Data: []byte("old")}}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("disk full")
	failWrite = func(p string) error {
		if strings.HasSuffix(p, "b.csv") {
			return boom
		}
		return nil
	}
	defer func() { failWrite = nil }()
	_, err := WriteDir(dir, []File{{Name: "result.json", Data: []byte("new")}, {Name: "b.csv", Data: []byte("new")}})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"a.csv", "result.json"}) {
		t.Errorf("folder holds %v", got)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "result.json")); string(b) != "old" {
		t.Errorf("result.json = %q", b)
	}
	if got := names(t, parent); !slices.Equal(got, []string{"run"}) {
		t.Errorf("left beside the folder: %v", got)
	}
}

// TestWriteDirRefusesForeignFolders: a folder holding anything an output
// would not (a subfolder, another kind of file) is not replaced.
func TestWriteDirRefusesForeignFolders(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "notes.txt"), []byte("mine"), 0o644)
	if _, err := WriteDir(home, []File{{Name: "result.json", Data: nil}}, ".json", ".csv"); err == nil || !strings.Contains(err.Error(), "holds notes.txt, which is not an earlier output") {
		t.Errorf("foreign file: %v", err)
	}
	sub := t.TempDir()
	os.Mkdir(filepath.Join(sub, "x.json"), 0o755)
	if _, err := WriteDir(sub, []File{{Name: "result.json", Data: nil}}); err == nil || !strings.Contains(err.Error(), "x.json") {
		t.Errorf("subfolder: %v", err)
	}
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o644)
	if _, err := WriteDir(f, []File{{Name: "result.json", Data: nil}}); err == nil || !strings.Contains(err.Error(), "not a folder") {
		t.Errorf("file: %v", err)
	}
	for _, bad := range []string{"../x.json", "a/b.json", ".hidden", ""} {
		if _, err := WriteDir(filepath.Join(t.TempDir(), "o"), []File{{Name: bad, Data: nil}}); err == nil {
			t.Errorf("name %q accepted", bad)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(home, "notes.txt")); string(b) != "mine" {
		t.Errorf("foreign file touched")
	}
}

// TestWriteFiles: a group of files is written through temporary files;
// a failure leaves the targets as they were and no temporary file.
func TestWriteFiles(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "s.json"), filepath.Join(dir, "s.csv")
	if _, err := WriteFiles([]File{{Name: a, Data: []byte("1")}, {Name: b, Data: []byte("1")}}); err != nil {
		t.Fatal(err)
	}
	failWrite = func(p string) error {
		if strings.Contains(p, "s.csv") {
			return errors.New("disk full")
		}
		return nil
	}
	_, err := WriteFiles([]File{{Name: a, Data: []byte("2")}, {Name: b, Data: []byte("2")}})
	failWrite = nil
	if err == nil {
		t.Fatal("no error")
	}
	for _, p := range []string{a, b} {
		if got, _ := os.ReadFile(p); string(got) != "1" {
			t.Errorf("%s = %q after a failed write", p, got)
		}
	}
	if got := names(t, dir); !slices.Equal(got, []string{"s.csv", "s.json"}) {
		t.Errorf("folder holds %v", got)
	}
}

func TestCheckWritable(t *testing.T) {
	dir := t.TempDir()
	if err := CheckWritable(filepath.Join(dir, "new", "sub"), true); err != nil {
		t.Errorf("new folder: %v", err)
	}
	f := filepath.Join(dir, "f.json")
	os.WriteFile(f, nil, 0o644)
	if err := CheckWritable(f, true); err == nil || !strings.Contains(err.Error(), "is a file, not a folder") {
		t.Errorf("file as folder: %v", err)
	}
	if err := CheckWritable(f, false); err != nil {
		t.Errorf("file: %v", err)
	}
	if err := CheckWritable(filepath.Join(f, "x"), true); err == nil {
		t.Errorf("folder under a file: no error")
	}
	if got := names(t, dir); !slices.Equal(got, []string{"f.json", "new"}) {
		t.Errorf("left behind: %v", got)
	}
}

// TestWriteDirStreamed: a File with Write is written by it, in parts; a
// Write that fails after writing some leaves the earlier output as it was
// and nothing of the new one.
func TestWriteDirStreamed(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "run")
	parts := func(fail error) func(w io.Writer) error {
		return func(w io.Writer) error {
			for i := range 3 {
				if _, err := fmt.Fprintf(w, "part %d\n", i); err != nil {
					return err
				}
			}
			return fail
		}
	}
	if _, err := WriteDir(dir, []File{{Name: "result.json", Write: parts(nil)}, {Name: "a.csv", Data: []byte("old")}}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "result.json")); string(b) != "part 0\npart 1\npart 2\n" {
		t.Fatalf("result.json = %q", b)
	}
	boom := errors.New("cannot encode")
	if _, err := WriteDir(dir, []File{{Name: "result.json", Write: parts(boom)}, {Name: "b.csv", Data: []byte("new")}}); !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"a.csv", "result.json"}) {
		t.Errorf("folder holds %v", got)
	}
	if got := names(t, parent); !slices.Equal(got, []string{"run"}) {
		t.Errorf("left beside the folder: %v", got)
	}
}
