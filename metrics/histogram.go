// Package metrics holds measurement types shared by the simulator, the
// hardware runner and the sweep tools; today that is Histogram, an
// HDR-style latency histogram.
//
// A Histogram records non-negative int64 values (picoseconds of sim.Time,
// or nanoseconds: the histogram does not care about the unit) into
// log-linear buckets: values below 2^s (s chosen from the significant
// digits) are counted exactly, and above that each power-of-two range is
// cut into 2^(s-1) equal sub-buckets, so that every bucket is narrower than
// 10^-digits of the values it holds. Quantile returns the midpoint of the
// bucket holding the nearest-rank quantile, clamped to [Min, Max], so its
// error relative to the exact quantile of the recorded values is at most
// RelativeError() = 1/2^s (0.39% for the default 2 digits, 0.049% for 3).
//
// Histograms with the same digits merge exactly (bucket counts add), so the
// quantiles of a merge equal the quantiles of one histogram fed all the
// values; that is how per-host, per-flow or per-run histograms combine.
// Min, Max, Count and the sum behind Mean are exact.
//
// Record never allocates once the histogram covers the value: NewMax sizes
// it for a largest expected value up front; otherwise the bucket array
// grows (amortised) the first time a larger magnitude is seen. Nothing is
// random and nothing iterates a map, so equal inputs give equal outputs.
//
// A Histogram is not safe for concurrent use; give each goroutine its own
// and Merge them.
package metrics

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"regexp"
	"strconv"

	"github.com/besim/besim/report"
)

// DefaultDigits is the precision New uses when given 0: two significant
// decimal digits (relative error at most 0.39%).
const DefaultDigits = 2

// MaxDigits bounds the precision: five digits already need 2^18 exact
// buckets (2 MiB of counters).
const MaxDigits = 5

// Histogram is a log-linear histogram of non-negative int64 values. The
// zero value is not usable; call New or NewMax.
type Histogram struct {
	digits  int
	subBits uint  // log2 of the sub-bucket count
	half    int64 // sub-buckets per power of two above the exact range
	counts  []int64
	total   int64
	min     int64
	max     int64
	sumHi   uint64 // 128-bit sum of the values: exact Mean
	sumLo   uint64
}

// New returns an empty histogram with the given significant decimal digits
// (1..MaxDigits; 0 means DefaultDigits). It panics on other values: the
// precision is a programming choice, not an input.
func New(digits int) *Histogram {
	if digits == 0 {
		digits = DefaultDigits
	}
	if digits < 1 || digits > MaxDigits {
		panic(fmt.Sprintf("metrics: %d significant digits; use 1..%d", digits, MaxDigits))
	}
	// Smallest power of two at least 2 x 10^digits (as HdrHistogram).
	need := int64(2)
	for range digits {
		need *= 10
	}
	sb := uint(bits.Len64(uint64(need - 1)))
	h := &Histogram{digits: digits, subBits: sb, half: 1 << (sb - 1)}
	h.Reset()
	return h
}

// NewMax is New with the buckets for values up to max allocated now, so
// that recording such values never allocates.
func NewMax(digits int, max int64) *Histogram {
	h := New(digits)
	h.grow(h.index(max))
	return h
}

// Digits is the precision the histogram was made with.
func (h *Histogram) Digits() int { return h.digits }

// RelativeError bounds |Quantile(q) - exact| / exact for every q.
func (h *Histogram) RelativeError() float64 { return 1 / float64(int64(1)<<h.subBits) }

// Reset empties the histogram, keeping its buckets allocated.
func (h *Histogram) Reset() {
	clear(h.counts)
	h.total = 0
	h.min = math.MaxInt64
	h.max = 0
	h.sumHi, h.sumLo = 0, 0
}

