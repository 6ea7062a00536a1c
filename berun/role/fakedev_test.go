package role

import (
	"strconv"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/besim/besim/verbs"
	"github.com/besim/besim/verbs/fakeverbs"
)

// fakeSysfs is a ConnectX-like GID table for dev's port 1 with the data IP
// 127.0.0.1: index 0 the link-local RoCE v1 GID, 1 its RoCE v2 twin, 2
// and 3 the IPv4 address as RoCE v1 and RoCE v2 (mlx5's usual layout, as
// show_gids prints it).
func fakeSysfs(dev string) fstest.MapFS {
	d := "class/infiniband/" + dev + "/ports/1/"
	ll := "fe80:0000:0000:0000:0202:c9ff:fe00:0001\n"
	v4 := "0000:0000:0000:0000:0000:ffff:7f00:0001\n"
	return fstest.MapFS{
		d + "gids/0": {Data: []byte(ll)}, d + "gid_attrs/types/0": {Data: []byte("IB/RoCE v1\n")},
		d + "gids/1": {Data: []byte(ll)}, d + "gid_attrs/types/1": {Data: []byte("RoCE v2\n")},
		d + "gids/2": {Data: []byte(v4)}, d + "gid_attrs/types/2": {Data: []byte("IB/RoCE v1\n")},
		d + "gids/3": {Data: []byte(v4)}, d + "gid_attrs/types/3": {Data: []byte("RoCE v2\n")},
	}
}

// useFakeNICs points the verbs roles at in-memory NICs (verbs/fakeverbs)
// behind a fake sysfs, and checks each was opened on the RoCE v2 GID of
// the data IP (index 3), as auto-selection must choose on a ConnectX. It
// returns the network, for tests that read its counters.
func useFakeNICs(t *testing.T) *fakeverbs.Network {
	t.Helper()
	fnet := fakeverbs.New(fakeverbs.Config{Latency: 5000})
	start := time.Now()
	stop := fnet.RunClock(func() int64 { return time.Since(start).Nanoseconds() }, 10*time.Microsecond)
	oldOpen, oldDev, oldFS := OpenVerbs, DefaultDevice, SysfsRoot
	var mu sync.Mutex
	n := 0
	OpenVerbs = func(dev string, gid int) (verbs.Context, error) {
		mu.Lock()
		defer mu.Unlock()
		if gid != 3 {
			t.Errorf("%s opened on GID index %d, want 3 (RoCE v2, 127.0.0.1)", dev, gid)
		}
		n++
		return fnet.NewContext("nic" + strconv.Itoa(n)), nil
	}
	DefaultDevice = func() (string, error) { return "mlx5_0", nil }
	SysfsRoot = fakeSysfs("mlx5_0")
	t.Cleanup(func() {
		OpenVerbs, DefaultDevice, SysfsRoot = oldOpen, oldDev, oldFS
		stop()
	})
	return fnet
}

func TestAutoGID(t *testing.T) {
	old := SysfsRoot
	defer func() { SysfsRoot = old }()
	SysfsRoot = fakeSysfs("mlx5_0")
	if i, how, err := autoGID("mlx5_0", 1, []byte{127, 0, 0, 1}); err != nil || i != 3 {
		t.Errorf("data IP 127.0.0.1: index %d (%s), %v; want 3", i, how, err)
	}
	// Another IP: the first IPv4 RoCE v2 entry, said so.
	if i, how, err := autoGID("mlx5_0", 1, []byte{10, 0, 0, 9}); err != nil || i != 3 {
		t.Errorf("data IP 10.0.0.9: index %d (%s), %v; want 3", i, how, err)
	} else {
		t.Log(how)
	}
	if _, _, err := autoGID("mlx5_1", 1, nil); err == nil {
		t.Error("a device without sysfs entries got a GID")
	}
	// Only RoCE v1 and link-local entries: no usable GID.
	fs := fakeSysfs("mlx5_0")
	delete(fs, "class/infiniband/mlx5_0/ports/1/gid_attrs/types/3")
	SysfsRoot = fs
	if _, _, err := autoGID("mlx5_0", 1, nil); err == nil {
		t.Error("no IPv4 RoCE v2 entry, yet a GID was chosen")
	}
}
