package scenarios

import (
	"github.com/besim/besim/units"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/besim/besim/sim"
)

func TestParseRate(t *testing.T) {
	good := []struct {
		in   string
		want Rate
		str  string
	}{
		{"25Gbps", 25 * units.Gbps, "25Gbps"},
		{"100Gbps", 100 * units.Gbps, "100Gbps"},
		{"400Gbps", 400 * units.Gbps, "400Gbps"},
		{"10Mbps", 10 * units.Mbps, "10Mbps"},
		{"1.5Tbps", 1500 * units.Gbps, "1.5Tbps"},
		{"100Kbps", 100 * units.Kbps, "100Kbps"},
		{"100kbps", 100 * units.Kbps, "100Kbps"},
		{"1bps", 1, "1bps"},
		{"2500Mbps", 2500 * units.Mbps, "2.5Gbps"},
		{"25 Gbps", 25 * units.Gbps, "25Gbps"},
		{" 25Gbps ", 25 * units.Gbps, "25Gbps"},
		{"0.5Gbps", 500 * units.Mbps, "500Mbps"},
		{".5Gbps", 500 * units.Mbps, "500Mbps"},
		{"0", 0, "0bps"},
		{"0Gbps", 0, "0bps"},
		{"9223372Tbps", 9223372 * units.Tbps, "9223372Tbps"},
		{"1.234567891Gbps", 1234567891, "1.234567891Gbps"},
	}
	for _, c := range good {
		got, err := ParseRate(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d", c.in, got, err, c.want)
			continue
		}
		if s := got.String(); s != c.str {
			t.Errorf("Rate(%d).String() = %q, want %q", got, s, c.str)
		}
	}
	const hint = " (use e.g. 25Gbps, 100Mbps; units: bps, Kbps, Mbps, Gbps, Tbps)"
	bad := []struct{ in, msg string }{
		{"25Gbs", `"25Gbs" is not a rate: unknown unit "Gbs"` + hint},
		{"25", `"25" is not a rate: missing unit` + hint},
		{"-25Gbps", `"-25Gbps" is not a rate: negative values are not allowed` + hint},
		{"", `empty rate` + hint},
		{"   ", `empty rate` + hint},
		{"25GBps", `"25GBps" is not a rate: unit "GBps" is bytes per second; rates are bits per second (bps)` + hint},
		{"1.5bps", `"1.5bps" is not a rate: not a whole number of bits/s` + hint},
		{"9223373Tbps", `"9223373Tbps" is not a rate: too large (at most 9223372Tbps)` + hint},
		{"Gbps", `"Gbps" is not a rate` + hint},
		{"1..5Gbps", `"1..5Gbps" is not a rate: unknown unit ".5Gbps"` + hint},
		{"1e9bps", `"1e9bps" is not a rate: exponents (e9) are not accepted; write the number in full` + hint},
		{"1e30Gbps", `"1e30Gbps" is not a rate: the number is out of range (at most 9223372Tbps)` + hint},
		{"1e99999999999Gbps", `"1e99999999999Gbps" is not a rate: the number is out of range (at most 9223372Tbps)` + hint},
		{"2E-3Gbps", `"2E-3Gbps" is not a rate: exponents (e-3) are not accepted; write the number in full` + hint},
		{"fast", `"fast" is not a rate` + hint},
	}
	for _, c := range bad {
		_, err := ParseRate(c.in)
		if err == nil || err.Error() != c.msg {
			t.Errorf("ParseRate(%q) error\n got: %v\nwant: %s", c.in, err, c.msg)
		}
	}
}

