package role

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Params reads a role's parameters with defaults from its Info and records
// every problem; Err reports them all, including unknown keys.
type Params struct {
	info Info
	m    map[string]string
	errs []error
}

// ReadParams starts reading spec's parameters for info.
func ReadParams(info Info, spec Spec) *Params {
	p := &Params{info: info, m: spec.Params}
	known := map[string]bool{}
	for _, d := range info.Params {
		known[d.Name] = true
	}
	var unknown []string
	for k := range spec.Params {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		var names []string
		for _, d := range info.Params {
			names = append(names, d.Name)
		}
		p.errs = append(p.errs, fmt.Errorf("unknown parameter %q (allowed: %s)", k, strings.Join(names, ", ")))
	}
	return p
}

func (p *Params) raw(name string) string {
	if v, ok := p.m[name]; ok {
		return v
	}
	for _, d := range p.info.Params {
		if d.Name == name {
			return d.Default
		}
	}
	return ""
}

func (p *Params) fail(name, v string, err error) {
	p.errs = append(p.errs, fmt.Errorf("parameter %s=%q: %v", name, v, err))
}

// String returns a parameter; it is an error if it is empty.
func (p *Params) String(name string) string {
	v := p.raw(name)
	if v == "" {
		p.fail(name, v, errors.New("required"))
	}
	return v
}

// Enum returns a parameter that must be one of allowed.
func (p *Params) Enum(name string, allowed ...string) string {
	v := p.raw(name)
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	p.fail(name, v, fmt.Errorf("want one of %s", strings.Join(allowed, ", ")))
	return ""
}

// Int returns an integer parameter in [lo, hi].
func (p *Params) Int(name string, lo, hi int) int {
	v := p.raw(name)
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		p.fail(name, v, fmt.Errorf("want an integer in %d..%d", lo, hi))
	}
	return n
}

// Size returns a size parameter in [lo, hi] bytes (see ParseSize).
func (p *Params) Size(name string, lo, hi int64) int64 {
	v := p.raw(name)
	n, err := ParseSize(v)
	if err == nil && (n < lo || n > hi) {
		err = fmt.Errorf("want %d..%d bytes", lo, hi)
	}
	if err != nil {
		p.fail(name, v, err)
	}
	return n
}

// Duration returns a duration parameter in [lo, hi].
func (p *Params) Duration(name string, lo, hi time.Duration) time.Duration {
	v := p.raw(name)
	d, err := time.ParseDuration(strings.ReplaceAll(v, "μs", "us"))
	if err == nil && (d < lo || d > hi) {
		err = fmt.Errorf("want %v..%v", lo, hi)
	}
	if err != nil {
		p.fail(name, v, err)
	}
	return d
}

// Err returns every problem found, or nil.
func (p *Params) Err() error { return errors.Join(p.errs...) }

// ParseSize parses a byte size: a plain integer is bytes; B, KB, MB, GB are
// powers of 1000 and KiB, MiB, GiB powers of 1024 (the project's rule,
// DESIGN.md). Decimals must come out whole: 1.5KiB is 1536.
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	units := []struct {
		suf string
		mul float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"kB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	mul, num := 1.0, s
	for _, u := range units {
		if strings.HasSuffix(s, u.suf) {
			mul, num = u.mul, strings.TrimSpace(strings.TrimSuffix(s, u.suf))
			break
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("not a size (write e.g. 64, 64B, 4KiB, 1MiB, 1MB)")
	}
	v := f * mul
	if v != math.Trunc(v) || v > 1<<53 {
		return 0, fmt.Errorf("%s is not a whole number of bytes", s)
	}
	return int64(v), nil
}