// index maps a value (>= 0) to its bucket.
func (h *Histogram) index(v int64) int {
	sub := int64(1) << h.subBits
	if v < sub {
		return int(v)
	}
	shift := uint(bits.Len64(uint64(v))) - h.subBits // >= 1
	top := v >> shift                                // in [half, sub)
	return int(sub + int64(shift-1)*h.half + (top - h.half))
}

// bounds is the inclusive value range of bucket i.
func (h *Histogram) bounds(i int) (lo, hi int64) {
	sub := int64(1) << h.subBits
	if int64(i) < sub {
		return int64(i), int64(i)
	}
	j := int64(i) - sub
	shift := uint(j/h.half) + 1
	top := j%h.half + h.half
	lo = top << shift
	return lo, lo + (int64(1)<<shift - 1)
}

func (h *Histogram) grow(i int) {
	if i < len(h.counts) {
		return
	}
	n := max(2*len(h.counts), i+1, int(int64(1)<<h.subBits))
	if limit := h.index(math.MaxInt64) + 1; n > limit {
		n = limit
	}
	c := make([]int64, n)
	copy(c, h.counts)
	h.counts = c
}

// Record adds one value. Negative values are recorded as 0 (latencies and
// sizes are never negative; a negative one is a caller's bug that should
// not corrupt the buckets).
func (h *Histogram) Record(v int64) { h.RecordN(v, 1) }

// RecordN adds n copies of v (n <= 0 does nothing).
func (h *Histogram) RecordN(v, n int64) {
	if n <= 0 {
		return
	}
	v = max(v, 0)
	i := h.index(v)
	if i >= len(h.counts) {
		h.grow(i)
	}
	h.counts[i] += n
	h.total += n
	h.min = min(h.min, v)
	h.max = max(h.max, v)
	hi, lo := bits.Mul64(uint64(v), uint64(n))
	var c uint64
	h.sumLo, c = bits.Add64(h.sumLo, lo, 0)
	h.sumHi += hi + c
}

// Count is the number of values recorded.
func (h *Histogram) Count() int64 { return h.total }

// Min is the smallest value recorded (0 when empty).
func (h *Histogram) Min() int64 {
	if h.total == 0 {
		return 0
	}
	return h.min
}

// Max is the largest value recorded (0 when empty).
func (h *Histogram) Max() int64 { return h.max }

// Sum is the exact sum of the values as a float64 (rounded once).
func (h *Histogram) Sum() float64 {
	return float64(h.sumHi)*0x1p64 + float64(h.sumLo)
}

// Mean is the exact mean of the values, rounded once (0 when empty).
func (h *Histogram) Mean() float64 {
	if h.total == 0 {
		return 0
	}
	if h.sumHi == 0 {
		return float64(h.sumLo) / float64(h.total)
	}
	return h.Sum() / float64(h.total)
}

// Quantile returns the q-quantile (0 <= q <= 1) by nearest rank: the value
// of rank ceil(q x Count) in sorted order (rank 1 for q = 0), to within
// RelativeError. Quantile(0) is Min and Quantile(1) is Max, exactly. An
// empty histogram returns 0.
func (h *Histogram) Quantile(q float64) int64 {
	if h.total == 0 {
		return 0
	}
	if !(q > 0) { // also NaN
		return h.min
	}
	if q >= 1 {
		return h.max
	}
	rank := int64(math.Ceil(q * float64(h.total)))
	rank = min(max(rank, 1), h.total)
	var seen int64
	for i, c := range h.counts {
		if c == 0 {
			continue
		}
		seen += c
		if seen >= rank {
			lo, hi := h.bounds(i)
			mid := lo + (hi-lo)/2
			return min(max(mid, h.min), h.max)
		}
	}
	return h.max // unreachable: counts add up to total
}

// P50 is the median.
func (h *Histogram) P50() int64 { return h.Quantile(0.50) }

// P99 is the 99th percentile.
func (h *Histogram) P99() int64 { return h.Quantile(0.99) }

// P999 is the 99.9th percentile.
func (h *Histogram) P999() int64 { return h.Quantile(0.999) }