func TestParseSize(t *testing.T) {
	good := []struct {
		in   string
		want Size
		str  string
	}{
		{"4KiB", 4096, "4KiB"},
		{"4MiB", 4 << 20, "4MiB"},
		{"4KB", 4000, "4KB"},
		{"4kB", 4000, "4KB"},
		{"4MB", 4e6, "4MB"},
		{"1GB", 1e9, "1GB"},
		{"2GiB", 2 << 30, "2GiB"},
		{"1TiB", 1 << 40, "1TiB"},
		{"1TB", 1e12, "1TB"},
		{"1024", 1024, "1KiB"},
		{"1500", 1500, "1500B"},
		{"1500B", 1500, "1500B"},
		{"1.5KiB", 1536, "1536B"},
		{"12MiB", 12 << 20, "12MiB"},
		{"200KB", 200000, "200KB"},
		{"0", 0, "0B"},
		{"0B", 0, "0B"},
		{"1 MiB", 1 << 20, "1MiB"},
	}
	for _, c := range good {
		got, err := ParseSize(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", c.in, got, err, c.want)
			continue
		}
		if s := got.String(); s != c.str {
			t.Errorf("Size(%d).String() = %q, want %q", got, s, c.str)
		}
	}
	const hint = " (use e.g. 4KiB = 4096 bytes, 4KB = 4000 bytes, 1500 = 1500 bytes; units: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)"
	bad := []struct{ in, msg string }{
		{"4K", `"4K" is not a size: unit "K" is ambiguous; write KB (powers of 1000) or KiB (powers of 1024)` + hint},
		{"4Mi", `"4Mi" is not a size: unit "Mi" is ambiguous; write MB (powers of 1000) or MiB (powers of 1024)` + hint},
		{"4Mb", `"4Mb" is not a size: unit "Mb" is bits; sizes are bytes (B)` + hint},
		{"4XB", `"4XB" is not a size: unknown unit "XB"` + hint},
		{"-1KB", `"-1KB" is not a size: negative values are not allowed` + hint},
		{"1.5", `"1.5" is not a size: not a whole number of bytes` + hint},
		{"0.1KiB", `"0.1KiB" is not a size: not a whole number of bytes` + hint},
		{"", `empty size` + hint},
		{"9000000TiB", `"9000000TiB" is not a size: too large (at most 8388607TiB)` + hint},
		{"12345678901234567890123456789012345678901", `"12345678901234567890123456789012345678901" is not a size: too many digits` + hint},
	}
	for _, c := range bad {
		_, err := ParseSize(c.in)
		if err == nil || err.Error() != c.msg {
			t.Errorf("ParseSize(%q) error\n got: %v\nwant: %s", c.in, err, c.msg)
		}
	}
}

func TestParseDuration(t *testing.T) {
	good := []struct {
		in   string
		want sim.Time
		str  string
	}{
		{"10us", 10 * sim.Microsecond, "10us"},
		{"55us", 55 * sim.Microsecond, "55us"},
		{"1.5ms", 1500 * sim.Microsecond, "1.5ms"},
		{"2s", 2 * sim.Second, "2s"},
		{"100ns", 100 * sim.Nanosecond, "100ns"},
		{"500ps", 500, "500ps"},
		{"1.28ns", 1280, "1.28ns"},
		{"10µs", 10 * sim.Microsecond, "10us"},
		{"10μs", 10 * sim.Microsecond, "10us"},
		{"1000us", sim.Millisecond, "1ms"},
		{"0", 0, "0s"},
		{"0us", 0, "0s"},
		{"1.234567891ms", 1234567891, "1.234567891ms"},
		{"9223372s", 9223372 * sim.Second, "9223372s"},
	}
	for _, c := range good {
		got, err := ParseDuration(c.in)
		if err != nil || got.Time() != c.want {
			t.Errorf("ParseDuration(%q) = %d, %v; want %d", c.in, got, err, c.want)
			continue
		}
		if s := got.String(); s != c.str {
			t.Errorf("Duration(%d).String() = %q, want %q", got, s, c.str)
		}
	}
	const hint = " (use e.g. 10us, 1.5ms, 2s; units: ps, ns, us, ms, s)"
	bad := []struct{ in, msg string }{
		{"10", `"10" is not a duration: missing unit` + hint},
		{"10u", `"10u" is not a duration: unknown unit "u"` + hint},
		{"1m", `"1m" is not a duration: unit "m" is too coarse for a packet simulation; the largest unit is s` + hint},
		{"-1us", `"-1us" is not a duration: negative values are not allowed` + hint},
		{"0.5ps", `"0.5ps" is not a duration: not a whole number of picoseconds` + hint},
		{"", `empty duration` + hint},
		{"9223373s", `"9223373s" is not a duration: too large (at most 9223372s)` + hint},
	}
	for _, c := range bad {
		_, err := ParseDuration(c.in)
		if err == nil || err.Error() != c.msg {
			t.Errorf("ParseDuration(%q) error\n got: %v\nwant: %s", c.in, err, c.msg)
		}
	}
}

