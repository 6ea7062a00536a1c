package scenarios

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
)

// Human units. Every type here parses the text a person writes in a scenario
// file, formats back to that text with String (Parse(String(x)) == x for every
// value Parse accepts), and implements yaml.Unmarshaler on *yaml.Node so that
// errors carry the line number.
//
// Prefixes: rates are SI (1Kbps = 1000 bit/s). Sizes follow IEC: KB, MB, GB,
// TB are powers of 1000 and KiB, MiB, GiB, TiB powers of 1024; a plain
// integer is a number of bytes and the suffix B is allowed. Decimal
// mantissas are exact (no floating point): 1.5KiB = 1536 bytes, 1.5Tbps =
// 1500000000000 bit/s, 1.5ms = 1500000000 ps; a value that is not a whole
// number of the base unit (bit/s, byte, picosecond) is an error.

// Rate is a link or pacing rate in bits per second.
type Rate int64

// Its units (bits per second: units.Kbps, Mbps, Gbps, Tbps) are package
// units's.

// Size is a number of bytes.
type Size int64

// Size units, typed for the scenario format; their values are package
// units's (KB..TB powers of 1000, KiB..TiB powers of 1024).
const (
	Byte Size = units.Byte
	KB   Size = units.KB
	MB   Size = units.MB
	GB   Size = units.GB
	TB   Size = units.TB
	KiB  Size = units.KiB
	MiB  Size = units.MiB
	GiB  Size = units.GiB
	TiB  Size = units.TiB
)

// Duration is a span of virtual time (sim.Time, picoseconds). It is a
// distinct type only so that it can parse and print human units; convert
// with Time.
type Duration sim.Time

// Time returns d as a sim.Time.
func (d Duration) Time() sim.Time { return sim.Time(d) }

// Fraction is a probability or share in [0, 1], written as a percentage
// (1%) or a plain number (0.01). It prints as a percentage.
type Fraction float64

// Float64 returns f as a float64.
func (f Fraction) Float64() float64 { return float64(f) }

// Ratio is an exact non-negative rational, used for buffer-sharing factors
// such as a dynamic threshold's alpha. It is written 1/8, 0.125 or 2 and
// kept as a reduced fraction so that thresholds are computed in integer
// arithmetic (identical on every architecture). The zero value (Den == 0)
// means "not set"; a parsed Ratio always has Den >= 1.
type Ratio struct {
	Num, Den int64
}

// Float64 returns r as a float64 (for reports; use Scale for thresholds).
func (r Ratio) Float64() float64 {
	if r.Den == 0 {
		return 0
	}
	return float64(r.Num) / float64(r.Den)
}

// Scale returns floor(x * r) for x >= 0, saturating at math.MaxInt64. It does
// not allocate, so it may run per packet.
func (r Ratio) Scale(x int64) int64 {
	if x <= 0 || r.Num <= 0 || r.Den <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(x), uint64(r.Num))
	if hi >= uint64(r.Den) {
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, uint64(r.Den))
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(q)
}

// IsZero reports whether r is unset.
func (r Ratio) IsZero() bool { return r.Den == 0 && r.Num == 0 }

// ---- the hints every error message ends with ------------------------------

const (
	rateExamples     = "e.g. 25Gbps, 100Mbps; units: bps, Kbps, Mbps, Gbps, Tbps"
	sizeExamples     = "e.g. 4KiB = 4096 bytes, 4KB = 4000 bytes, 1500 = 1500 bytes; units: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB"
	durationExamples = "e.g. 10us, 1.5ms, 2s; units: ps, ns, us, ms, s"
	rateHint         = "use " + rateExamples
	sizeHint         = "use " + sizeExamples
	durationHint     = "use " + durationExamples
	fractionHint     = "use a percentage like 1% or a number from 0 to 1 like 0.01"
	ratioHint        = "use e.g. 1/8, 0.125, 2"
)

// maxNumberLen bounds the digits parsed, so that hostile input cannot make
// big.Rat work hard; no real value needs more than int64's 19 digits plus
// decimals.
const maxNumberLen = 40

type unitDef struct {
	name string
	mul  int64
}

// intUnit describes a quantity stored as an int64 multiple of a base unit.
type intUnit struct {
	what  string    // "rate"
	base  string    // "bits/s": for "not a whole number of ..."
	units []unitDef // accepted suffixes (exact spelling)
	bare  bool      // a plain number is a count of the base unit
	hint  string
	max   string // largest value, for "too large"
	// reason explains a rejected unit spelling more precisely ("" = generic).
	reason func(unit string) string
}

