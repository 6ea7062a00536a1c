package experiment

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/besim/besim/dcqcn"
	"github.com/besim/besim/fabric"
	"github.com/besim/besim/rnic"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/simhost"
	"github.com/besim/besim/tcpsim"
	"github.com/besim/besim/units"
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
	for _, c := range []struct {
		section string
		typ     reflect.Type
		bound   []string
		own     []string
	}{
		{"rnic", reflect.TypeFor[scenarios.RNIC](), keysOf(rnicKnobs), []string{"cc", "payload", "qp.timeout", "qp.retry_cnt", "qp.rnr_retry", "qp.min_rnr_timer"}},
		{"dcqcn", reflect.TypeFor[scenarios.DCQCN](), keysOf(dcqcnKnobs), []string{"profile"}},
		{"workload.tcp", reflect.TypeFor[scenarios.TCP](), keysOf(tcpKnobs), nil},
	} {
		var want []string
		for _, k := range leafKeys(c.typ, "") {
			if !slices.Contains(c.own, k) {
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
	tcp := tcpsim.DefaultConfig()
	for _, k := range tcpKnobs {
		// prio 0 is the default lossy class (tcpsim.DefaultPrio).
		if k.isZero(&tcp) != (k.key == "prio") {
			t.Errorf("workload.tcp.%s: zero in tcpsim.DefaultConfig is %v", k.key, k.isZero(&tcp))
		}
		var sc scenarios.TCP
		var back tcpsim.Config
		k.show(&tcp, &sc)
		k.set(&sc, &back)
		if got, want := k.value(&back), k.value(&tcp); got != want {
			t.Errorf("workload.tcp.%s: %v through the scenario is %v", k.key, want, got)
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
	if got := units.Rate(slow.DCQCN.MinRate); got != 50*units.Mbps || got >= dcqcn.DefaultMinRate {
		t.Errorf("min_rate on a 50Mbps link: %d", got)
	}
}

// TestTCPKnobs: workload.tcp resolves to tcpsim.DefaultConfig's values
// (shown in the resolved scenario, and in SCHEMA.md's table of
// workload.tcp), and TCPConfig of the resolved section is
// tcpsim.DefaultConfig.
func TestTCPKnobs(t *testing.T) {
	text, err := scenarios.Builtin("ps-cluster")
	if err != nil {
		t.Fatal(err)
	}
	s, err := scenarios.Parse("ps.yaml", text)
	if err != nil {
		t.Fatal(err)
	}
	if err := sweepSet(s, "workload.transport", "tcp"); err != nil {
		t.Fatal(err)
	}
	y, err := s.YAML()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(y, &doc); err != nil {
		t.Fatal(err)
	}
	def := tcpsim.DefaultConfig()
	docs := tcpSchemaDefaults(t)
	if len(docs) != len(tcpKnobs) {
		t.Errorf("SCHEMA.md's workload.tcp table has %d defaults, the section %d knobs: %v", len(docs), len(tcpKnobs), docs)
	}
	for _, k := range tcpKnobs {
		want := fmt.Sprint(k.value(&def))
		if got, ok := lookup(doc, "workload.tcp."+k.key); !ok || !sameValue(got, want) {
			t.Errorf("workload.tcp.%s: resolved %q (present %v), tcpsim's %s", k.key, got, ok, want)
		}
		if d, ok := docs[k.key]; !ok || !sameValue(d, want) {
			t.Errorf("workload.tcp.%s: SCHEMA.md says %q, tcpsim's %s", k.key, d, want)
		}
	}
	if got := TCPConfig(s.Workload.TCP); !reflect.DeepEqual(got, def) {
		t.Errorf("TCPConfig of the defaults:\n got %+v\nwant %+v", got, def)
	}
}

// sweepSet re-parses s with key set to value in its normalised form.
func sweepSet(s *scenarios.Scenario, key, value string) error {
	y, err := s.YAML()
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := yaml.Unmarshal(y, &doc); err != nil {
		return err
	}
	parts := strings.Split(key, ".")
	m := doc
	for _, p := range parts[:len(parts)-1] {
		m = m[p].(map[string]any)
	}
	m[parts[len(parts)-1]] = value
	b, err := yaml.Marshal(doc)
	if err != nil {
		return err
	}
	n, err := scenarios.Parse("set.yaml", b)
	if err != nil {
		return err
	}
	*s = *n
	return nil
}

// tcpSchemaDefaults reads SCHEMA.md's workload.tcp table: key -> default.
func tcpSchemaDefaults(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../scenarios/SCHEMA.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "`workload.tcp` (")
	if !ok {
		t.Fatal("SCHEMA.md has no workload.tcp table")
	}
	code := regexp.MustCompile("^\\| `([^`]*)` \\|[^|]*\\| `([^`]*)` \\|")
	out := map[string]string{}
	started := false
	for _, line := range strings.Split(rest, "\n") {
		if !strings.HasPrefix(line, "|") {
			if started {
				break
			}
			continue
		}
		started = true
		if m := code.FindStringSubmatch(strings.ReplaceAll(line, `\|`, "/")); m != nil {
			out[m[1]] = m[2]
		}
	}
	return out
}

// TestFabricDefaultsAreTheModel: the fabric keys whose default the format
// shares with the fabric model resolve to fabric.DefaultConfig's values
// (removing one from the Config leaves the key unset and fails here), and
// an explicit zero names the model's value.
func TestFabricDefaultsAreTheModel(t *testing.T) {
	s := parse(t, "d", "name: d\nduration: 1ms\nfabric: {topology: {kind: star, hosts: 2}, priorities: [{prio: 3, lossless: true, ecn: {kmin: 5KB, kmax: 200KB}}], pfc: {watchdog: {}}}\nflows: [{src: 0, dst: 1, prio: 3}]\n")
	c := fabric.DefaultConfig()
	f := s.Fabric
	p := f.Priorities[0]
	for _, k := range []struct {
		key       string
		got, want any
	}{
		{"fabric.links.rate", units.Rate(f.Links.Rate), c.HostLink.Rate},
		{"fabric.links.delay", f.Links.Delay.Time(), c.HostLink.Delay},
		{"fabric.switch.buffer", units.Size(f.Switch.Buffer), c.Switch.Buffer},
		{"hosts.mtu", units.Size(s.Hosts.MTU), c.MTU},
		{"fabric.priorities[0].pfc.alpha", p.PFC.Alpha.Float64(), c.Switch.PFC.Alpha},
		{"fabric.priorities[0].ecn.pmax", float64(p.ECN.Pmax), c.Switch.ECN[fabric.DefaultLosslessPrio].Pmax},
		{"fabric.pfc.quanta", f.PFC.Quanta, int(c.Switch.PFC.Quanta)},
		{"fabric.pfc.watchdog.detect", f.PFC.Watchdog.Detect.Time(), c.Switch.PFC.Watchdog.Detection},
	} {
		if k.got != k.want || reflect.ValueOf(k.want).IsZero() {
			t.Errorf("%s: resolved %v, fabric.DefaultConfig %v (must be set)", k.key, k.got, k.want)
		}
	}
	_, err := scenarios.Parse("z.yaml", []byte("name: z\nduration: 1ms\nfabric: {topology: {kind: star, hosts: 2}, switch: {buffer: 0}}\nflows: [{src: 0, dst: 1}]\n"))
	if want := fmt.Sprintf("fabric.switch.buffer: 0B is not allowed (omit the key for the default, %s)", scenarios.Size(fabric.DefaultBuffer)); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("explicit zero: %v, want %s", err, want)
	}
}

// TestBenchmarkDelayIsTheModels: benchmark.delay resolves to the cable of
// two NICs back to back (rnic.DefaultWireDelay) for perftest and to the
// testbed link (simhost.DefaultTestbedLinkDelay) for the core's testbeds,
// both set, as SCHEMA.md's benchmark table says.
func TestBenchmarkDelayIsTheModels(t *testing.T) {
	b, err := os.ReadFile("../scenarios/SCHEMA.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `delay` \\| perftest.*\\| perftest `([^`]*)`; the others `([^`]*)`").FindSubmatch(b)
	if row == nil {
		t.Fatal("SCHEMA.md's benchmark table has no delay row with both defaults")
	}
	for _, c := range []struct {
		kind, doc string
		want      sim.Time
	}{
		{"perftest", string(row[1]), rnic.DefaultWireDelay},
		{"fragsize", string(row[2]), simhost.DefaultTestbedLinkDelay},
		{"pingpong", string(row[2]), simhost.DefaultTestbedLinkDelay},
	} {
		text := "name: b\nbenchmark: {kind: " + c.kind + ", points: [{rate: 25Gbps, mtu: 1024}]}\n"
		if c.kind == "fragsize" {
			text = "name: b\nbenchmark: {kind: fragsize}\n"
		}
		s := parse(t, "b", text)
		got := s.Benchmark.Delay.Time()
		if got != c.want || c.want == 0 || !sameValue(s.Benchmark.Delay.String(), c.doc) {
			t.Errorf("%s: delay %v, the model's %v, SCHEMA.md %s", c.kind, got, c.want, c.doc)
		}
	}
}

// TestTCPRxUsecsZeroIsOff: workload.tcp.rx_usecs 0us is a value (interrupt
// moderation off, SCHEMA.md), not an explicit zero refused in favour of
// the model's 16 us; absent, the model's default applies with moderation
// on.
func TestTCPRxUsecsZeroIsOff(t *testing.T) {
	data, err := scenarios.Builtin("ps-cluster")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tcp     string
		off     bool
		wantRx  sim.Time
		comment string
	}{
		{"", false, tcpsim.DefaultConfig().RxUsecs, "absent"},
		{"  tcp: {rx_usecs: 0us}\n", true, 0, "0us"},
		{"  tcp: {rx_usecs: 8us}\n", false, 8 * sim.Microsecond, "8us"},
	} {
		y := strings.Replace(string(data), "  window: 16KiB\n", "  window: 16KiB\n  transport: tcp\n"+tc.tcp, 1)
		s, err := scenarios.Parse("ps.yaml", []byte(y))
		if err != nil {
			t.Fatalf("%s: %v", tc.comment, err)
		}
		c := TCPConfig(s.Workload.TCP)
		if c.NoRxModeration != tc.off || (!tc.off && c.RxUsecs != tc.wantRx) {
			t.Errorf("%s: NoRxModeration %v RxUsecs %v; want %v %v", tc.comment, c.NoRxModeration, c.RxUsecs, tc.off, tc.wantRx)
		}
	}
}