func TestParseFraction(t *testing.T) {
	good := []struct {
		in   string
		want float64
		str  string
	}{
		{"1%", 0.01, "1%"},
		{"0.01", 0.01, "1%"},
		{"12.5%", 0.125, "12.5%"},
		{"0.125", 0.125, "12.5%"},
		{"100%", 1, "100%"},
		{"1", 1, "100%"},
		{"0", 0, "0%"},
		{"0%", 0, "0%"},
		{".5", 0.5, "50%"},
		{"0.001%", 0.00001, "0.001%"},
		{"0.00390625", 0.00390625, "0.390625%"},
	}
	for _, c := range good {
		got, err := ParseFraction(c.in)
		if err != nil || got.Float64() != c.want {
			t.Errorf("ParseFraction(%q) = %v, %v; want %v", c.in, float64(got), err, c.want)
			continue
		}
		if s := got.String(); s != c.str {
			t.Errorf("Fraction(%v).String() = %q, want %q", float64(got), s, c.str)
		}
	}
	const hint = " (use a percentage like 1% or a number from 0 to 1 like 0.01)"
	bad := []struct{ in, msg string }{
		{"150%", `"150%" is not a fraction: above 100%` + hint},
		{"5", `"5" is not a fraction: above 1 (for 5 percent write 5%)` + hint},
		{"-1%", `"-1%" is not a fraction: negative values are not allowed` + hint},
		{"1%%", `"1%%" is not a fraction` + hint},
		{"one", `"one" is not a fraction` + hint},
		{"", `empty fraction` + hint},
		{"1e-2", `"1e-2" is not a fraction` + hint},
	}
	for _, c := range bad {
		_, err := ParseFraction(c.in)
		if err == nil || err.Error() != c.msg {
			t.Errorf("ParseFraction(%q) error\n got: %v\nwant: %s", c.in, err, c.msg)
		}
	}
}

func TestParseRatio(t *testing.T) {
	good := []struct {
		in   string
		want Ratio
		str  string
	}{
		{"1/8", Ratio{1, 8}, "1/8"},
		{"0.125", Ratio{1, 8}, "1/8"},
		{"2", Ratio{2, 1}, "2"},
		{"3/2", Ratio{3, 2}, "3/2"},
		{"2/4", Ratio{1, 2}, "1/2"},
		{"1.5/3", Ratio{1, 2}, "1/2"},
		{" 1 / 16 ", Ratio{1, 16}, "1/16"},
		{"0", Ratio{0, 1}, "0"},
	}
	for _, c := range good {
		got, err := ParseRatio(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseRatio(%q) = %v, %v; want %v", c.in, got, err, c.want)
			continue
		}
		if s := got.String(); s != c.str {
			t.Errorf("%v.String() = %q, want %q", got, s, c.str)
		}
	}
	const hint = " (use e.g. 1/8, 0.125, 2)"
	bad := []struct{ in, msg string }{
		{"1/0", `"1/0" is not a ratio: division by zero` + hint},
		{"-1/8", `"-1/8" is not a ratio: negative values are not allowed` + hint},
		{"1/8/2", `"1/8/2" is not a ratio` + hint},
		{"eighth", `"eighth" is not a ratio` + hint},
		{"", `empty ratio` + hint},
		{"1/-8", `"1/-8" is not a ratio` + hint},
	}
	for _, c := range bad {
		_, err := ParseRatio(c.in)
		if err == nil || err.Error() != c.msg {
			t.Errorf("ParseRatio(%q) error\n got: %v\nwant: %s", c.in, err, c.msg)
		}
	}
}

