package ibv

import (
	"testing"

	"github.com/besim/besim/verbs"
)

func TestMTUEnum(t *testing.T) {
	for _, m := range []verbs.MTU{256, 512, 1024, 2048, 4096} {
		e, ok := mtuEnum(m)
		if !ok || mtuBytes(e) != m {
			t.Fatalf("MTU %d -> enum %d (%v) -> %d", m, e, ok, mtuBytes(e))
		}
	}
	if _, ok := mtuEnum(1500); ok {
		t.Fatal("MTU 1500 accepted")
	}
	if mtuBytes(0) != 0 || mtuBytes(6) != 0 {
		t.Fatal("unknown enum ibv_mtu not 0")
	}
}

func TestPortRate(t *testing.T) {
	for _, c := range []struct {
		speed, width uint8
		want         int64
	}{
		{32, 2, 100e9},  // EDR 4x
		{64, 2, 200e9},  // HDR 4x
		{64, 16, 100e9}, // HDR 2x
		{128, 2, 400e9}, // NDR 4x
		{4, 1, 10e9},    // QDR 1x
		{1, 8, 30e9},    // SDR 12x
		{3, 2, 0},       // unknown speed
	} {
		if got := portRate(c.speed, c.width); got != c.want {
			t.Errorf("portRate(%d, %d) = %d, want %d", c.speed, c.width, got, c.want)
		}
	}
}
