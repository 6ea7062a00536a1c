package counters

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func write(t *testing.T, root, rel, v string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fakeSysfs lays out what a ConnectX-5 with mlx5 shows, with the given
// counter values.
func fakeSysfs(t *testing.T, root string, cnp, xmit string) {
	write(t, root, "sys/class/infiniband/mlx5_0/ports/1/hw_counters/np_cnp_sent", cnp+"\n")
	write(t, root, "sys/class/infiniband/mlx5_0/ports/1/hw_counters/out_of_sequence", "7\n")
	write(t, root, "sys/class/infiniband/mlx5_0/ports/1/hw_counters/lifespan", "10\n")
	write(t, root, "sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data", xmit+"\n")
	write(t, root, "sys/class/infiniband/mlx5_0/ports/1/counters/weird", "not a number\n")
	write(t, root, "sys/class/net/eth0/ecn/roce_np/enable/3", "1\n")
	write(t, root, "sys/class/net/eth0/ecn/roce_rp/enable/3", "1\n")
	write(t, root, "sys/class/net/eth0/ecn/roce_rp/rpg_time_reset", "300\n")
}

const ethtoolOut = `NIC statistics:
     rx_packets: 1000
     rx_prio3_pause: %d
     rx_prio3_pause_duration: 55
     tx_pause_ctrl_phy: 2
     rx_discards_phy: 0
     tx_bytes: 123456
`

func fakeEthtool(pause *int) func(context.Context, string, ...string) ([]byte, error) {
	return func(_ context.Context, name string, args ...string) ([]byte, error) {
		if len(args) != 2 || args[0] != "-S" {
			return nil, errors.New("bad args")
		}
		if args[1] != "eth0" {
			return nil, errors.New("exit status 94: no stats available")
		}
		return []byte(strings.Replace(ethtoolOut, "%d", strconv.Itoa(*pause), 1)), nil
	}
}

func TestBeforeAfter(t *testing.T) {
	root := t.TempDir()
	fakeSysfs(t, root, "100", "4000")
	pause := 3
	cfg := Config{Root: root, Netdevs: []string{"eth0"}, Exec: fakeEthtool(&pause),
		LookPath: func(s string) (string, error) { return "/usr/sbin/" + s, nil }}
	before := Read(context.Background(), cfg)
	fakeSysfs(t, root, "160", "9000")
	write(t, root, "sys/class/infiniband/mlx5_0/ports/1/hw_counters/lifespan", "5\n") // went backwards
	write(t, root, "sys/class/net/eth0/ecn/roce_rp/rpg_time_reset", "150\n")
	pause = 8
	after := Read(context.Background(), cfg)
	r := Diff(before, after)

	want := map[string]int64{
		"infiniband/mlx5_0/1/hw_counters/np_cnp_sent":     60,
		"infiniband/mlx5_0/1/hw_counters/out_of_sequence": 0,
		"infiniband/mlx5_0/1/counters/port_xmit_data":     5000,
		"ethtool/eth0/rx_prio3_pause":                     5,
		"ethtool/eth0/rx_prio3_pause_duration":            0,
		"ethtool/eth0/tx_pause_ctrl_phy":                  0,
		"ethtool/eth0/rx_discards_phy":                    0,
	}
	for k, v := range want {
		if got, ok := r.Delta[k]; !ok || got != v {
			t.Errorf("delta %s = %d (present %v), want %d", k, got, ok, v)
		}
	}
	for _, k := range []string{"ethtool/eth0/tx_bytes", "ethtool/eth0/rx_packets", "infiniband/mlx5_0/1/counters/weird", "infiniband/mlx5_0/1/hw_counters/lifespan"} {
		if _, ok := r.Delta[k]; ok {
			t.Errorf("%s should not have a delta", k)
		}
	}
	if len(r.Notes) == 0 || !strings.Contains(strings.Join(r.Notes, "\n"), "lifespan") {
		t.Errorf("notes %q do not mention the counter that went backwards", r.Notes)
	}
	if r.Settings["dcqcn/eth0/roce_np/enable/3"] != "1" || r.SettingsChanged["dcqcn/eth0/roce_rp/rpg_time_reset"] != "300 -> 150" {
		t.Errorf("settings %v changed %v", r.Settings, r.SettingsChanged)
	}
	if len(r.Absent) != 0 {
		t.Errorf("nothing should be absent: %v", r.Absent)
	}
}

func TestAbsentNotZero(t *testing.T) {
	root := t.TempDir() // an empty root: no infiniband, no ecn
	cfg := Config{Root: root, Netdevs: []string{"lo"}, Exec: fakeEthtool(new(int)),
		LookPath: func(s string) (string, error) { return "/usr/sbin/" + s, nil }}
	r := Diff(Read(context.Background(), cfg), Read(context.Background(), cfg))
	if len(r.Delta) != 0 || len(r.Before) != 0 {
		t.Fatalf("absent sources produced values: %v", r.Delta)
	}
	for src, words := range map[string]string{
		"infiniband": "/sys/class/infiniband not present",
		"ethtool/lo": "no stats available",
		"dcqcn/lo":   "/sys/class/net/lo/ecn not present",
	} {
		if !strings.Contains(r.Absent[src], words) {
			t.Errorf("absent[%s] = %q, want it to say %q", src, r.Absent[src], words)
		}
	}

	cfg.LookPath = func(s string) (string, error) { return "", errors.New("not found") }
	cfg.RDMADevices = []string{"mlx5_9"}
	write(t, root, "sys/class/infiniband/mlx5_0/ports/1/counters/x", "1")
	s := Read(context.Background(), cfg)
	if !strings.Contains(s.Absent["ethtool/lo"], "not found in PATH") {
		t.Errorf("no ethtool: %q", s.Absent["ethtool/lo"])
	}
	if !strings.Contains(s.Absent["infiniband/mlx5_9"], "not present") {
		t.Errorf("missing device: %v", s.Absent)
	}
	// Names that are not plain are never joined into a path: a netdev
	// "../../../tmp/x" would otherwise read /tmp/x/ecn.
	write(t, root, "tmp/x/ecn/roce_np/enable/3", "1")
	bad := cfg
	bad.Netdevs, bad.RDMADevices = []string{"../../../tmp/x", ".."}, []string{"../mlx5_0"}
	s = Read(context.Background(), bad)
	if len(s.Values) != 0 || len(s.Settings) != 0 || !strings.Contains(s.Absent["netdev/../../../tmp/x"], "not a plain interface name") ||
		!strings.Contains(s.Absent["netdev/.."], "not a plain interface name") ||
		!strings.Contains(s.Absent["infiniband/../mlx5_0"], "not a plain device name") {
		t.Errorf("bad names: values %v settings %v absent %v", s.Values, s.Settings, s.Absent)
	}
	cfg.Netdevs = nil
	if s := Read(context.Background(), cfg); s.Absent["ethtool"] == "" {
		t.Errorf("no netdev: %v", s.Absent)
	}
}

func TestParseEthtool(t *testing.T) {
	v, err := ParseEthtool([]byte("NIC statistics:\n  a: 1\n  b c: 2\n  d: x\n  e:  18446744073709551615\n"))
	if err != nil || len(v) != 2 || v["a"] != 1 || v["e"] != 1<<64-1 {
		t.Fatalf("%v %v", v, err)
	}
	if _, err := ParseEthtool([]byte("no stats available\n")); err == nil {
		t.Fatal("empty output accepted")
	}
}

func TestInterfaceFor(t *testing.T) {
	name, err := InterfaceFor(net.ParseIP("127.0.0.1"))
	if err != nil || name == "" {
		t.Fatalf("loopback: %q %v", name, err)
	}
	if _, err := InterfaceFor(net.ParseIP("203.0.113.77")); err == nil {
		t.Fatal("a documentation address was found on a local interface")
	}
}