func TestRatioScale(t *testing.T) {
	cases := []struct {
		r    Ratio
		x    int64
		want int64
	}{
		{Ratio{1, 8}, 12 << 20, 12 << 17},
		{Ratio{1, 8}, 7, 0},
		{Ratio{3, 2}, 5, 7},
		{Ratio{2, 1}, math.MaxInt64, math.MaxInt64},
		{Ratio{1, 3}, math.MaxInt64, math.MaxInt64 / 3},
		{Ratio{}, 100, 0},
		{Ratio{1, 8}, -5, 0},
	}
	for _, c := range cases {
		if got := c.r.Scale(c.x); got != c.want {
			t.Errorf("%v.Scale(%d) = %d, want %d", c.r, c.x, got, c.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = Ratio{1, 8}.Scale(1 << 30) }); n != 0 {
		t.Errorf("Scale allocates %v times", n)
	}
}

func TestParseHostSet(t *testing.T) {
	good := []struct {
		in   string
		want []int
		str  string
	}{
		{"3", []int{3}, "3"},
		{"1-7", []int{1, 2, 3, 4, 5, 6, 7}, "1-7"},
		{"0,2,4-6", []int{0, 2, 4, 5, 6}, "0,2,4-6"},
		{"5-5", []int{5}, "5"},
		{" 1 - 3 , 9", []int{1, 2, 3, 9}, "1-3,9"},
		{"3,1", []int{3, 1}, "3,1"},
	}
	for _, c := range good {
		got, err := ParseHostSet(c.in)
		if err != nil || !equalInts(got, c.want) {
			t.Errorf("ParseHostSet(%q) = %v, %v; want %v", c.in, got, err, c.want)
			continue
		}
		if s := got.String(); s != c.str {
			t.Errorf("%v.String() = %q, want %q", got, s, c.str)
		}
	}
	const hint = " (use a host index like 3, a range like 1-7, or a list like [0, 2, 4-6])"
	bad := []struct{ in, msg string }{
		{"7-1", `"7-1" is not a host list: range 7-1 ends before it starts` + hint},
		{"-1", `"-1" is not a host list: negative host index` + hint},
		{"1-3,2", `"1-3,2" is not a host list: host 2 is listed twice` + hint},
		{"a-b", `"a-b" is not a host list` + hint},
		{"1..7", `"1..7" is not a host list` + hint},
		{"0-99999", `"0-99999" is not a host list: host index 99999 is above 65535` + hint},
		{"", `empty host list` + hint},
	}
	for _, c := range bad {
		_, err := ParseHostSet(c.in)
		if err == nil || err.Error() != c.msg {
			t.Errorf("ParseHostSet(%q) error\n got: %v\nwant: %s", c.in, err, c.msg)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestUnitRoundTrip checks Parse(String(x)) == x over many random values.
func TestUnitRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		// Mix small values, round values and full-range values.
		var v int64
		switch i % 3 {
		case 0:
			v = r.Int64N(1 << 20)
		case 1:
			v = r.Int64N(1000) * []int64{1, 1e3, 1e6, 1e9, 1e12, 1 << 10, 1 << 20, 1 << 30}[r.IntN(8)]
		default:
			v = r.Int64N(math.MaxInt64)
		}
		if got, err := ParseRate(Rate(v).String()); err != nil || got != Rate(v) {
			t.Fatalf("rate %d -> %q -> %d, %v", v, Rate(v).String(), got, err)
		}
		if got, err := ParseSize(Size(v).String()); err != nil || got != Size(v) {
			t.Fatalf("size %d -> %q -> %d, %v", v, Size(v).String(), got, err)
		}
		if got, err := ParseDuration(Duration(v).String()); err != nil || got != Duration(v) {
			t.Fatalf("duration %d -> %q -> %d, %v", v, Duration(v).String(), got, err)
		}
		f := Fraction(r.Float64())
		if i%4 == 0 {
			f = Fraction(float64(r.IntN(10001)) / 10000)
		}
		if got, err := ParseFraction(f.String()); err != nil || got != f {
			t.Fatalf("fraction %v -> %q -> %v, %v", float64(f), f.String(), float64(got), err)
		}
		ra := Ratio{r.Int64N(1000) + 1, r.Int64N(1000) + 1}
		if got, err := ParseRatio(ra.String()); err != nil || got.Float64() != ra.Float64() {
			t.Fatalf("ratio %v -> %q -> %v, %v", ra, ra.String(), got, err)
		}
		hs := HostSet{int(r.IntN(100)), 100 + int(r.IntN(10)), 120, 121, 122}
		if got, err := ParseHostSet(hs.String()); err != nil || !equalInts(got, hs) {
			t.Fatalf("hosts %v -> %q -> %v, %v", hs, hs.String(), got, err)
		}
	}
}

// TestUnmarshalYAMLLine checks that the unit types work on their own with
// yaml.v3 and position their errors.
func TestUnmarshalYAMLLine(t *testing.T) {
	var v struct {
		A Rate     `yaml:"a"`
		B Size     `yaml:"b"`
		C Duration `yaml:"c"`
		D Fraction `yaml:"d"`
		E Ratio    `yaml:"e"`
		F HostSet  `yaml:"f"`
	}
	if err := yaml.Unmarshal([]byte("a: 25Gbps\nb: 4KiB\nc: 10us\nd: 1%\ne: 1/8\nf: [0, 2-3]\n"), &v); err != nil {
		t.Fatal(err)
	}
	if v.A != 25*units.Gbps || v.B != 4*KiB || v.C != Duration(10*sim.Microsecond) || v.D != 0.01 || v.E != (Ratio{1, 8}) || !equalInts(v.F, []int{0, 2, 3}) {
		t.Fatalf("decoded %+v", v)
	}
	out, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := "a: 25Gbps\nb: 4KiB\nc: 10us\nd: 1%\ne: 1/8\nf: 0,2-3\n"; string(out) != want {
		t.Errorf("marshal:\n%s\nwant:\n%s", out, want)
	}
	cases := []struct{ in, msg string }{
		{"a: 1Gbps\nb: 2\nc: 3\n", `line 3: "3" is not a duration: missing unit`},
		{"a: 25Gbs\n", `line 1: "25Gbs" is not a rate`},
		{"\n\nd: [1]\n", `line 3: expected a percentage like 1%, got a list`},
		{"f: {a: 1}\n", `line 1: expected a host list, got a mapping`},
		{"f:\n  - 1\n  - x\n", `line 3: "x" is not a host list`},
	}
	for _, c := range cases {
		err := yaml.Unmarshal([]byte(c.in), &v)
		if err == nil || !strings.HasPrefix(err.Error(), c.msg) {
			t.Errorf("Unmarshal(%q) = %v, want prefix %q", c.in, err, c.msg)
		}
	}
}
