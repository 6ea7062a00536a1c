package scenarios

import (
	"errors"
	"fmt"
	"github.com/besim/besim/units"
	"strings"
	"testing"
)

// baseYAML is a valid scenario; the error table edits one line of it.
const baseYAML = `name: t
duration: 2ms
fabric:
  topology: {kind: star, hosts: 4}
  links:
    rate: 25Gbps
    delay: 1us
  switch: {buffer: 1MiB}
  priorities:
    - prio: 3
      lossless: true
      pfc: {xoff: 100KB, xon: 50KB}
      ecn: {kmin: 5KB, kmax: 200KB, pmax: 1%}
flows:
  - {name: a, src: 0, dst: 1, prio: 3}
outputs: {sample_interval: 10us}
`

func TestBaseIsValid(t *testing.T) {
	s, err := Parse("t.yaml", []byte(baseYAML))
	if err != nil {
		t.Fatal(err)
	}
	if s.File() != "t.yaml" || s.Fabric.Priorities[0].PFC.XON != 50*KB {
		t.Fatalf("unexpected %+v", s)
	}
}

// edit replaces the one occurrence of old in baseYAML.
func edit(t *testing.T, old, new string) string {
	t.Helper()
	if strings.Count(baseYAML, old) != 1 {
		t.Fatalf("%q is not unique in baseYAML", old)
	}
	return strings.Replace(baseYAML, old, new, 1)
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name     string
		old, new string // edit of baseYAML; old == "" means new is the whole file
		want     string // the first error, exactly
	}{
		// Unknown keys, at each level.
		{"unknown top key", "name: t\n", "name: t\nfailures: {qps: 4}\n",
			`t.yaml:2: failures: unknown key "failures" (allowed keys: version, name, description, seed, duration, fabric, hosts, rnic, dcqcn, flows, benchmark, workload, faults, outputs)`},
		{"unknown key typo", "duration: 2ms", "duraton: 2ms",
			`t.yaml:2: duraton: unknown key "duraton", did you mean "duration"? (allowed keys: version, name, description, seed, duration, fabric, hosts, rnic, dcqcn, flows, benchmark, workload, faults, outputs)`},
		{"unknown nested key", "    delay: 1us", "    latency: 1us",
			`t.yaml:7: fabric.links.latency: unknown key "latency" (allowed keys: rate, delay, host_rate, uplink_rate)`},
		{"unknown key in flow mapping", "prio: 3}", "prio: 3, bytes: 1}",
			`t.yaml:15: flows[0].bytes: unknown key "bytes" (allowed keys: name, src, dst, prio, transport, rate, size, message, op, depth, start, count)`},
		{"unknown key in list item", "      lossless: true", "      lossles: true",
			`t.yaml:11: fabric.priorities[0].lossles: unknown key "lossles", did you mean "lossless"? (allowed keys: prio, lossless, pfc, ecn)`},
		{"unknown key deep", "pmax: 1%}", "pmax: 1%, kmid: 1KB}",
			`t.yaml:13: fabric.priorities[0].ecn.kmid: unknown key "kmid", did you mean "kmin"? (allowed keys: kmin, kmax, pmax)`},

		// Units.
		{"bad rate unit", "rate: 25Gbps", "rate: 25Gbs",
			`t.yaml:6: fabric.links.rate: "25Gbs" is not a rate: unknown unit "Gbs" (use e.g. 25Gbps, 100Mbps; units: bps, Kbps, Mbps, Gbps, Tbps)`},
		{"negative rate", "rate: 25Gbps", "rate: -25Gbps",
			`t.yaml:6: fabric.links.rate: "-25Gbps" is not a rate: negative values are not allowed (use e.g. 25Gbps, 100Mbps; units: bps, Kbps, Mbps, Gbps, Tbps)`},
		{"zero rate", "rate: 25Gbps", "rate: 0Gbps",
			`t.yaml:6: fabric.links.rate: 0bps is not allowed (must be > 0)`},
		{"duration without unit", "delay: 1us", "delay: 1",
			`t.yaml:7: fabric.links.delay: "1" is not a duration: missing unit (use e.g. 10us, 1.5ms, 2s; units: ps, ns, us, ms, s)`},
		{"ambiguous size", "buffer: 1MiB", "buffer: 1M",
			`t.yaml:8: fabric.switch.buffer: "1M" is not a size: unit "M" is ambiguous; write MB (powers of 1000) or MiB (powers of 1024) (use e.g. 4KiB = 4096 bytes, 4KB = 4000 bytes, 1500 = 1500 bytes; units: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)`},
		{"zero size", "buffer: 1MiB", "buffer: 0",
			`t.yaml:8: fabric.switch.buffer: 0B is not allowed (must be > 0)`},
		{"negative size", "kmin: 5KB", "kmin: -5KB",
			`t.yaml:13: fabric.priorities[0].ecn.kmin: "-5KB" is not a size: negative values are not allowed (use e.g. 4KiB = 4096 bytes, 4KB = 4000 bytes, 1500 = 1500 bytes; units: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)`},
		{"zero kmin", "kmin: 5KB", "kmin: 0",
			`t.yaml:13: fabric.priorities[0].ecn.kmin: 0B is not allowed (must be > 0)`},
		{"missing kmax", "kmax: 200KB, ", "",
			`t.yaml:13: fabric.priorities[0].ecn.kmax: missing (required: a queue depth such as 200KB)`},
		{"pmax above 100%", "pmax: 1%", "pmax: 150%",
			`t.yaml:13: fabric.priorities[0].ecn.pmax: "150%" is not a fraction: above 100% (use a percentage like 1% or a number from 0 to 1 like 0.01)`},
		{"pmax above 1", "pmax: 1%", "pmax: 2",
			`t.yaml:13: fabric.priorities[0].ecn.pmax: "2" is not a fraction: above 1 (for 2 percent write 2%) (use a percentage like 1% or a number from 0 to 1 like 0.01)`},
		{"pmax zero", "pmax: 1%", "pmax: 0%",
			`t.yaml:13: fabric.priorities[0].ecn.pmax: 0% is out of range (allowed: above 0%, at most 100%)`},

		// Impossible combinations.
		{"kmin above kmax", "kmin: 5KB", "kmin: 300KB",
			`t.yaml:13: fabric.priorities[0].ecn.kmin: 300KB is above kmax 200KB (need kmin <= kmax)`},
		{"kmax above buffer", "kmax: 200KB", "kmax: 2MB",
			`t.yaml:13: fabric.priorities[0].ecn.kmax: 2MB is above the switch buffer 1MiB (the queue can never reach it)`},
		{"xon above xoff", "xon: 50KB", "xon: 150KB",
			`t.yaml:12: fabric.priorities[0].pfc.xon: 150KB is above xoff 100KB (need xon <= xoff)`},
		{"xon and xon_offset", "xon: 50KB", "xon: 50KB, xon_offset: 2KB",
			`t.yaml:12: fabric.priorities[0].pfc.xon_offset: set either xon (absolute) or xon_offset (below xoff), not both`},
		{"xon_offset not below xoff", "xon: 50KB", "xon_offset: 100KB",
			`t.yaml:12: fabric.priorities[0].pfc.xon_offset: 100KB is not below xoff 100KB (the resume threshold would be <= 0)`},
		{"alpha with static xoff", "xon: 50KB", "xon: 50KB, alpha: 1/8",
			`t.yaml:12: fabric.priorities[0].pfc.alpha: only used with xoff: dynamic (xoff is a static 100KB)`},
		{"bad xoff", "xoff: 100KB", "xoff: dynamc",
			`t.yaml:12: fabric.priorities[0].pfc.xoff: "dynamc" is not a threshold (use dynamic, or a size, e.g. 4KiB = 4096 bytes, 4KB = 4000 bytes, 1500 = 1500 bytes; units: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)`},
		{"pfc on lossy class", "lossless: true", "lossless: false",
			`t.yaml:12: fabric.priorities[0].pfc: PFC thresholds are only for lossless classes (set lossless: true, or remove pfc)`},
		{"lossless without pfc", "  switch: {buffer: 1MiB}", "  switch: {buffer: 1MiB}\n  pfc: {enabled: false}",
			`t.yaml:12: fabric.priorities[0].lossless: a lossless class needs PFC, but fabric.pfc.enabled is false (enable PFC, or set lossless: false)`},
		{"pfc settings while disabled", "  switch: {buffer: 1MiB}", "  switch: {buffer: 1MiB}\n  pfc: {enabled: false, quanta: 100}",
			`t.yaml:9: fabric.pfc.quanta: only used when PFC is enabled (fabric.pfc.enabled is false)`},
		{"refresh not shorter than pause", "  switch: {buffer: 1MiB}", "  switch: {buffer: 1MiB}\n  pfc: {quanta: 1000, refresh: 50us}",
			`t.yaml:9: fabric.pfc.refresh: 50us is not shorter than the pause time of 1000 quanta at 25Gbps (20.48us): pauses would lapse between refreshes (use auto)`},
		{"quanta out of range", "  switch: {buffer: 1MiB}", "  switch: {buffer: 1MiB}\n  pfc: {quanta: 65536}",
			`t.yaml:9: fabric.pfc.quanta: 65536 is out of range (allowed: 1 to 65535, in units of 512 bit times)`},
		{"dwrr weights with strict", "buffer: 1MiB}", "buffer: 1MiB, dwrr_weights: [1, 2]}",
			`t.yaml:8: fabric.switch.dwrr_weights: only used with scheduler: dwrr (the scheduler is strict)`},
		{"dwrr weight count", "buffer: 1MiB}", "buffer: 1MiB, scheduler: dwrr, dwrr_weights: [1, 2]}",
			`t.yaml:8: fabric.switch.dwrr_weights: 2 weights given (need 8, one per priority 0..7)`},
		{"bad scheduler", "buffer: 1MiB}", "buffer: 1MiB, scheduler: wfq}",
			`t.yaml:8: fabric.switch.scheduler: "wfq" is not a scheduler (allowed: strict, dwrr)`},
		{"star with leaves", "hosts: 4}", "hosts: 4, leaves: 2}",
			`t.yaml:4: fabric.topology.leaves: not used by kind star (star uses: hosts)`},
		{"star too small", "hosts: 4}", "hosts: 1}",
			`t.yaml:4: fabric.topology.hosts: 1 is too small (the number of hosts: at least 2)`},
		{"fat-tree odd k", "{kind: star, hosts: 4}", "{kind: fat-tree, k: 5}",
			`t.yaml:4: fabric.topology.k: 5 is not allowed (k must be even, from 2 to 46: larger fat trees need more routing-table entries than the fabric model holds)`},
		{"unknown topology kind", "kind: star", "kind: ring",
			`t.yaml:4: fabric.topology.kind: "ring" is not a topology kind (allowed: star, leaf-spine, fat-tree)`},
		{"uplink rate on star", "    delay: 1us", "    delay: 1us\n    uplink_rate: 100Gbps",
			`t.yaml:8: fabric.links.uplink_rate: not used by kind star (it has no switch-to-switch links; uplink_rate is for leaf-spine and fat-tree)`},
		{"prio out of range", "    - prio: 3", "    - prio: 8",
			`t.yaml:10: fabric.priorities[0].prio: 8 is out of range (allowed: 0 to 7)`},
		{"duplicate prio", "      ecn: {kmin: 5KB, kmax: 200KB, pmax: 1%}", "      ecn: {kmin: 5KB, kmax: 200KB, pmax: 1%}\n    - prio: 3",
			`t.yaml:14: fabric.priorities[1].prio: priority 3 is declared twice (first as fabric.priorities[0])`},

		// Hosts and flows.
		{"host out of range", "dst: 1,", "dst: 4,",
			`t.yaml:15: flows[0].dst: host 4 is out of range (the star topology has hosts 0-3)`},
		{"range out of range", "src: 0,", `src: "0-5",`,
			`t.yaml:15: flows[0].src: host 4 is out of range (the star topology has hosts 0-3)`},
		{"src equals dst", "dst: 1,", "dst: 0,",
			`t.yaml:15: flows[0].dst: host 0 would send to itself (src and dst both contain 0)`},
		{"bad range", "src: 0,", `src: "3-1",`,
			`t.yaml:15: flows[0].src: "3-1" is not a host list: range 3-1 ends before it starts (use a host index like 3, a range like 1-7, or a list like [0, 2, 4-6])`},
		{"negative host in list", "src: 0,", `src: [2, -1],`,
			`t.yaml:15: flows[0].src: "-1" is not a host list: negative host index (use a host index like 3, a range like 1-7, or a list like [0, 2, 4-6])`},
		{"undeclared prio", "prio: 3}", "prio: 5}",
			`t.yaml:15: flows[0].prio: priority 5 is not declared in fabric.priorities (declared: 3)`},
		{"flow rate above line", "prio: 3}", "prio: 3, rate: 40Gbps}",
			`t.yaml:15: flows[0].rate: 40Gbps is above the host link rate 25Gbps (use line for full speed)`},
		{"flow zero size", "prio: 3}", "prio: 3, size: 0}",
			`t.yaml:15: flows[0].size: 0B is not allowed (must be > 0; omit size to send until the scenario ends)`},
		{"flow start after end", "prio: 3}", "prio: 3, start: 2ms}",
			`t.yaml:15: flows[0].start: 2ms is not before the end of the scenario (duration 2ms)`},
		{"flow count zero", "prio: 3}", "prio: 3, count: 0}",
			`t.yaml:15: flows[0].count: 0 is not allowed (omit the key for the default, 1)`},
		{"duplicate flow name", "  - {name: a, src: 0, dst: 1, prio: 3}", "  - {name: a, src: 0, dst: 1, prio: 3}\n  - {name: a, src: 1, dst: 2, prio: 3}",
			`t.yaml:16: flows[1].name: "a" is already the name of flows[0] (names must be unique)`},
		{"missing src", "src: 0, ", "",
			`t.yaml:15: flows[0].src: missing (required: a host index, range or list, e.g. 1-7)`},
		{"no flows", "  - {name: a, src: 0, dst: 1, prio: 3}\n", "",
			`t.yaml:14: flows: empty value (give a value, or remove the key to get the default)`},

		// Top level and YAML structure.
		{"zero duration", "duration: 2ms", "duration: 0s",
			`t.yaml:2: duration: 0s is not allowed (must be > 0)`},
		{"missing duration", "duration: 2ms\n", "",
			`t.yaml:1: duration: missing (required: how much virtual time to simulate, e.g. duration: 2ms)`},
		{"bad name", "name: t", "name: my scenario",
			`t.yaml:1: name: "my scenario" is not a valid name (allowed: letters, digits, '.', '_', '-'; starting with a letter or digit; at most 64)`},
		{"unsupported version", "name: t", "version: 2\nname: t",
			`t.yaml:1: version: 2 is not supported (allowed: 1)`},
		{"sample interval too long", "sample_interval: 10us", "sample_interval: 3ms",
			`t.yaml:16: outputs.sample_interval: 3ms is longer than the scenario (duration 2ms)`},
		{"not a boolean", "lossless: true", "lossless: yes",
			`t.yaml:11: fabric.priorities[0].lossless: "yes" is not a boolean (allowed: true, false)`},
		{"not an integer", "hosts: 4}", "hosts: four}",
			`t.yaml:4: fabric.topology.hosts: "four" is not an integer`},
		{"float for integer", "hosts: 4}", "hosts: 4.5}",
			`t.yaml:4: fabric.topology.hosts: "4.5" is not an integer`},
		{"negative seed", "name: t", "name: t\nseed: -1",
			`t.yaml:2: seed: "-1" is out of range (allowed: 0 to 18446744073709551615)`},
		{"mapping for scalar", "rate: 25Gbps", "rate: {gbps: 25}",
			`t.yaml:6: fabric.links.rate: expected a rate like 25Gbps, got a mapping`},
		{"scalar for mapping", "  switch: {buffer: 1MiB}", "  switch: big",
			`t.yaml:8: fabric.switch: expected a mapping, got "big" (allowed keys: buffer, alpha, scheduler, dwrr_weights)`},
		{"scalar for list", "  priorities:\n    - prio: 3\n      lossless: true\n      pfc: {xoff: 100KB, xon: 50KB}\n      ecn: {kmin: 5KB, kmax: 200KB, pmax: 1%}\n", "  priorities: 3\n",
			`t.yaml:9: fabric.priorities: expected a list, got "3"`},
		{"empty value", "    delay: 1us", "    delay:",
			`t.yaml:7: fabric.links.delay: empty value (give a value, or remove the key to get the default)`},
		{"duplicate key", "    delay: 1us", "    delay: 1us\n    delay: 2us",
			`t.yaml:8: fabric.links.delay: duplicate key (first set on line 7)`},
		{"merge key", "  switch: {buffer: 1MiB}", "  switch: {<<: {buffer: 1MiB}}",
			`t.yaml:8: fabric.switch.<<: YAML merge keys are not supported (use an alias for the whole value, e.g. ecn: *common_ecn)`},
		{"second document", "", baseYAML + "---\nname: u\n",
			`t.yaml:17: a second YAML document: a scenario file holds exactly one (remove the ---)`},
		{"syntax error", "", "name: t\nfabric: [\n",
			`t.yaml:2: yaml: did not find expected node content`},
		{"tab indentation", "", "name: t\n\tduration: 2ms\n",
			`t.yaml:2: yaml: found a tab character that violates indentation`},
		{"empty file", "", "",
			`t.yaml:1: empty scenario (at least name, duration, fabric.topology and flows are needed)`},
		{"comment only", "", "# nothing\n",
			`t.yaml:1: empty scenario (at least name, duration, fabric.topology and flows are needed)`},
		{"not a mapping", "", "- a\n- b\n",
			`t.yaml:1: expected a mapping, got a list (allowed keys: version, name, description, seed, duration, fabric, hosts, rnic, dcqcn, flows, benchmark, workload, faults, outputs)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text := c.new
			if c.old != "" {
				text = edit(t, c.old, c.new)
			}
			_, err := Parse("t.yaml", []byte(text))
			if err == nil {
				t.Fatalf("no error; want\n%s", c.want)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T is not an *Error: %v", err, err)
			}
			if e.Error() != c.want {
				t.Errorf("first error\n got: %s\nwant: %s\n(all: %v)", e.Error(), c.want, err)
			}
		})
	}
}

// TestErrorFields checks the parts of an Error, not just its text.
func TestErrorFields(t *testing.T) {
	_, err := Parse("dir/t.yaml", []byte(edit(t, "rate: 25Gbps", "rate: 25Gbs")))
	var e *Error
	if !errors.As(err, &e) {
		t.Fatal(err)
	}
	if e.File != "dir/t.yaml" || e.Line != 6 || e.Field != "fabric.links.rate" || !strings.HasPrefix(e.Msg, `"25Gbs" is not a rate`) {
		t.Errorf("fields: %+v", e)
	}
}

func TestMultipleErrors(t *testing.T) {
	text := edit(t, "kmin: 5KB", "kmin: 300KB")
	text = strings.Replace(text, "dst: 1,", "dst: 0,", 1)
	text = strings.Replace(text, "duration: 2ms", "duration: 0s", 1)
	_, err := Parse("t.yaml", []byte(text))
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("want an ErrorList, got %T: %v", err, err)
	}
	want := []string{
		"t.yaml:2: duration: 0s is not allowed (must be > 0)",
		"t.yaml:13: fabric.priorities[0].ecn.kmin: 300KB is above kmax 200KB (need kmin <= kmax)",
		"t.yaml:15: flows[0].dst: host 0 would send to itself (src and dst both contain 0)",
	}
	if len(list) != len(want) {
		t.Fatalf("got %d errors:\n%v", len(list), err)
	}
	for i := range want {
		if list[i].Error() != want[i] {
			t.Errorf("error %d\n got: %s\nwant: %s", i, list[i], want[i])
		}
	}
	if err.Error() != strings.Join(want, "\n") {
		t.Errorf("joined text:\n%s", err)
	}
	// Unknown keys are all reported too, with what validation finds in
	// the rest of the file, in one pass, by line.
	_, err = Parse("t.yaml", []byte("name: t\nfoo: 1\nbar: 2\n"))
	if !errors.As(err, &list) || len(list) != 5 || list[3].Line != 2 || list[4].Line != 3 ||
		list[0].Field != "duration" || list[1].Field != "fabric.topology.kind" || list[2].Field != "flows" {
		t.Errorf("unknown keys: %v", err)
	}
}

// TestErrorsInOnePass: a file with schema errors (an unknown key, a bad
// unit, a string for an integer) and semantic errors elsewhere (kmin above
// kmax, a flow to itself) reports all of them at once, sorted by line, and
// nothing more: the refused fields' echoes (rate refused, so host_rate
// would default to 0; "duration" missing after the typo "duraton") are
// left out.
func TestErrorsInOnePass(t *testing.T) {
	text := edit(t, "kmin: 5KB", "kmin: 300KB")
	text = strings.Replace(text, "dst: 1,", "dst: 0,", 1)
	text = strings.Replace(text, "rate: 25Gbps", "rate: 25Gbs", 1)
	text = strings.Replace(text, "duration: 2ms", "duraton: 2ms", 1)
	text = strings.Replace(text, "hosts: 4}", "hosts: 4}\n  spinez: 2", 1)
	text = strings.Replace(text, "sample_interval: 10us", "sample_interval: 10us, warmup: many", 1)
	_, err := Parse("t.yaml", []byte(text))
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("want an ErrorList, got %T: %v", err, err)
	}
	want := []string{
		`t.yaml:2: duraton: unknown key "duraton", did you mean "duration"?`,
		`t.yaml:5: fabric.spinez: unknown key "spinez"`,
		`t.yaml:7: fabric.links.rate: "25Gbs" is not a rate`,
		`t.yaml:14: fabric.priorities[0].ecn.kmin: 300KB is above kmax 200KB (need kmin <= kmax)`,
		`t.yaml:16: flows[0].dst: host 0 would send to itself`,
		`t.yaml:17: outputs.warmup: "many" is not a duration`,
	}
	if len(list) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(list), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(list[i].Error(), w) {
			t.Errorf("error %d\n got: %s\nwant: %s...", i, list[i], w)
		}
	}
}

// TestErrorCap: past maxErrors problems, the first maxErrors by line are
// shown and one last entry counts the rest.
func TestErrorCap(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: t\n")
	const n = maxErrors + 7
	for i := range n {
		fmt.Fprintf(&b, "unknown%d: 1\n", i)
	}
	_, err := Parse("t.yaml", []byte(b.String()))
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("want an ErrorList, got %T: %v", err, err)
	}
	if len(list) != maxErrors+1 {
		t.Fatalf("got %d entries, want %d:\n%v", len(list), maxErrors+1, err)
	}
	for i := 1; i < maxErrors; i++ {
		if list[i].Line < list[i-1].Line {
			t.Errorf("not sorted by line at %d: %v then %v", i, list[i-1], list[i])
		}
	}
	// duration, fabric.topology.kind and flows are missing (line 1), plus
	// n unknown keys: n+3 problems, maxErrors shown.
	last := list[maxErrors].Error()
	if wantMore := fmt.Sprintf("t.yaml: and %d more problems", n+3-maxErrors); !strings.HasPrefix(last, wantMore) {
		t.Errorf("last entry %q, want it to start %q", last, wantMore)
	}
}

// TestAliases: anchors and aliases work for whole values.
func TestAliases(t *testing.T) {
	text := `name: t
duration: 2ms
fabric:
  topology: {kind: star, hosts: 4}
  priorities:
    - {prio: 3, lossless: true, ecn: &ecn {kmin: 5KB, kmax: 200KB}}
    - {prio: 0, ecn: *ecn}
flows:
  - {src: 0, dst: 1, prio: 3}
  - {src: 1, dst: 2, prio: 0}
`
	s, err := Parse("t.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if s.Fabric.Priorities[1].ECN.Kmax != 200*KB || s.Flows[1].Name != "flow1" {
		t.Errorf("alias: %+v", s.Fabric.Priorities[1].ECN)
	}
	bomb := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	for i := 'b'; i <= 'j'; i++ {
		p := string(i - 1)
		bomb += string(i) + ": &" + string(i) + " [*" + p + ", *" + p + ", *" + p + ", *" + p + ", *" + p + ", *" + p + ", *" + p + ", *" + p + ", *" + p + ", *" + p + "]\n"
	}
	bomb += "flows: [{src: *j}]\n"
	if _, err := Parse("bomb.yaml", []byte(bomb)); err == nil {
		t.Fatal("alias bomb accepted")
	}
}

// testFabric registers, for one test, a fabric model of its own (scenarios
// links none): the values a test's fabric derives from (host_rate from the
// link rate, xon_offset from the MTU). The models' real values are tested
// in package experiment.
func testFabric(t *testing.T, rate Rate, mtu Size) {
	t.Helper()
	SetModelDefaults(func(*Scenario) ModelDefaults {
		return ModelDefaults{Links: &Links{Rate: rate, Delay: 3}, Switch: &Switch{Buffer: 5 * MiB}, Hosts: &Hosts{MTU: mtu},
			PriorityPFC: &PriorityPFC{Alpha: Ratio{1, 3}}, ECN: &ECN{Pmax: 0.25}, PFC: &PFC{Quanta: 77}, Watchdog: &Watchdog{Detect: 9}}
	})
	t.Cleanup(func() { SetModelDefaults(nil) })
}

// TestDefaults checks the defaults and that a minimal file gets them: the
// format's own, and the fabric model's (here testFabric's) overlaid.
func TestDefaults(t *testing.T) {
	testFabric(t, 40*units.Gbps, 2*KiB)
	text := "name: tiny\nduration: 1ms\nfabric: {topology: {kind: leaf-spine, leaves: 2, hosts_per_leaf: 2, spines: 1}, priorities: [{prio: 3, lossless: true}], pfc: {watchdog: {}}}\nflows: [{src: 0, dst: 3, prio: 3}]\n"
	s, err := Parse("tiny.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	f := s.Fabric
	pp := f.Priorities[0].PFC
	checks := []struct {
		name      string
		got, want any
	}{
		{"version", s.Version, 1},
		{"rate", f.Links.Rate, Rate(40 * units.Gbps)},
		{"host_rate", f.Links.HostRate, Rate(40 * units.Gbps)},
		{"uplink_rate", f.Links.UplinkRate, Rate(40 * units.Gbps)},
		{"delay", f.Links.Delay, Duration(3)},
		{"buffer", f.Switch.Buffer, 5 * MiB},
		{"alpha", f.Switch.Alpha, Ratio{1, 8}},
		{"scheduler", f.Switch.Scheduler, Strict},
		{"xoff", pp.XOFF, Threshold{Dynamic: true}},
		{"pfc alpha", pp.Alpha, Ratio{1, 3}},
		{"xon_offset", pp.XONOffset, 4 * KiB},
		{"headroom", pp.Headroom, AutoSize{Auto: true}},
		{"pfc enabled", *f.PFC.Enabled, true},
		{"quanta", f.PFC.Quanta, 77},
		{"refresh", f.PFC.Refresh, AutoDuration{Auto: true}},
		{"watchdog", f.PFC.Watchdog.Detect.String() + "/" + f.PFC.Watchdog.Restore.String(), "9ps/100ms"},
		{"mtu", s.Hosts.MTU, 2 * KiB},
		{"flow name", s.Flows[0].Name, "flow0"},
		{"flow rate", s.Flows[0].Rate, FlowRate{Line: true}},
		{"flow count", s.Flows[0].Count, 1},
		{"flow size", s.Flows[0].Size, Size(0)},
		{"dir", s.Outputs.Dir, "out/tiny"},
		{"json", *s.Outputs.JSON, true},
		{"csv", *s.Outputs.CSV, true},
		{"sample", s.Outputs.SampleInterval.String(), "10us"},
		{"hosts", f.Topology.HostCount(), 4},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if err := s.ApplyDefaults(); err != nil {
		t.Errorf("ApplyDefaults is not idempotent: %v", err)
	}
	dwrr, err := Parse("d.yaml", []byte("name: d\nduration: 1ms\nfabric: {topology: {kind: star, hosts: 2}, switch: {scheduler: dwrr}}\nflows: [{src: 0, dst: 1}]\n"))
	if err != nil || len(dwrr.Fabric.Switch.DWRRWeights) != 8 {
		t.Errorf("dwrr default weights: %v %v", err, dwrr)
	}
}

// TestBuiltInGo checks a scenario written in Go: zero means default, and
// errors carry the field without a file.
func TestBuiltInGo(t *testing.T) {
	s := &Scenario{
		Name:     "go",
		Duration: Duration(1000000000),
		Fabric:   Fabric{Topology: Topology{Kind: Star, Hosts: 3}, Links: Links{Rate: 25 * units.Gbps}},
		Flows:    []Flow{{Src: HostSet{0}, Dst: HostSet{1, 2}}},
	}
	if err := s.ApplyDefaults(); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	fl := s.ExpandFlows()
	if len(fl) != 2 || fl[1].Name != "flow0.0-2" || fl[1].Rate != 25*units.Gbps {
		t.Errorf("ExpandFlows: %+v", fl)
	}
	s.Flows[0].Dst = HostSet{0}
	err := s.Validate()
	if err == nil || err.Error() != "flows[0].dst: host 0 would send to itself (src and dst both contain 0)" {
		t.Errorf("Go scenario error: %v", err)
	}
	if s.File() != "" {
		t.Errorf("File() = %q", s.File())
	}
}

func TestExpandFlows(t *testing.T) {
	s, err := Parse("t.yaml", []byte(edit(t, "  - {name: a, src: 0, dst: 1, prio: 3}",
		"  - {name: a, src: 0, dst: 1, prio: 3, rate: 10Gbps, size: 1MB, start: 5us, count: 2}\n  - {name: b, src: [1, 2], dst: 3, prio: 3}")))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range s.ExpandFlows() {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, " "); got != "a#0 a#1 b.1-3 b.2-3" {
		t.Errorf("names: %s", got)
	}
	f := s.ExpandFlows()[1]
	if f.Rate != 10*units.Gbps || f.Size != 1000000 || f.Start.String() != "5us" || f.Group != 0 || f.Prio != 3 {
		t.Errorf("instance %+v", f)
	}
}

func TestErrorfPosition(t *testing.T) {
	s, err := Parse("t.yaml", []byte(baseYAML))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ field, want string }{
		{"fabric.links.rate", "t.yaml:6: fabric.links.rate: x"},
		{"fabric.links.host_rate", "t.yaml:5: fabric.links.host_rate: x"}, // defaulted: its parent's line
		{"flows[0].src", "t.yaml:15: flows[0].src: x"},
		{"hosts.mtu", "t.yaml:1: hosts.mtu: x"},
	}
	for _, c := range cases {
		if got := s.Errorf(c.field, "x").Error(); got != c.want {
			t.Errorf("Errorf(%q) = %q, want %q", c.field, got, c.want)
		}
	}
}