var rateUnit = intUnit{
	what: "rate", base: "bits/s",
	units: []unitDef{
		{"bps", 1}, {"Kbps", 1e3}, {"kbps", 1e3}, {"Mbps", 1e6},
		{"Gbps", 1e9}, {"Tbps", 1e12},
	},
	hint: rateHint,
	max:  "9223372Tbps",
	reason: func(u string) string {
		if strings.HasSuffix(u, "Bps") {
			return fmt.Sprintf("unit %q is bytes per second; rates are bits per second (bps)", u)
		}
		return ""
	},
}

var sizeUnit = intUnit{
	what: "size", base: "bytes",
	units: []unitDef{
		{"B", 1},
		{"KB", 1e3}, {"kB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	},
	bare: true,
	hint: sizeHint,
	max:  "8388607TiB",
	reason: func(u string) string {
		switch u {
		case "K", "k", "M", "G", "T", "Ki", "Mi", "Gi", "Ti":
			return fmt.Sprintf("unit %q is ambiguous; write %sB (powers of 1000) or %siB (powers of 1024)",
				u, strings.ToUpper(u[:1]), strings.ToUpper(u[:1]))
		}
		if strings.HasSuffix(u, "b") || strings.HasSuffix(u, "bit") || strings.HasSuffix(u, "bits") {
			return fmt.Sprintf("unit %q is bits; sizes are bytes (B)", u)
		}
		return ""
	},
}

var durationUnit = intUnit{
	what: "duration", base: "picoseconds",
	units: []unitDef{
		{"ps", int64(sim.Picosecond)}, {"ns", int64(sim.Nanosecond)},
		{"us", int64(sim.Microsecond)}, {"µs", int64(sim.Microsecond)}, {"μs", int64(sim.Microsecond)},
		{"ms", int64(sim.Millisecond)}, {"s", int64(sim.Second)},
	},
	hint: durationHint,
	max:  "9223372s",
	reason: func(u string) string {
		switch u {
		case "m", "min", "h":
			return fmt.Sprintf("unit %q is too coarse for a packet simulation; the largest unit is s", u)
		}
		return ""
	},
}

// unitError is a parse failure without a position; UnmarshalYAML and the
// loader add file, line and field.
type unitError struct{ msg string }

func (e *unitError) Error() string { return e.msg }

func (u *intUnit) fail(text, reason string) error {
	if reason != "" {
		return &unitError{fmt.Sprintf("%q is not a %s: %s (%s)", text, u.what, reason, u.hint)}
	}
	return &unitError{fmt.Sprintf("%q is not a %s (%s)", text, u.what, u.hint)}
}

// splitNumber splits "1.5 Tbps" into ("1.5", "Tbps"): the longest prefix of
// digits with at most one '.', then the rest with surrounding spaces
// trimmed.
func splitNumber(s string) (num, unit string) {
	i, dot := 0, false
	for i < len(s) {
		c := s[i]
		if c >= '0' && c <= '9' {
			i++
			continue
		}
		if c == '.' && !dot {
			dot = true
			i++
			continue
		}
		break
	}
	return s[:i], strings.TrimSpace(s[i:])
}

// validNumber reports whether num is digits with an optional '.' and at
// least one digit.
func validNumber(num string) bool {
	return num != "" && num != "." && len(num) <= maxNumberLen
}

// parseRat parses a validated decimal exactly.
func parseRat(num string) *big.Rat {
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return nil
	}
	return r
}

func (u *intUnit) parse(text string) (int64, error) {
	s := strings.TrimSpace(text)
	if s == "" {
		return 0, &unitError{fmt.Sprintf("empty %s (%s)", u.what, u.hint)}
	}
	if s[0] == '-' {
		return 0, u.fail(text, "negative values are not allowed")
	}
	if s[0] == '+' {
		s = s[1:]
	}
	num, unit := splitNumber(s)
	if !validNumber(num) {
		if len(num) > maxNumberLen {
			return 0, u.fail(text, "too many digits")
		}
		return 0, u.fail(text, "")
	}
	if m := exponentRE.FindStringSubmatch(unit); m != nil {
		return 0, u.exponent(text, num, m[1], m[2])
	}
	var mul int64
	switch {
	case unit == "" && u.bare:
		mul = 1
	case unit == "":
		if r := parseRat(num); r != nil && r.Sign() == 0 {
			return 0, nil // "0" needs no unit
		}
		return 0, u.fail(text, "missing unit")
	default:
		for _, d := range u.units {
			if d.name == unit {
				mul = d.mul
				break
			}
		}
		if mul == 0 {
			reason := ""
			if u.reason != nil {
				reason = u.reason(unit)
			}
			if reason == "" {
				reason = fmt.Sprintf("unknown unit %q", unit)
			}
			return 0, u.fail(text, reason)
		}
	}
	r := parseRat(num)
	if r == nil {
		return 0, u.fail(text, "")
	}
	r.Mul(r, new(big.Rat).SetInt64(mul))
	if !r.IsInt() {
		return 0, u.fail(text, "not a whole number of "+u.base)
	}
	n := r.Num()
	if !n.IsInt64() || n.Int64() == math.MaxInt64 {
		return 0, u.fail(text, "too large (at most "+u.max+")")
	}
	return n.Int64(), nil
}

// exponentRE matches what follows the digits of a number written with an
// exponent (1e30Gbps): the exponent and the unit.
var exponentRE = regexp.MustCompile(`^[eE]([+-]?[0-9]+)\s*(.*)$`)

// exponent explains a number written with an exponent, which values do
// not accept: out of range if it is, else how to write it in full.
func (u *intUnit) exponent(text, num, exp, unit string) error {
	mul := int64(0)
	if unit == "" && u.bare {
		mul = 1
	}
	for _, d := range u.units {
		if d.name == unit {
			mul = d.mul
		}
	}
	e, err := strconv.Atoi(exp)
	if mul > 0 && (err != nil || e > 0) {
		if err != nil || e > 40 {
			return u.fail(text, "the number is out of range (at most "+u.max+")")
		}
		if r := parseRat(num); r != nil {
			r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(e)), nil)))
			r.Mul(r, new(big.Rat).SetInt64(mul))
			if n := r.Num(); r.IsInt() && (!n.IsInt64() || n.Int64() == math.MaxInt64) {
				return u.fail(text, "the number is out of range (at most "+u.max+")")
			}
		}
	}
	return u.fail(text, "exponents (e"+exp+") are not accepted; write the number in full")
}

