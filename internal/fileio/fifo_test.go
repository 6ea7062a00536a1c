//go:build unix

package fileio

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadFileFIFO: a named pipe is refused at once, not opened (which
// would block until a writer came).
func TestReadFileFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := ReadFile(p, 1<<20, "plan")
		done <- err
	}()
	// Not a timing assertion: a blocked ReadFile would hang the test
	// until go test's own timeout; this only turns that into a message.
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "FIFO") {
			t.Errorf("fifo: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("ReadFile blocked on a FIFO")
	}
}
