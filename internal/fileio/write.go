package fileio

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// File is one output file: its name (for WriteDir a plain file name, for
// WriteFiles a path) and its whole contents, Data, or the function that
// writes them, Write (then Data is not used): a large file goes to disk a
// part at a time instead of whole in memory.
type File struct {
	Name  string
	Data  []byte
	Write func(w io.Writer) error
}

// WriteDir makes the folder dir hold exactly files and returns their
// paths. The files are written into a new temporary folder beside dir,
// which then replaces dir by renames: on success dir has this run's files
// and nothing of an earlier run; on failure dir is as it was.
//
// An existing dir is replaced only if it looks like an earlier output: a
// folder of regular files whose extensions are among those of files or
// the extensions earlier (".json", ".csv": what a run may write). Anything
// else there (a subfolder, a plot, a notes file) makes WriteDir refuse,
// naming it, rather than delete it.
func WriteDir(dir string, files []File, earlier ...string) ([]string, error) {
	if dir == "" {
		return nil, errors.New("output folder: empty name")
	}
	dir = filepath.Clean(dir)
	exts := map[string]bool{}
	for _, e := range earlier {
		exts[e] = true
	}
	seen := map[string]bool{}
	for _, f := range files {
		if f.Name == "" || f.Name != filepath.Base(f.Name) || f.Name == "." || f.Name == ".." || strings.HasPrefix(f.Name, ".") {
			return nil, fmt.Errorf("output folder %s: bad file name %q", dir, f.Name)
		}
		if seen[f.Name] {
			return nil, fmt.Errorf("output folder %s: file %s given twice", dir, f.Name)
		}
		seen[f.Name] = true
		exts[filepath.Ext(f.Name)] = true
	}
	old, err := os.Lstat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		old = nil
	case err != nil:
		return nil, fmt.Errorf("output folder: %w", err)
	case !old.IsDir():
		return nil, fmt.Errorf("output folder %s exists and is not a folder", dir)
	default:
		if err := replaceable(dir, exts); err != nil {
			return nil, err
		}
	}
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("output folder: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+base+".tmp-")
	if err != nil {
		return nil, fmt.Errorf("output folder: %w", err)
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, fmt.Errorf("output folder: %w", err)
	}
	for _, f := range files {
		if err := writeSynced(filepath.Join(tmp, f.Name), f.contents); err != nil {
			return nil, fmt.Errorf("output folder %s: %w", dir, err)
		}
	}
	if old != nil {
		aside := tmp + ".old"
		if err := os.Rename(dir, aside); err != nil {
			return nil, fmt.Errorf("output folder %s: moving the earlier output aside: %w", dir, err)
		}
		if err := os.Rename(tmp, dir); err != nil {
			if back := os.Rename(aside, dir); back != nil {
				return nil, fmt.Errorf("output folder %s: %w (and the earlier output is left at %s: %v)", dir, err, aside, back)
			}
			return nil, fmt.Errorf("output folder %s: %w", dir, err)
		}
		done = true
		os.RemoveAll(aside)
	} else {
		if err := os.Rename(tmp, dir); err != nil {
			return nil, fmt.Errorf("output folder %s: %w", dir, err)
		}
		done = true
	}
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = filepath.Join(dir, f.Name)
	}
	return paths, nil
}

// replaceable checks that the existing folder dir holds only what an
// earlier output would: regular files with one of the extensions exts.
func replaceable(dir string, exts map[string]bool) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("output folder: %w", err)
	}
	var allowed []string
	for e := range exts {
		allowed = append(allowed, "*"+e)
	}
	slices.Sort(allowed)
	for _, e := range ents {
		if !e.Type().IsRegular() || !exts[filepath.Ext(e.Name())] {
			return fmt.Errorf("output folder %s holds %s, which is not an earlier output (only %s files are replaced); move it away or choose a new or empty folder",
				dir, e.Name(), strings.Join(allowed, ", "))
		}
	}
	return nil
}

// WriteFiles writes each file at its path (Name): all are first written
// to temporary files beside their targets, then renamed over them, so no
// target is ever half-written and, unless a rename itself fails, either
// all of them are replaced or none. It returns the paths.
func WriteFiles(files []File) ([]string, error) {
	tmps := make([]string, 0, len(files))
	cleanup := func() {
		for _, t := range tmps {
			os.Remove(t)
		}
	}
	for _, f := range files {
		dir := filepath.Dir(f.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			cleanup()
			return nil, fmt.Errorf("output folder: %w", err)
		}
		if st, err := os.Stat(f.Name); err == nil && !st.Mode().IsRegular() {
			cleanup()
			return nil, fmt.Errorf("%s exists and is not a regular file", f.Name)
		}
		t, err := os.CreateTemp(dir, "."+filepath.Base(f.Name)+".tmp-")
		if err != nil {
			cleanup()
			return nil, err
		}
		t.Close()
		tmps = append(tmps, t.Name())
		if err := writeSynced(t.Name(), f.contents); err != nil {
			cleanup()
			return nil, err
		}
	}
	paths := make([]string, len(files))
	for i, f := range files {
		if err := os.Rename(tmps[i], f.Name); err != nil {
			for _, t := range tmps[i:] {
				os.Remove(t)
			}
			return nil, err
		}
		paths[i] = f.Name
	}
	return paths, nil
}

// failWrite, when set by a test, makes writeSynced fail for a path.
var failWrite func(path string) error

// contents writes f's contents to w.
func (f File) contents(w io.Writer) error {
	if f.Write != nil {
		return f.Write(w)
	}
	_, err := w.Write(f.Data)
	return err
}

// writeSynced writes what write writes to path (mode 0644) and syncs it.
func writeSynced(path string, write func(io.Writer) error) error {
	if failWrite != nil {
		if err := failWrite(path); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// CheckWritable checks, before a long run, that its outputs can later be
// written: into the folder dir when isDir (created if missing; it must be
// a folder one can create files in), else at the file path dir (its
// folder must be writable and the path, if it exists, a regular file).
func CheckWritable(path string, isDir bool) error {
	folder := path
	if st, err := os.Stat(path); err == nil {
		switch {
		case isDir && !st.IsDir():
			return fmt.Errorf("%s is a file, not a folder (give the folder to write into)", path)
		case !isDir && !st.Mode().IsRegular():
			return fmt.Errorf("%s exists and is not a regular file", path)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if !isDir {
		folder = filepath.Dir(path)
	}
	if err := os.MkdirAll(folder, 0o755); err != nil {
		return fmt.Errorf("cannot create the output folder: %w", err)
	}
	f, err := os.CreateTemp(folder, ".write-check-")
	if err != nil {
		return fmt.Errorf("cannot write into %s: %w", folder, err)
	}
	f.Close()
	return os.Remove(f.Name())
}
