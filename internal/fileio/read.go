// Package fileio is how besim and berun read their input files and write
// their outputs, so that no input is read without bound and no output is
// left half-written or mixed with an earlier run's.
//
// Reading: ReadFile reads a file only if it is a regular file, and only up
// to a limit (a FIFO, a device such as /dev/zero or a directory is refused
// before anything is read; a file that grows past the limit while it is
// read is refused too).
//
// Writing: WriteDir replaces an output folder as a whole (the files go to a
// temporary folder beside it, which is renamed into place, so the folder
// holds exactly one run's files or, if anything failed, the earlier ones
// untouched); WriteFiles writes a group of files, each through a temporary
// file renamed over it; CheckWritable checks, before a long run starts,
// that its output can be written. Callers decide what the files contain:
// this package never looks inside them.
package fileio

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ReadFile returns the contents of the regular file path, of at most max
// bytes. what names the kind of file in errors ("scenario", "hosts file").
func ReadFile(path string, max int64, what string) ([]byte, error) {
	// Stat before opening: opening a FIFO for reading blocks until a
	// writer comes.
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := regular(path, st, what); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The file may have been replaced between Stat and Open.
	if st, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := regular(path, st, what); err != nil {
		return nil, err
	}
	if st.Size() > max {
		return nil, tooLarge(path, st.Size(), max, what)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > max {
		return nil, tooLarge(path, int64(len(b)), max, what)
	}
	return b, nil
}

// ErrNotRegular is wrapped by ReadFile's error for anything but a regular
// file.
var ErrNotRegular = errors.New("not a regular file")

func regular(path string, st os.FileInfo, what string) error {
	m := st.Mode()
	if m.IsRegular() {
		return nil
	}
	kind := "special file"
	switch {
	case m.IsDir():
		kind = "directory"
	case m&os.ModeNamedPipe != 0:
		kind = "named pipe (FIFO)"
	case m&os.ModeSocket != 0:
		kind = "socket"
	case m&os.ModeDevice != 0:
		kind = "device"
	}
	return fmt.Errorf("%s: %w (a %s); a %s must be a regular file", path, ErrNotRegular, kind, what)
}

func tooLarge(path string, n, max int64, what string) error {
	return fmt.Errorf("%s: %d bytes or more; a %s may be at most %d bytes", path, n, what, max)
}