// ErrDigits is returned by Merge for histograms of different precision,
// whose buckets do not line up.
var ErrDigits = errors.New("metrics: cannot merge histograms of different significant digits")

// Merge adds o's values to h. The result is exactly the histogram of both
// sets of values. o is unchanged.
func (h *Histogram) Merge(o *Histogram) error {
	if o.digits != h.digits {
		return fmt.Errorf("%w (%d and %d)", ErrDigits, h.digits, o.digits)
	}
	if o.total == 0 {
		return nil
	}
	h.grow(len(o.counts) - 1)
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.total += o.total
	h.min = min(h.min, o.min)
	h.max = max(h.max, o.max)
	var c uint64
	h.sumLo, c = bits.Add64(h.sumLo, o.sumLo, 0)
	h.sumHi += o.sumHi + c
	return nil
}

// Bucket is one non-empty bucket: Count values in [Lo, Hi].
type Bucket struct {
	Lo, Hi, Count int64
}

// Buckets returns the non-empty buckets in increasing value order.
func (h *Histogram) Buckets() []Bucket {
	var out []Bucket
	for i, c := range h.counts {
		if c != 0 {
			lo, hi := h.bounds(i)
			out = append(out, Bucket{lo, hi, c})
		}
	}
	return out
}

// TablePrefix starts the name of every table Table writes; plot recognises
// such tables as histograms.
const TablePrefix = "hist/"

// Table renders the histogram as a report table named TablePrefix+name,
// one row per non-empty bucket (key: the bucket index) with its bounds,
// count and cumulative fraction, so that a CDF can be plotted from a
// result file. unit names the values ("ps", "ns", "bytes").
func (h *Histogram) Table(name, unit string) report.Table {
	t := report.Table{
		Name:    TablePrefix + name,
		Title:   fmt.Sprintf("Histogram of %s (%d values, %d significant digits)", name, h.total, h.digits),
		KeyName: "bucket",
		Columns: []report.Column{{Name: "lo", Unit: unit}, {Name: "hi", Unit: unit}, {Name: "count"}, {Name: "cdf"}},
	}
	var cum int64
	for i, c := range h.counts {
		if c == 0 {
			continue
		}
		cum += c
		lo, hi := h.bounds(i)
		t.AddRow(fmt.Sprint(i), float64(lo), float64(hi), float64(c), float64(cum)/float64(h.total))
	}
	return t
}

// AddTo adds the histogram's summary metrics (name/count, /min, /mean,
// /p50, /p99, /p999, /max) to a result.
func (h *Histogram) AddTo(r *report.Result, name, unit string) {
	r.Add(name+"/count", float64(h.total), "")
	r.Add(name+"/min", float64(h.Min()), unit)
	r.Add(name+"/mean", h.Mean(), unit)
	r.Add(name+"/p50", float64(h.P50()), unit)
	r.Add(name+"/p99", float64(h.P99()), unit)
	r.Add(name+"/p999", float64(h.P999()), unit)
	r.Add(name+"/max", float64(h.Max()), unit)
}

// histJSON is the exact, lossless serialization: the sparse buckets as
// [index, count] pairs and the 128-bit sum as two words.
type histJSON struct {
	Digits int        `json:"digits"`
	Count  int64      `json:"count"`
	Min    int64      `json:"min"`
	Max    int64      `json:"max"`
	Sum    [2]uint64  `json:"sum"`
	Counts [][2]int64 `json:"counts"`
}