// formatExact writes v/div as an exact decimal: 1500/1000 -> "1.5".
func formatExact(v, div int64) string {
	q, r := v/div, v%div
	if r == 0 {
		return strconv.FormatInt(q, 10)
	}
	width := len(strconv.FormatInt(div, 10)) - 1
	frac := strconv.FormatInt(r, 10)
	frac = strings.Repeat("0", width-len(frac)) + frac
	return strconv.FormatInt(q, 10) + "." + strings.TrimRight(frac, "0")
}

// formatLargest formats v with the largest unit not above it (units in
// ascending order of size, each a power of ten of the first).
func formatLargest(v int64, units []unitDef) string {
	if v < 0 {
		return "-" + formatLargest(-v, units) // never produced by Parse
	}
	best := units[0]
	for _, d := range units {
		if v >= d.mul {
			best = d
		}
	}
	return formatExact(v, best.mul) + best.name
}

// ---- Rate ----------------------------------------------------------------

// ParseRate parses a rate such as "25Gbps", "1.5Tbps" or "100Mbps" (SI
// prefixes, bits per second). "0" needs no unit.
func ParseRate(s string) (Rate, error) {
	v, err := rateUnit.parse(s)
	return Rate(v), err
}

var rateFormat = []unitDef{{"bps", 1}, {"Kbps", 1e3}, {"Mbps", 1e6}, {"Gbps", 1e9}, {"Tbps", 1e12}}

// String formats r with the largest unit not above it: "25Gbps", "1.5Tbps".
func (r Rate) String() string { return formatLargest(int64(r), rateFormat) }

// MarshalYAML writes r in its human form.
func (r Rate) MarshalYAML() (any, error) { return r.String(), nil }

// UnmarshalYAML parses a rate scalar.
func (r *Rate) UnmarshalYAML(n *yaml.Node) error {
	text, err := scalarText(n, "a rate like 25Gbps")
	if err != nil {
		return err
	}
	v, err := ParseRate(text)
	if err != nil {
		return nodeErr(n, err)
	}
	*r = v
	return nil
}

// ---- Size ----------------------------------------------------------------

