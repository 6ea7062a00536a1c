//go:build !rdma

package ibv

import (
	"errors"
	"testing"
)

func TestStubSaysHowToRebuild(t *testing.T) {
	const want = "ibv: built without rdma support (rebuild with -tags rdma and libibverbs-dev)"
	if _, err := Devices(); !errors.Is(err, ErrNoRDMA) || err.Error() != want {
		t.Fatalf("Devices: %v", err)
	}
	if c, err := Open("mlx5_0"); c != nil || err == nil || err.Error() != want {
		t.Fatalf("Open: %v, %v", c, err)
	}
	if c, err := OpenWith("", Options{GIDIndex: 3}); c != nil || !errors.Is(err, ErrNoRDMA) {
		t.Fatalf("OpenWith: %v, %v", c, err)
	}
}
