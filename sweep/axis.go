package sweep

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Axis is one swept key and its values, from `--set key=v1,v2,...`.
type Axis struct {
	Key    string
	Values []string
}

// maxValues bounds how many values one axis (a range) may expand to, and
// maxPoints the points of a whole sweep, so a typo cannot start a
// million simulations.
const (
	maxValues = 10_000
	maxPoints = 100_000
)

var rangeRE = regexp.MustCompile(`^(-?[0-9]+)\.\.(-?[0-9]+)(?::([0-9]+))?([A-Za-zµ%]*)$`)

// ParseAxis parses "key=v1,v2,...". Values are split at commas outside
// brackets and quotes, so flows[0].src=[0,1],"0-3" has two values. A
// value LO..HI[:STEP][UNIT] is an integer range, inclusive, with an
// optional step and a unit suffix written after every value:
// fabric.switch.buffer=1..4MiB is 1MiB,2MiB,3MiB,4MiB and
// flows[0].src#len=2..16:2 is 2,4,...,16.
func ParseAxis(s string) (Axis, error) {
	key, vals, ok := strings.Cut(s, "=")
	key = strings.TrimSpace(key)
	if !ok || key == "" {
		return Axis{}, fmt.Errorf("--set %s: want key=value[,value...]", s)
	}
	if err := ValidKey(key); err != nil {
		return Axis{}, fmt.Errorf("--set %s: %v", s, err)
	}
	a := Axis{Key: key}
	parts, err := splitValues(vals)
	if err != nil {
		return Axis{}, fmt.Errorf("--set %s: %v", s, err)
	}
	for _, p := range parts {
		if m := rangeRE.FindStringSubmatch(p); m != nil {
			lo, err1 := strconv.ParseInt(m[1], 10, 64)
			hi, err2 := strconv.ParseInt(m[2], 10, 64)
			stepv := int64(1)
			var err3 error
			if m[3] != "" {
				stepv, err3 = strconv.ParseInt(m[3], 10, 64)
			}
			switch {
			case err1 != nil || err2 != nil || err3 != nil:
				return Axis{}, fmt.Errorf("--set %s: range %s: numbers out of range", s, p)
			case hi < lo:
				return Axis{}, fmt.Errorf("--set %s: range %s ends before it starts", s, p)
			case stepv < 1:
				return Axis{}, fmt.Errorf("--set %s: range %s: step must be at least 1", s, p)
			case (hi-lo)/stepv+1 > maxValues:
				return Axis{}, fmt.Errorf("--set %s: range %s has more than %d values", s, p, maxValues)
			}
			for v := lo; v <= hi; v += stepv {
				a.Values = append(a.Values, strconv.FormatInt(v, 10)+m[4])
			}
			continue
		}
		a.Values = append(a.Values, p)
	}
	if len(a.Values) > maxValues {
		return Axis{}, fmt.Errorf("--set %s: more than %d values", s, maxValues)
	}
	// A value given twice would run the same point twice.
	seen := make(map[string]bool, len(a.Values))
	for _, v := range a.Values {
		if seen[v] {
			return Axis{}, fmt.Errorf("--set %s: value %s given twice (each value is one point)", s, v)
		}
		seen[v] = true
	}
	return a, nil
}

// splitValues splits at top-level commas, trimming each value; an empty
// value is an error.
func splitValues(s string) ([]string, error) {
	var out []string
	depth := 0
	var quote rune
	start := 0
	flush := func(end int) error {
		v := strings.TrimSpace(s[start:end])
		if v == "" {
			return fmt.Errorf("empty value (write key=v1,v2)")
		}
		out = append(out, v)
		return nil
	}
	for i, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '"' || r == '\'':
			quote = r
		case r == '[' || r == '{':
			depth++
		case r == ']' || r == '}':
			depth--
		case r == ',' && depth == 0:
			if err := flush(i); err != nil {
				return nil, err
			}
			start = i + 1
		}
	}
	if quote != 0 || depth != 0 {
		return nil, fmt.Errorf("unbalanced quotes or brackets in %q", s)
	}
	if err := flush(len(s)); err != nil {
		return nil, err
	}
	return out, nil
}

// Point is one combination of axis values.
type Point struct {
	Index int
	Set   []Override
}

// Key names the point: "k1=v1,k2=v2" in axis order ("base" for the
// scenario without overrides).
func (p Point) Key() string { return pointKey(p.Set) }

func pointKey(set []Override) string {
	if len(set) == 0 {
		return "base"
	}
	s := make([]string, len(set))
	for i, o := range set {
		s[i] = o.String()
	}
	return strings.Join(s, ",")
}

// Points is the cross product of the axes in a fixed order: the first axis
// varies slowest, each axis's values in the order given (nested loops in
// flag order). No axes give one point, the base scenario.
func Points(axes []Axis) ([]Point, error) {
	n := 1
	seen := map[string]bool{}
	for _, a := range axes {
		k := strings.TrimSuffix(a.Key, lenSuffix)
		if seen[k] {
			return nil, fmt.Errorf("--set %s: key given twice", a.Key)
		}
		seen[k] = true
		if len(a.Values) == 0 {
			return nil, fmt.Errorf("--set %s: no values", a.Key)
		}
		n *= len(a.Values)
		if n > maxPoints {
			return nil, fmt.Errorf("the sweep has more than %d points", maxPoints)
		}
	}
	pts := make([]Point, n)
	for i := range pts {
		set := make([]Override, len(axes))
		rem := i
		for j := len(axes) - 1; j >= 0; j-- {
			a := axes[j]
			set[j] = Override{Key: a.Key, Value: a.Values[rem%len(a.Values)]}
			rem /= len(a.Values)
		}
		pts[i] = Point{Index: i, Set: set}
	}
	return pts, nil
}

// Shard selects points index%N == I of a sweep, for running one sweep as
// N batch jobs. The zero value (N = 0) is the whole sweep.
type Shard struct{ I, N int }

// ParseShard parses "i/n" with 0 <= i < n.
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("--shard %s: want i/n with 0 <= i < n, e.g. 0/4", s)
	}
	return Shard{I: i, N: n}, nil
}

// Whole reports whether the shard is the whole sweep.
func (s Shard) Whole() bool { return s.N <= 1 }

// Has reports whether point index i belongs to the shard.
func (s Shard) Has(i int) bool { return s.Whole() || i%s.N == s.I }

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.I, s.N) }
