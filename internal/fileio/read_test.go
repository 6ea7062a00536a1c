package fileio

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok.yaml")
	os.WriteFile(ok, []byte("0123456789"), 0o644)
	if b, err := ReadFile(ok, 10, "scenario"); err != nil || string(b) != "0123456789" {
		t.Errorf("at the limit: %q, %v", b, err)
	}
	if _, err := ReadFile(ok, 9, "scenario"); err == nil || !strings.Contains(err.Error(), "a scenario may be at most 9 bytes") {
		t.Errorf("over the limit: %v", err)
	}
	if _, err := ReadFile(dir, 10, "scenario"); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "directory") {
		t.Errorf("directory: %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "none"), 10, "scenario"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
	// /dev/zero never ends: refused before reading.
	if _, err := os.Stat("/dev/zero"); err == nil {
		if _, err := ReadFile("/dev/zero", 1<<20, "scenario"); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "device") {
			t.Errorf("/dev/zero: %v", err)
		}
	}
}