// MarshalJSON writes the histogram losslessly (sparse buckets).
func (h *Histogram) MarshalJSON() ([]byte, error) {
	j := histJSON{Digits: h.digits, Count: h.total, Min: h.Min(), Max: h.max, Sum: [2]uint64{h.sumHi, h.sumLo}, Counts: [][2]int64{}}
	for i, c := range h.counts {
		if c != 0 {
			j.Counts = append(j.Counts, [2]int64{int64(i), c})
		}
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON wrote, checking its consistency.
func (h *Histogram) UnmarshalJSON(b []byte) error {
	var j histJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("metrics: histogram: %w", err)
	}
	if j.Digits < 1 || j.Digits > MaxDigits {
		return fmt.Errorf("metrics: histogram: %d significant digits; want 1..%d", j.Digits, MaxDigits)
	}
	n := New(j.Digits)
	limit := n.index(math.MaxInt64)
	var total int64
	for _, p := range j.Counts {
		i, c := p[0], p[1]
		if i < 0 || i > int64(limit) || c <= 0 {
			return fmt.Errorf("metrics: histogram: bad bucket [%d, %d]", i, c)
		}
		n.grow(int(i))
		n.counts[i] += c
		total += c
	}
	if total != j.Count || j.Min < 0 || j.Max < j.Min {
		return fmt.Errorf("metrics: histogram: counts add to %d, header says %d (min %d, max %d)", total, j.Count, j.Min, j.Max)
	}
	n.total = total
	if total > 0 {
		n.min, n.max = j.Min, j.Max
	}
	n.sumHi, n.sumLo = j.Sum[0], j.Sum[1]
	*h = *n
	return nil
}

var tableTitleRE = regexp.MustCompile(`\(([0-9]+) values, ([0-9]+) significant digits\)$`)

// FromTable rebuilds a histogram from the table Table wrote (possibly
// renamed: only the title's "(N values, D significant digits)", the row
// keys (bucket indices) and the count column are read). The table does
// not carry the exact minimum, maximum and sum, so Min and Max are the
// bounds of the lowest and highest non-empty buckets and Mean is taken at
// the bucket midpoints; bucket counts, Count and therefore every quantile
// (a bucket midpoint clamped to [Min, Max]) are those of the histogram
// the table was written from, except where that histogram clamped a
// quantile to its exact Min or Max. Merging histograms rebuilt this way is
// exact for the bucket counts, as Merge is.
func FromTable(t report.Table) (*Histogram, error) {
	m := tableTitleRE.FindStringSubmatch(t.Title)
	if m == nil {
		return nil, fmt.Errorf("metrics: table %q: title %q does not end in \"(N values, D significant digits)\"", t.Name, t.Title)
	}
	digits, _ := strconv.Atoi(m[2])
	want, _ := strconv.ParseInt(m[1], 10, 64)
	if digits < 1 || digits > MaxDigits {
		return nil, fmt.Errorf("metrics: table %q: %d significant digits; want 1..%d", t.Name, digits, MaxDigits)
	}
	col := -1
	for i, c := range t.Columns {
		if c.Name == "count" {
			col = i
		}
	}
	if col < 0 {
		return nil, fmt.Errorf("metrics: table %q has no count column", t.Name)
	}
	h := New(digits)
	limit := h.index(math.MaxInt64)
	last := -1
	for _, r := range t.Rows {
		i, err := strconv.Atoi(r.Key)
		if err != nil || i <= last || i > limit {
			return nil, fmt.Errorf("metrics: table %q: row %q: want increasing bucket indices 0..%d", t.Name, r.Key, limit)
		}
		last = i
		if len(r.Values) <= col {
			return nil, fmt.Errorf("metrics: table %q: row %q has %d values for %d columns", t.Name, r.Key, len(r.Values), len(t.Columns))
		}
		c := r.Values[col]
		if !(c >= 1) || c != math.Trunc(c) || c > 1<<53 {
			return nil, fmt.Errorf("metrics: table %q: bucket %d: count %v is not a positive integer", t.Name, i, c)
		}
		lo, hi := h.bounds(i)
		h.RecordN(lo+(hi-lo)/2, int64(c))
		h.min = min(h.min, lo)
		h.max = max(h.max, hi)
	}
	if h.total != want {
		return nil, fmt.Errorf("metrics: table %q: counts add to %d, its title says %d values", t.Name, h.total, want)
	}
	return h, nil
}
