//go:build !rdma

package ibv

import "github.com/besim/besim/verbs"

// Devices lists RDMA devices; this build has no rdma support.
func Devices() ([]string, error) { return nil, ErrNoRDMA }

// Open opens a device on port 1, GID index 0; this build has no rdma support.
func Open(name string) (verbs.Context, error) { return nil, ErrNoRDMA }

// OpenWith opens a device with options; this build has no rdma support.
func OpenWith(name string, o Options) (verbs.Context, error) { return nil, ErrNoRDMA }