// ParseSize parses a size: a plain integer (bytes), or a number with B, KB,
// MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024).
func ParseSize(s string) (Size, error) {
	v, err := sizeUnit.parse(s)
	return Size(v), err
}

var sizeFormat = []unitDef{
	{"TiB", 1 << 40}, {"TB", 1e12}, {"GiB", 1 << 30}, {"GB", 1e9},
	{"MiB", 1 << 20}, {"MB", 1e6}, {"KiB", 1 << 10}, {"KB", 1e3},
}

// String formats s as the shortest exact integer multiple of a unit:
// "12MiB", "5KB", "1536B", "0B".
func (s Size) String() string {
	v := int64(s)
	best := strconv.FormatInt(v, 10) + "B"
	if v <= 0 {
		return best
	}
	for _, d := range sizeFormat {
		if v%d.mul == 0 {
			if c := strconv.FormatInt(v/d.mul, 10) + d.name; len(c) < len(best) {
				best = c
			}
		}
	}
	return best
}

// MarshalYAML writes s in its human form.
func (s Size) MarshalYAML() (any, error) { return s.String(), nil }

// UnmarshalYAML parses a size scalar.
func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	text, err := scalarText(n, "a size like 4KiB")
	if err != nil {
		return err
	}
	v, err := ParseSize(text)
	if err != nil {
		return nodeErr(n, err)
	}
	*s = v
	return nil
}

// ---- Duration ------------------------------------------------------------

// ParseDuration parses a duration with unit ps, ns, us (or µs), ms or s:
// "10us", "1.5ms", "500ps". "0" needs no unit.
func ParseDuration(s string) (Duration, error) {
	v, err := durationUnit.parse(s)
	return Duration(v), err
}

var durationFormat = []unitDef{
	{"ps", int64(sim.Picosecond)}, {"ns", int64(sim.Nanosecond)}, {"us", int64(sim.Microsecond)},
	{"ms", int64(sim.Millisecond)}, {"s", int64(sim.Second)},
}

// String formats d exactly with the largest unit not above it: "55us",
// "1.5ms", "1.28ns", "0s". (sim.Time.String rounds long values; this does
// not.)
func (d Duration) String() string {
	if d == 0 {
		return "0s"
	}
	return formatLargest(int64(d), durationFormat)
}

// MarshalYAML writes d in its human form.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// UnmarshalYAML parses a duration scalar.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	text, err := scalarText(n, "a duration like 10us")
	if err != nil {
		return err
	}
	v, err := ParseDuration(text)
	if err != nil {
		return nodeErr(n, err)
	}
	*d = v
	return nil
}

// ---- Fraction ------------------------------------------------------------

// shiftPoint moves the decimal point of an unsigned decimal string by k
// places (k > 0: right, k < 0: left) without rounding, and strips redundant
// zeros: shiftPoint("0.01", 2) = "1", shiftPoint("12.5", -2) = "0.125".
func shiftPoint(num string, k int) string {
	ip, fp, _ := strings.Cut(num, ".")
	digits := ip + fp
	point := len(ip) + k
	for point < 0 {
		digits = "0" + digits
		point++
	}
	for point > len(digits) {
		digits += "0"
	}
	ip, fp = strings.TrimLeft(digits[:point], "0"), strings.TrimRight(digits[point:], "0")
	if ip == "" {
		ip = "0"
	}
	if fp == "" {
		return ip
	}
	return ip + "." + fp
}

func fractionFail(text, reason string) error {
	if reason != "" {
		return &unitError{fmt.Sprintf("%q is not a fraction: %s (%s)", text, reason, fractionHint)}
	}
	return &unitError{fmt.Sprintf("%q is not a fraction (%s)", text, fractionHint)}
}

// ParseFraction parses a probability or share in [0, 1]: "1%", "12.5%",
// "0.01", "1".
func ParseFraction(s string) (Fraction, error) {
	text := strings.TrimSpace(s)
	if text == "" {
		return 0, &unitError{"empty fraction (" + fractionHint + ")"}
	}
	if text[0] == '-' {
		return 0, fractionFail(s, "negative values are not allowed")
	}
	num, rest := splitNumber(text)
	if !validNumber(num) || (rest != "" && rest != "%") {
		if len(num) > maxNumberLen {
			return 0, fractionFail(s, "too many digits")
		}
		return 0, fractionFail(s, "")
	}
	if strings.HasPrefix(num, ".") {
		num = "0" + num
	}
	if rest == "%" {
		num = shiftPoint(num, -2)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fractionFail(s, "")
	}
	if f > 1 {
		if rest == "%" {
			return 0, fractionFail(s, "above 100%")
		}
		return 0, fractionFail(s, fmt.Sprintf("above 1 (for %s percent write %s%%)", num, num))
	}
	return Fraction(f), nil
}

