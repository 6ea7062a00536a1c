package metrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// exactQuantile is the nearest-rank quantile of sorted values, the
// definition Quantile approximates.
func exactQuantile(sorted []int64, q float64) int64 {
	if q <= 0 {
		return sorted[0]
	}
	rank := int(math.Ceil(q * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

var quantiles = []float64{0, 0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 0.9999, 1}

func dataset(name string, n int) []int64 {
	r := rand.New(rand.NewPCG(7, uint64(len(name))))
	v := make([]int64, n)
	for i := range v {
		switch name {
		case "constant":
			v[i] = 123456789
		case "small":
			v[i] = r.Int64N(300) // inside the exact range
		case "uniform":
			v[i] = r.Int64N(1_000_000_000)
		case "exponential": // RTT-like, in ps: mean 10 us
			v[i] = int64(r.ExpFloat64() * 10e6)
		case "lognormal": // heavy tail spanning many powers of two
			v[i] = int64(math.Exp(r.NormFloat64()*3 + 15))
		case "bimodal":
			if r.IntN(100) < 99 {
				v[i] = 2_000_000 + r.Int64N(100_000)
			} else {
				v[i] = 900_000_000 + r.Int64N(100_000_000)
			}
		case "extremes":
			v[i] = []int64{0, 1, math.MaxInt64, math.MaxInt64 - 1, 1 << 40}[i%5]
		}
	}
	return v
}

func TestQuantileWithinBound(t *testing.T) {
	for _, digits := range []int{1, 2, 3} {
		for _, name := range []string{"constant", "small", "uniform", "exponential", "lognormal", "bimodal", "extremes"} {
			vals := dataset(name, 20_000)
			h := New(digits)
			var sum float64
			for _, v := range vals {
				h.Record(v)
				sum += float64(v)
			}
			sorted := slices.Clone(vals)
			slices.Sort(sorted)
			if h.Count() != int64(len(vals)) || h.Min() != sorted[0] || h.Max() != sorted[len(sorted)-1] {
				t.Errorf("%s/%d: count %d min %d max %d; want %d %d %d", name, digits, h.Count(), h.Min(), h.Max(), len(vals), sorted[0], sorted[len(sorted)-1])
			}
			if bound := math.Pow(10, -float64(digits)); h.RelativeError() > bound {
				t.Errorf("digits %d: relative error %g above %g", digits, h.RelativeError(), bound)
			}
			if want := sum / float64(len(vals)); math.Abs(h.Mean()-want) > 1e-9*math.Abs(want) {
				t.Errorf("%s/%d: mean %g, want %g", name, digits, h.Mean(), want)
			}
			for _, q := range quantiles {
				got, want := h.Quantile(q), exactQuantile(sorted, q)
				if err := math.Abs(float64(got) - float64(want)); err > float64(want)*h.RelativeError() {
					t.Errorf("%s/%d digits: Quantile(%g) = %d, exact %d: error %.3g%% above %.3g%%",
						name, digits, q, got, want, 100*err/float64(want), 100*h.RelativeError())
				}
			}
			if h.P50() != h.Quantile(0.5) || h.P99() != h.Quantile(0.99) || h.P999() != h.Quantile(0.999) {
				t.Errorf("%s: P50/P99/P999 helpers disagree with Quantile", name)
			}
		}
	}
}

func TestExactRange(t *testing.T) {
	h := New(2)
	for v := int64(0); v < 256; v++ {
		h.Record(v)
	}
	for _, q := range []float64{0.1, 0.5, 0.9} {
		want := exactQuantile(dataRange(256), q)
		if got := h.Quantile(q); got != want {
			t.Errorf("Quantile(%g) = %d, want exactly %d below 2^8", q, got, want)
		}
	}
}

func dataRange(n int) []int64 {
	v := make([]int64, n)
	for i := range v {
		v[i] = int64(i)
	}
	return v
}

func TestBucketsPartitionValues(t *testing.T) {
	h := New(2)
	prevHi := int64(-1)
	for i := 0; i <= h.index(math.MaxInt64); i++ {
		lo, hi := h.bounds(i)
		if lo != prevHi+1 || hi < lo {
			t.Fatalf("bucket %d = [%d, %d] after hi %d: buckets must tile the values", i, lo, hi, prevHi)
		}
		if h.index(lo) != i || h.index(hi) != i {
			t.Fatalf("bucket %d = [%d, %d] but index(lo)=%d index(hi)=%d", i, lo, hi, h.index(lo), h.index(hi))
		}
		if lo > 0 && float64(hi-lo)/2 > float64(lo)*h.RelativeError() {
			t.Fatalf("bucket %d = [%d, %d] too wide for %g", i, lo, hi, h.RelativeError())
		}
		prevHi = hi
	}
	if prevHi != math.MaxInt64 {
		t.Fatalf("buckets end at %d", prevHi)
	}
}

func TestMergeIsExact(t *testing.T) {
	vals := dataset("lognormal", 30_000)
	whole := New(3)
	parts := []*Histogram{New(3), New(3), New(3), New(3)}
	for i, v := range vals {
		whole.Record(v)
		parts[(i*7+i/3)%len(parts)].Record(v)
	}
	merged := New(3)
	for _, p := range parts {
		if err := merged.Merge(p); err != nil {
			t.Fatal(err)
		}
	}
	for q := 0.0; q <= 1; q += 0.001 {
		if a, b := merged.Quantile(q), whole.Quantile(q); a != b {
			t.Fatalf("Quantile(%g): merged %d, whole %d", q, a, b)
		}
	}
	if merged.Count() != whole.Count() || merged.Min() != whole.Min() || merged.Max() != whole.Max() || merged.Mean() != whole.Mean() {
		t.Errorf("merged summary differs from whole")
	}
	if diff := cmp.Diff(whole.Buckets(), merged.Buckets()); diff != "" {
		t.Errorf("buckets differ (-whole +merged):\n%s", diff)
	}
	if err := merged.Merge(New(2)); !errors.Is(err, ErrDigits) {
		t.Errorf("merging 3 and 2 digits: %v, want ErrDigits", err)
	}
	empty := New(3)
	if err := empty.Merge(New(3)); err != nil || empty.Count() != 0 || empty.Min() != 0 {
		t.Errorf("merging empties: %v count %d min %d", err, empty.Count(), empty.Min())
	}
}

func TestRecordDoesNotAllocate(t *testing.T) {
	h := NewMax(2, 1<<40)
	v := int64(1)
	if n := testing.AllocsPerRun(1000, func() {
		h.Record(v)
		v = (v*2862933555777941757 + 3037000493) & (1<<40 - 1)
	}); n != 0 {
		t.Errorf("Record allocates %.1f times per call", n)
	}
	grown := New(2)
	grown.Record(1 << 50)
	if n := testing.AllocsPerRun(1000, func() { grown.Record(12345) }); n != 0 {
		t.Errorf("Record within range allocates %.1f times", n)
	}
}

func TestEmptyAndNegative(t *testing.T) {
	h := New(0)
	if h.Digits() != DefaultDigits {
		t.Errorf("New(0) has %d digits", h.Digits())
	}
	if h.Count() != 0 || h.Min() != 0 || h.Max() != 0 || h.Mean() != 0 || h.P99() != 0 {
		t.Errorf("empty histogram is not all zero")
	}
	h.Record(-5)
	h.RecordN(7, 0)
	if h.Count() != 1 || h.Max() != 0 || h.Quantile(0.5) != 0 {
		t.Errorf("negative value: count %d max %d", h.Count(), h.Max())
	}
	h.Reset()
	if h.Count() != 0 || len(h.Buckets()) != 0 {
		t.Errorf("Reset left values")
	}
	defer func() {
		if recover() == nil {
			t.Errorf("New(9) did not panic")
		}
	}()
	New(9)
}

func TestJSONRoundTripAndDeterminism(t *testing.T) {
	build := func() *Histogram {
		h := New(2)
		for _, v := range dataset("bimodal", 5000) {
			h.Record(v)
		}
		return h
	}
	a, _ := json.Marshal(build())
	b, _ := json.Marshal(build())
	if !bytes.Equal(a, b) {
		t.Fatal("same values, different JSON")
	}
	var back Histogram
	if err := json.Unmarshal(a, &back); err != nil {
		t.Fatal(err)
	}
	c, _ := json.Marshal(&back)
	if !bytes.Equal(a, c) {
		t.Errorf("round trip changed the histogram:\n%s\n%s", a, c)
	}
	if back.P99() != build().P99() || back.Mean() != build().Mean() {
		t.Errorf("round trip changed quantiles or mean")
	}
	for _, bad := range []string{`{"digits":0}`, `{"digits":2,"count":3,"counts":[[1,2]]}`, `{"digits":2,"count":1,"counts":[[-1,1]]}`, `[`} {
		if err := json.Unmarshal([]byte(bad), new(Histogram)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestTable(t *testing.T) {
	h := New(2)
	for _, v := range []int64{10, 10, 20, 1000} {
		h.Record(v)
	}
	tab := h.Table("rtt", "ps")
	if tab.Name != "hist/rtt" || len(tab.Rows) != 3 {
		t.Fatalf("table %s with %d rows", tab.Name, len(tab.Rows))
	}
	last := tab.Rows[len(tab.Rows)-1].Values
	if last[3] != 1 || tab.Rows[0].Values[2] != 2 {
		t.Errorf("cdf column ends at %g, first count %g", last[3], tab.Rows[0].Values[2])
	}
}

func BenchmarkRecord(b *testing.B) {
	h := NewMax(2, 1<<45)
	v := int64(1)
	for b.Loop() {
		h.Record(v)
		v = (v*2862933555777941757 + 3037000493) & (1<<45 - 1)
	}
}

// TestFromTable rebuilds histograms from their tables: bucket counts and
// quantiles survive, and merging rebuilt tables equals rebuilding the
// merge.
func TestFromTable(t *testing.T) {
	a, b := New(2), New(2)
	for i := int64(1); i <= 5000; i++ {
		a.Record(i * 37 % 100003)
		b.Record(i*i%7919 + 50000)
	}
	ra, err := FromTable(a.Table("x", "ns"))
	if err != nil {
		t.Fatal(err)
	}
	rb, err := FromTable(b.Table("x", "ns"))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		if ra.Quantile(q) != a.Quantile(q) {
			t.Errorf("q%v: rebuilt %d, original %d", q, ra.Quantile(q), a.Quantile(q))
		}
	}
	if err := a.Merge(b); err != nil {
		t.Fatal(err)
	}
	if err := ra.Merge(rb); err != nil {
		t.Fatal(err)
	}
	if ra.Count() != a.Count() || ra.P99() != a.P99() || ra.P50() != a.P50() {
		t.Errorf("merged rebuilt: count %d p50 %d p99 %d; merged: %d %d %d", ra.Count(), ra.P50(), ra.P99(), a.Count(), a.P50(), a.P99())
	}
	bad := a.Table("x", "ns")
	bad.Rows[0].Values[2]++
	if _, err := FromTable(bad); err == nil || !strings.Contains(err.Error(), "counts add to") {
		t.Errorf("inconsistent table: err %v", err)
	}
	bad = a.Table("x", "ns")
	bad.Title = "something else"
	if _, err := FromTable(bad); err == nil {
		t.Error("table without the title's digits accepted")
	}
}
