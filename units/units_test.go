package units

import "testing"

func TestUnits(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int64
	}{
		{"Kbps", Kbps, 1e3}, {"Mbps", Mbps, 1e6}, {"Gbps", Gbps, 1e9}, {"Tbps", Tbps, 1e12},
		{"KB", KB, 1e3}, {"MB", MB, 1e6}, {"GB", GB, 1e9}, {"TB", TB, 1e12},
		{"KiB", KiB, 1 << 10}, {"MiB", MiB, 1 << 20}, {"GiB", GiB, 1 << 30}, {"TiB", TiB, 1 << 40},
		{"Rate", Rate(25 * Gbps).BitsPerSecond(), 25e9}, {"Size", Size(4 * KiB).Bytes(), 4096},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
}