// String formats f as an exact percentage: 0.01 -> "1%", 0.125 -> "12.5%".
func (f Fraction) String() string {
	if f < 0 || f > 1 || math.IsNaN(float64(f)) {
		return strconv.FormatFloat(float64(f), 'g', -1, 64) // never produced by Parse
	}
	return shiftPoint(strconv.FormatFloat(float64(f), 'f', -1, 64), 2) + "%"
}

// MarshalYAML writes f as a percentage.
func (f Fraction) MarshalYAML() (any, error) { return f.String(), nil }

// UnmarshalYAML parses a fraction scalar.
func (f *Fraction) UnmarshalYAML(n *yaml.Node) error {
	text, err := scalarText(n, "a percentage like 1%")
	if err != nil {
		return err
	}
	v, err := ParseFraction(text)
	if err != nil {
		return nodeErr(n, err)
	}
	*f = v
	return nil
}

// ---- Ratio ---------------------------------------------------------------

func ratioFail(text, reason string) error {
	if reason != "" {
		return &unitError{fmt.Sprintf("%q is not a ratio: %s (%s)", text, reason, ratioHint)}
	}
	return &unitError{fmt.Sprintf("%q is not a ratio (%s)", text, ratioHint)}
}

// ParseRatio parses a non-negative rational: "1/8", "0.125", "2", "3/2".
func ParseRatio(s string) (Ratio, error) {
	text := strings.TrimSpace(s)
	if text == "" {
		return Ratio{}, &unitError{"empty ratio (" + ratioHint + ")"}
	}
	if strings.HasPrefix(text, "-") {
		return Ratio{}, ratioFail(s, "negative values are not allowed")
	}
	ns, ds, slash := strings.Cut(text, "/")
	parse := func(p string) *big.Rat {
		p = strings.TrimSpace(p)
		num, rest := splitNumber(p)
		if !validNumber(num) || rest != "" {
			return nil
		}
		return parseRat(num)
	}
	r := parse(ns)
	if r == nil {
		return Ratio{}, ratioFail(s, "")
	}
	if slash {
		d := parse(ds)
		if d == nil {
			return Ratio{}, ratioFail(s, "")
		}
		if d.Sign() == 0 {
			return Ratio{}, ratioFail(s, "division by zero")
		}
		r.Quo(r, d)
	}
	if !r.Num().IsInt64() || !r.Denom().IsInt64() {
		return Ratio{}, ratioFail(s, "too large or too precise")
	}
	return Ratio{Num: r.Num().Int64(), Den: r.Denom().Int64()}, nil
}

// String formats r as "1/8", or "2" when it is whole.
func (r Ratio) String() string {
	if r.Den == 1 || r.Den == 0 {
		return strconv.FormatInt(r.Num, 10)
	}
	return strconv.FormatInt(r.Num, 10) + "/" + strconv.FormatInt(r.Den, 10)
}

// MarshalYAML writes r in its human form.
func (r Ratio) MarshalYAML() (any, error) { return r.String(), nil }

// UnmarshalYAML parses a ratio scalar.
func (r *Ratio) UnmarshalYAML(n *yaml.Node) error {
	text, err := scalarText(n, "a ratio like 1/8")
	if err != nil {
		return err
	}
	v, err := ParseRatio(text)
	if err != nil {
		return nodeErr(n, err)
	}
	*r = v
	return nil
}

// ---- node helpers --------------------------------------------------------

// kindName names a node kind for "expected X, got Y" messages.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return "an empty value"
		}
		return fmt.Sprintf("%q", n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "nothing"
}

// scalarText returns the text of a scalar node, or a positioned error
// saying what was expected.
func scalarText(n *yaml.Node, want string) (string, error) {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		return "", &Error{Line: n.Line, Msg: fmt.Sprintf("expected %s, got %s", want, kindName(n))}
	}
	return n.Value, nil
}

// nodeErr positions a parse error at n.
func nodeErr(n *yaml.Node, err error) error {
	return &Error{Line: n.Line, Msg: err.Error()}
}
