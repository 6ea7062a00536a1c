package experiment

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/besim/besim/dcqcn"
	"github.com/besim/besim/rnic"
	"github.com/besim/besim/scenarios"
)

// leafKeys lists the keys of a scenario section type, nested sections
// joined with dots ("pcie.bandwidth"), leaving out pointers to sections.
func leafKeys(t reflect.Type, prefix string) []string {
	var out []string
	unm := reflect.TypeFor[yaml.Unmarshaler]()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "" || name == "-" {
			continue
		}
		switch ft := f.Type; {
		case ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct:
		case ft.Kind() == reflect.Struct && !reflect.PointerTo(ft).Implements(unm):
			out = append(out, leafKeys(ft, prefix+name+".")...)
		default:
			out = append(out, prefix+name)
		}
	}
	return out
}

func keysOf[S, M any](ks []knob[S, M]) []string {
	var out []string
	for _, k := range ks {
		out = append(out, k.key)
	}
	return out
}

// TestKnobsBindEveryKey: every key of the rnic and dcqcn sections is bound
// to its model field, except the scenario layer's own (cc, payload, the
// QP attributes; the profile that picks the model's defaults) and the
// translation caches (off unless given; NICConfig maps them).
func TestKnobsBindEveryKey(t *testing.T) {
	own := map[string]bool{"cc": true, "payload": true, "qp.timeout": true, "qp.retry_cnt": true,
		"qp.rnr_retry": true, "qp.min_rnr_timer": true, "profile": true}
	for _, c := range []struct {
		section string
		typ     reflect.Type
		bound   []string
	}{
		{"rnic", reflect.TypeFor[scenarios.RNIC](), keysOf(rnicKnobs)},
		{"dcqcn", reflect.TypeFor[scenarios.DCQCN](), keysOf(dcqcnKnobs)},
	} {
		var want []string
		for _, k := range leafKeys(c.typ, "") {
			if !own[k] {
				want = append(want, k)
			}
		}
		got := slices.Clone(c.bound)
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: keys bound to the model %v, keys of the section %v", c.section, got, want)
		}
	}
}

// TestModelConfigsHaveEveryDefault: every knob the scenario exposes has a
// default in its model's Config (rnic.DefaultConfig, each dcqcn profile):
// removing one from a Config fails here (and TestSchemaDefaultsAreTheModels
// then finds SCHEMA.md's value missing). The only zeros are the paper
// profile's mechanisms that are off: no decrease period, alpha per CNP,
// the target clamped at every decrease. Each binding also carries the
// value both ways unchanged (model -> scenario -> model).
func TestModelConfigsHaveEveryDefault(t *testing.T) {
	nic := rnic.DefaultConfig()
	for _, k := range rnicKnobs {
		if k.isZero(&nic) {
			t.Errorf("rnic.%s: rnic.DefaultConfig has no default", k.key)
		}
		var r scenarios.RNIC
		var back rnic.Config
		k.show(&nic, &r)
		k.set(&r, &back)
		if got, want := k.value(&back), k.value(&nic); got != want {
			t.Errorf("rnic.%s: %v through the scenario is %v", k.key, want, got)
		}
	}
	paperZeros := []string{"decrease_period", "alpha_update", "target_clamp"}
	for _, p := range []struct {
		profile scenarios.DCQCNProfile
		zeros   []string
	}{{scenarios.ProfilePaper, paperZeros}, {scenarios.ProfileConnectX, nil}} {
		m := dcqcnProfile(&scenarios.DCQCN{Profile: p.profile}, 25e9)
		for _, k := range dcqcnKnobs {
			if k.isZero(&m) != slices.Contains(p.zeros, k.key) {
				t.Errorf("%s: dcqcn.%s: zero in the model is %v, want %v", p.profile, k.key, k.isZero(&m), !k.isZero(&m))
			}
			var d scenarios.DCQCN
			var back dcqcnModel
			k.show(&m, &d)
			k.set(&d, &back)
			if got, want := k.value(&back), k.value(&m); got != want {
				t.Errorf("%s: dcqcn.%s: %v through the scenario is %v", p.profile, k.key, want, got)
			}
		}
	}
}

// TestResolvedScenarioShowsTheModels: the resolved scenario (validate
// --print, a result's resolved_scenario) shows each knob with its model's
// value, and an explicit zero where zero is not a value names that value.
func TestResolvedScenarioShowsTheModels(t *testing.T) {
	const head = "name: d\nduration: 1ms\nfabric: {topology: {kind: star, hosts: 2}, links: {rate: 40Gbps}}\nhosts: {nic: rnic}\nflows: [{src: 0, dst: 1}]\n"
	for _, prof := range []string{"", "\ndcqcn: {profile: connectx}"} {
		s := parse(t, "d", head+"rnic: {cc: dcqcn}"+prof+"\n")
		y, err := s.YAML()
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := yaml.Unmarshal(y, &doc); err != nil {
			t.Fatal(err)
		}
		nic := rnic.DefaultConfig()
		for _, k := range rnicKnobs {
			got, ok := lookup(doc, "rnic."+k.key)
			if want := fmt.Sprint(k.value(&nic)); !ok || !sameValue(got, want) {
				t.Errorf("rnic.%s: resolved %q (present %v), the model's %s", k.key, got, ok, want)
			}
		}
		m := dcqcnProfile(s.DCQCN, 40e9)
		for _, k := range dcqcnKnobs {
			got, ok := lookup(doc, "dcqcn."+k.key)
			if k.isZero(&m) {
				if ok {
					t.Errorf("dcqcn.%s: a zero model value printed as %q", k.key, got)
				}
				continue
			}
			if want := fmt.Sprint(k.value(&m)); !ok || !sameValue(got, want) {
				t.Errorf("dcqcn.%s: resolved %q (present %v), the model's %s", k.key, got, ok, want)
			}
		}
	}
	_, err := scenarios.Parse("z.yaml", []byte(head+"rnic: {units: 0}\n"))
	if want := fmt.Sprintf("rnic.units: 0 is not allowed (omit the key for the default, %d)", rnic.DefaultUnits); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("explicit zero: %v, want %s", err, want)
	}
	// The host link rate caps the profile's min_rate.
	slow := parse(t, "s", strings.Replace(head, "40Gbps", "50Mbps", 1)+"rnic: {cc: dcqcn}\n")
	if got := int64(slow.DCQCN.MinRate); got != 50e6 || got >= dcqcn.DefaultMinRate {
		t.Errorf("min_rate on a 50Mbps link: %d", got)
	}
}
