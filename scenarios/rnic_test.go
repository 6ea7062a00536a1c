package scenarios

import (
	"errors"
	"github.com/besim/besim/units"
	"strings"
	"testing"
)

// rnicYAML is a valid RNIC scenario; the error table edits one line of it.
const rnicYAML = `name: r
duration: 2ms
fabric:
  topology: {kind: star, hosts: 4}
  priorities:
    - {prio: 3, lossless: true, ecn: {kmin: 5KB, kmax: 200KB}}
hosts: {nic: rnic}
rnic:
  cc: dcqcn
  wqe_cost: 130ns
  pcie: {bandwidth: 212Gbps}
dcqcn:
  g: 1/256
  ai_rate: 5Mbps
flows:
  - {name: a, src: 0, dst: 1, prio: 3, transport: rc, message: 64KiB, depth: 16}
outputs: {warmup: 1ms}
`

// rawFlowYAML is the smallest raw-host scenario; cases append to its flow.
const rawFlowYAML = "name: w\nduration: 1ms\nfabric: {topology: {kind: star, hosts: 2}}\nflows:\n  - {src: 0, dst: 1%s}\n"

// benchYAML is a valid perftest benchmark.
const benchYAML = `name: b
benchmark:
  kind: perftest
  points:
    - {rate: 100Gbps, mtu: 4096}
`

func TestRNICIsValid(t *testing.T) {
	s, err := Parse("r.yaml", []byte(rnicYAML))
	if err != nil {
		t.Fatal(err)
	}
	if s.RNIC.CC != CCDCQCN || s.DCQCN.G != (Ratio{1, 256}) || s.Flows[0].Transport != RC {
		t.Fatalf("unexpected %+v", s)
	}
	if _, err := Parse("b.yaml", []byte(benchYAML)); err != nil {
		t.Fatal(err)
	}
}

func TestRNICErrors(t *testing.T) {
	testFabric(t, 25*units.Gbps, KiB) // the host link rate and MTU of the cases
	cases := []struct {
		name     string
		base     string // rnicYAML when empty
		old, new string // edit of base; old == "" means new is the whole file
		want     string // the first error, exactly
	}{
		// Strict keys.
		{"unknown rnic key", "", "wqe_cost: 130ns", "wqe_cots: 130ns",
			`r.yaml:10: rnic.wqe_cots: unknown key "wqe_cots", did you mean "wqe_cost"? (allowed keys: cc, payload, wqe_cost, packet_cost, units, cqe_cost, qp_cache_entries, rx_buffer, ack_req_every, cnp_prio, pcie, doorbells, cpu, qp, mr_cache)`},
		{"unknown dcqcn key", "", "g: 1/256", "gain: 1/256",
			`r.yaml:13: dcqcn.gain: unknown key "gain" (allowed keys: profile, g, initial_alpha, alpha_timer, rate_timer, byte_counter, fast_recovery, ai_rate, hai_rate, min_rate, cnp_interval, decrease_period, alpha_update, target_clamp)`},
		{"unknown pcie key", "", "{bandwidth: 212Gbps}", "{bandwidth: 212Gbps, lanes: 16}",
			`r.yaml:11: rnic.pcie.lanes: unknown key "lanes" (allowed keys: bandwidth, read_latency, write_latency, mmio_latency)`},
		{"unknown cpu key", "", "  wqe_cost: 130ns", "  wqe_cost: 130ns\n  cpu: {post: 40ns}",
			`r.yaml:11: rnic.cpu.post: unknown key "post", did you mean "poll"? (allowed keys: post_send, post_send_per_wqe, doorbell, post_recv, post_recv_per_wqe, poll, poll_per_cqe, lock_acquire, lock_transfer, reg_mr, reg_mr_per_page)`},
		{"unknown flow key", "", "depth: 16}", "depth: 16, qps: 2}",
			`r.yaml:16: flows[0].qps: unknown key "qps", did you mean "op"? (allowed keys: name, src, dst, prio, transport, rate, size, message, op, depth, start, count)`},

		// Units and enums.
		{"duration without unit", "", "wqe_cost: 130ns", "wqe_cost: 130",
			`r.yaml:10: rnic.wqe_cost: "130" is not a duration: missing unit (use e.g. 10us, 1.5ms, 2s; units: ps, ns, us, ms, s)`},
		{"bytes per second", "", "bandwidth: 212Gbps", "bandwidth: 26GBps",
			`r.yaml:11: rnic.pcie.bandwidth: "26GBps" is not a rate: unit "GBps" is bytes per second; rates are bits per second (bps) (use e.g. 25Gbps, 100Mbps; units: bps, Kbps, Mbps, Gbps, Tbps)`},
		{"ambiguous message", "", "message: 64KiB", "message: 64K",
			`r.yaml:16: flows[0].message: "64K" is not a size: unit "K" is ambiguous; write KB (powers of 1000) or KiB (powers of 1024) (use e.g. 4KiB = 4096 bytes, 4KB = 4000 bytes, 1500 = 1500 bytes; units: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)`},
		{"bad cc", "", "cc: dcqcn", "cc: timely",
			`r.yaml:9: rnic.cc: "timely" is not a congestion control (allowed: none, dcqcn)`},
		{"bad nic", "", "hosts: {nic: rnic}", "hosts: {nic: cx5}",
			`r.yaml:7: hosts.nic: "cx5" is not a NIC model (allowed: raw, rnic)`},
		{"bad transport", "", "transport: rc", "transport: tcp",
			`r.yaml:16: flows[0].transport: "tcp" is not a transport (allowed: raw, rc, ud)`},
		{"bad op", "", "transport: rc", "transport: rc, op: read",
			`r.yaml:16: flows[0].op: "read" is not a supported operation (allowed: write, send)`},
		{"bad payload", "", "cc: dcqcn", "cc: dcqcn\n  payload: full",
			`r.yaml:10: rnic.payload: "full" is not a payload mode (allowed: sizes-only, bytes)`},
		{"ratio g", "", "g: 1/256", "g: 1/0",
			`r.yaml:13: dcqcn.g: "1/0" is not a ratio: division by zero (use e.g. 1/8, 0.125, 2)`},

		// Ranges and explicit zeros.
		{"zero depth", "", "depth: 16", "depth: 0",
			`r.yaml:16: flows[0].depth: 0 is not allowed (omit the key for the default, 16)`},
		{"depth too large", "", "depth: 16", "depth: 40000",
			`r.yaml:16: flows[0].depth: 40000 is too large (at most 32768)`},
		{"zero units", "", "wqe_cost: 130ns", "wqe_cost: 130ns\n  units: 0",
			`r.yaml:11: rnic.units: 0 is not allowed (must be >= 1)`},
		{"zero cost is allowed, negative is not", "", "wqe_cost: 130ns", "wqe_cost: -1ns",
			`r.yaml:10: rnic.wqe_cost: "-1ns" is not a duration: negative values are not allowed (use e.g. 10us, 1.5ms, 2s; units: ps, ns, us, ms, s)`},
		{"small rx buffer", "", "wqe_cost: 130ns", "wqe_cost: 130ns\n  rx_buffer: 1KB",
			`r.yaml:11: rnic.rx_buffer: 1KB is too small (at least 4096 bytes)`},
		{"cnp prio", "", "wqe_cost: 130ns", "wqe_cost: 130ns\n  cnp_prio: 9",
			`r.yaml:11: rnic.cnp_prio: 9 is out of range (allowed: 0 to 7)`},
		{"lock-free doorbells", "", "wqe_cost: 130ns", "wqe_cost: 130ns\n  doorbells: {lock_free: -1}",
			`r.yaml:11: rnic.doorbells.lock_free: -1 is out of range (allowed: 0 to 65536)`},
		{"qp timeout", "", "wqe_cost: 130ns", "wqe_cost: 130ns\n  qp: {timeout: 32}",
			`r.yaml:11: rnic.qp.timeout: 32 is out of range (allowed: 0 to 31: 4.096us x 2^timeout, 0 for none)`},
		{"g above 1", "", "g: 1/256", "g: 2",
			`r.yaml:13: dcqcn.g: 2 is out of range (allowed: above 0, at most 1, e.g. 1/256)`},
		{"initial alpha above 1", "", "g: 1/256", "g: 1/256\n  initial_alpha: 3/2",
			`r.yaml:14: dcqcn.initial_alpha: 3/2 is out of range (allowed: 0 to 1)`},
		{"zero rate timer", "", "g: 1/256", "g: 1/256\n  rate_timer: 0s",
			`r.yaml:14: dcqcn.rate_timer: 0s is not allowed (must be > 0)`},
		{"min rate above link", "", "ai_rate: 5Mbps", "ai_rate: 5Mbps\n  min_rate: 40Gbps",
			`r.yaml:15: dcqcn.min_rate: 40Gbps is above the link rate 25Gbps`},
		{"warmup after end", "", "warmup: 1ms", "warmup: 3ms",
			`r.yaml:17: outputs.warmup: 3ms is not before the end of the scenario (duration 2ms)`},

		// Series marks.
		{"bad queue pattern", "", "warmup: 1ms", "warmup: 1ms, queues: [\"sw0->*/3\", \"sw0->h[1-\"]",
			`r.yaml:17: outputs.queues[1]: "sw0->h[1-" is not a shell pattern (allowed: text with * ? [a-z], as Go's path.Match; names switch queues (SWITCH->PEER/PRIO))`},
		{"empty flow pattern", "", "warmup: 1ms", "warmup: 1ms, flows: [\"\"]",
			`r.yaml:17: outputs.flows[0]: "" is not a shell pattern (allowed: text with * ? [a-z], as Go's path.Match; names rc/ud flows)`},
		{"no marks", "", "warmup: 1ms", "warmup: 1ms, queues: []",
			`r.yaml:17: outputs.queues: empty (omit the key to record series auto's choice of switch queues (SWITCH->PEER/PRIO))`},
		{"flow pattern matching no flow", "", "warmup: 1ms", "warmup: 1ms, flows: [a, b*]",
			`r.yaml:17: outputs.flows[1]: "b*" matches no flow (the flows are named "a")`},
		{"marks without series", "", "warmup: 1ms", "warmup: 1ms, series: none, flows: [a]",
			`r.yaml:17: outputs.flows: marks rc/ud flows to record, but outputs.series is none (no sampling): remove one`},
		{"queue marks with every queue", "", "warmup: 1ms", "warmup: 1ms, series: all, queues: [\"*\"]",
			`r.yaml:17: outputs.queues: outputs.series all records every switch queue already: remove one`},
		{"flow marks on raw hosts", rawFlowYAML, "", "}\noutputs: {flows: [w]",
			`r.yaml:6: outputs.flows: only rc and ud flows (hosts.nic: rnic) record series`},
		{"queue marks in a benchmark", benchYAML, "name: b\n", "name: b\noutputs: {queues: [\"*\"]}\n",
			`r.yaml:2: outputs.queues: only a flow scenario (flows:) records series of marked switch queues (SWITCH->PEER/PRIO)`},

		// Sections and transports that do not go together.
		{"dcqcn without dcqcn", "", "cc: dcqcn", "cc: none",
			`r.yaml:12: dcqcn: only used with rnic.cc: dcqcn (rnic.cc is none)`},
		{"rc flow on raw hosts", rawFlowYAML, "", ", transport: rc",
			`r.yaml:5: flows[0].transport: rc flows need hosts.nic: rnic (hosts.nic is raw)`},
		{"ud flow on raw hosts", rawFlowYAML, "", ", transport: ud, message: 512",
			`r.yaml:5: flows[0].transport: ud flows need hosts.nic: rnic (hosts.nic is raw)`},
		{"rnic section on raw hosts", "", "hosts: {nic: rnic}", "hosts: {nic: raw}",
			`r.yaml:8: rnic: only used with hosts.nic: rnic or a benchmark (hosts.nic is raw)`},
		{"depth on a raw flow", rawFlowYAML, "", ", depth: 4",
			`r.yaml:5: flows[0].depth: only used by rc and ud flows (this flow's transport is raw)`},
		{"warmup with raw hosts", rawFlowYAML, "", "}\noutputs: {warmup: 10us",
			`r.yaml:6: outputs.warmup: only used with hosts.nic: rnic (it starts the measured interval of rc and ud flows)`},
		{"raw flow on rnic hosts", "", "transport: rc, message: 64KiB, depth: 16", "transport: raw",
			`r.yaml:16: flows[0].transport: raw flows need hosts.nic: raw (hosts.nic is rnic; use rc or ud)`},
		{"ud message above mtu", "", "transport: rc, message: 64KiB", "transport: ud, message: 2KiB",
			`r.yaml:16: flows[0].message: 2KiB is above hosts.mtu 1KiB (a UD message is one datagram)`},
		{"op on ud", "", "transport: rc, message: 64KiB", "transport: ud, op: send",
			`r.yaml:16: flows[0].op: only used by rc flows (ud flows send datagrams)`},
		{"rc rate above line", "", "depth: 16}", "depth: 16, rate: 40Gbps}",
			`r.yaml:16: flows[0].rate: 40Gbps is above the host link rate 25Gbps (use line for full speed)`},

		// Benchmarks.
		{"benchmark with fabric", benchYAML, "name: b\n", "name: b\nfabric: {topology: {kind: star, hosts: 2}}\n",
			`r.yaml:2: fabric: not used with a benchmark (it runs two NICs back to back on one wire; set rates and MTUs in benchmark)`},
		{"benchmark with flows", benchYAML, "name: b\n", "name: b\nflows: [{src: 0, dst: 1}]\n",
			`r.yaml:2: flows: not used with a benchmark (a scenario has either flows or a benchmark)`},
		{"benchmark kind missing", benchYAML, "  kind: perftest\n", "",
			`r.yaml:2: benchmark.kind: missing (required; allowed: perftest, msgrate, fragsize, hol, pingpong, peak, mrcache)`},
		{"benchmark bad kind", benchYAML, "kind: perftest", "kind: ib_write_bw",
			`r.yaml:3: benchmark.kind: "ib_write_bw" is not a benchmark kind (allowed: perftest, msgrate, fragsize, hol, pingpong, peak, mrcache)`},
		{"msgrate key on perftest", benchYAML, "  kind: perftest\n", "  kind: perftest\n  threads: 8\n",
			`r.yaml:4: benchmark.threads: not used by kind perftest (perftest uses: warmup, message, points, rates, mtus, transports, tx_depth, rx_depth, cq_mod, delay)`},
		{"points and rates", benchYAML, "  kind: perftest\n", "  kind: perftest\n  rates: [25Gbps]\n  mtus: [1024]\n",
			`r.yaml:6: benchmark.points: give either points or rates and mtus (their cross product), not both`},
		{"rates without mtus", benchYAML, "  points:\n    - {rate: 100Gbps, mtu: 4096}\n", "  rates: [25Gbps]\n",
			`r.yaml:2: benchmark.mtus: missing (rates needs mtus: their cross product is run)`},
		{"bad mtu", benchYAML, "mtu: 4096", "mtu: 1500",
			`r.yaml:5: benchmark.points[0].mtu: 1500 is not a RoCE MTU (allowed: 256, 512, 1024, 2048, 4096)`},
		{"raw in a benchmark", benchYAML, "mtu: 4096", "mtu: 4096, transport: raw",
			`r.yaml:5: benchmark.points[0].transport: "raw" is not a benchmark transport (allowed: rc, ud)`},
		{"ud message above mtu", benchYAML, "  kind: perftest\n", "  kind: perftest\n  message: 8KiB\n",
			`r.yaml:4: benchmark.message: 8KiB is above the MTU 4KiB of a ud point (a UD message is one datagram; omit message for the MTU)`},
		{"cq_mod above tx_depth", benchYAML, "  kind: perftest\n", "  kind: perftest\n  tx_depth: 16\n  cq_mod: 32\n",
			`r.yaml:5: benchmark.cq_mod: 32 is out of range (allowed: 1 to tx_depth 16)`},
		{"zero benchmark duration", benchYAML, "name: b\n", "name: b\nduration: 0s\n",
			`r.yaml:2: duration: 0s is not allowed (omit the key for the default, 500us)`},
		{"qp attributes in a benchmark", benchYAML, "name: b\n", "name: b\nrnic: {qp: {timeout: 10}}\n",
			`r.yaml:2: rnic.qp: not used with a benchmark (perftest and msgrate set their own QP attributes)`},
		{"thread domains twice", "name: m\nbenchmark: {kind: msgrate, thread_domains: [true, true]}\n", "", "",
			`r.yaml:2: benchmark.thread_domains: each of false and true at most once`},
		{"zero jitter", "name: m\nbenchmark: {kind: msgrate, jitter: 0%}\n", "", "",
			`r.yaml:2: benchmark.jitter: 0% is not allowed (omit the key for the default, 50%)`},
		{"signal_every above depth", "name: m\nbenchmark: {kind: msgrate, depth: 4, signal_every: 8}\n", "", "",
			`r.yaml:2: benchmark.signal_every: 8 is out of range (allowed: 1 to depth 4)`},
		{"msgrate key in fragsize", "name: f\nbenchmark: {kind: fragsize, qps: [8]}\n", "", "",
			`r.yaml:2: benchmark.qps: not used by kind fragsize (fragsize uses: warmup, message, rates, fragments, depth, delay)`},
		{"fragment above the message", "name: f\nbenchmark: {kind: fragsize, message: 64KiB, fragments: [4KiB, 128KiB]}\n", "", "",
			`r.yaml:2: benchmark.fragments[1]: 128KiB is out of range (allowed: 64B to the message size 64KiB)`},
		{"zero fragsize warmup", "name: f\nbenchmark: {kind: fragsize, warmup: 0s}\n", "", "",
			`r.yaml:2: benchmark.warmup: 0s is not allowed (omit the key for the default, 6.7108864ms)`},
		{"hol small message", "name: h\nbenchmark: {kind: hol, message: 8}\n", "", "",
			`r.yaml:2: benchmark.message: 8B is too small (at least 16 bytes: the small message carries a sequence number and its send time)`},
		{"hol large message", "name: h\nbenchmark: {kind: hol, message: 4KiB, large_message: 2KiB}\n", "", "",
			`r.yaml:2: benchmark.large_message: 2KiB is out of range (allowed: above message 4KiB, at most 64MiB)`},
		{"signal_every through the core", "name: m\nbenchmark: {kind: msgrate, through: core, signal_every: 4}\n", "", "",
			`r.yaml:2: benchmark.signal_every: not used by kind msgrate (msgrate uses: warmup, message, through, threads, qps, thread_domains, rate, depth, app_work, jitter, delay)`},
		{"core message too small", "name: m\nbenchmark: {kind: msgrate, through: core, message: 32}\n", "", "",
			`r.yaml:2: benchmark.message: 32B is out of range through the core (allowed: 33B, above the 32-byte answer, to 4KiB, the core's small-message limit)`},
		{"bad msgrate path", "name: m\nbenchmark: {kind: msgrate, through: verbs}\n", "", "",
			`r.yaml:2: benchmark.through: "verbs" is not a msgrate path (allowed: nic, core)`},
		{"pingpong without points", "name: p\nbenchmark: {kind: pingpong}\n", "", "",
			`r.yaml:2: benchmark.points: missing (required: points, e.g. [{rate: 100Gbps, mtu: 4096}], or rates and mtus)`},
		{"pingpong transport", "name: p\nbenchmark: {kind: pingpong, points: [{rate: 25Gbps, mtu: 1024, transport: rc}]}\n", "", "",
			`r.yaml:2: benchmark.points[0].transport: not used by kind pingpong (every point runs the kind's own set)`},
		{"pingpong zero message", "name: p\nbenchmark: {kind: pingpong, rates: [25Gbps], mtus: [1024], messages: [0]}\n", "", "",
			`r.yaml:2: benchmark.messages[0]: 0B is out of range (allowed: 1B to 64MiB)`},
		{"peak fragment above message", "name: k\nbenchmark: {kind: peak, points: [{rate: 25Gbps, mtu: 1024}], message: 64KiB, fragment: 1MiB}\n", "", "",
			`r.yaml:2: benchmark.fragment: 1MiB is out of range (allowed: 64B to the message size 64KiB)`},
		{"peak raw transport", "name: k\nbenchmark: {kind: peak, points: [{rate: 25Gbps, mtu: 1024}], transports: [raw]}\n", "", "",
			`r.yaml:2: benchmark.transports[0]: "raw" is not a benchmark transport (allowed: rc, ud)`},
		{"hol unknown key", "name: h\nbenchmark: {kind: hol, large_flow: [1]}\n", "", "",
			`r.yaml:2: benchmark.large_flow: unknown key "large_flow", did you mean "large_flows"? (allowed keys: kind, warmup, message, points, rates, mtus, transports, tx_depth, rx_depth, cq_mod, delay, through, threads, qps, thread_domains, rate, depth, signal_every, app_work, jitter, fragments, large_flows, interval, large_message, fragment, registrations, buffers, block, messages, response)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := c.base
			if base == "" {
				base = rnicYAML
			}
			var text string
			switch {
			case base == rawFlowYAML:
				text = strings.Replace(rawFlowYAML, "%s", c.new, 1)
			case c.old == "" && c.new == "":
				text = base
			default:
				if strings.Count(base, c.old) != 1 {
					t.Fatalf("%q is not unique in the base", c.old)
				}
				text = strings.Replace(base, c.old, c.new, 1)
			}
			_, err := Parse("r.yaml", []byte(text))
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

// TestRNICDefaults: hosts.nic: rnic alone fills the rnic section's own
// keys (cc, payload, the QP attributes), and rc/ud flows get their message
// size and depth. The model knobs have no defaults here (this package links
// no model, see TestModelDefaultsOverlay): they stay unset, print absent and
// round-trip.
func TestRNICDefaults(t *testing.T) {
	s, err := Parse("d.yaml", []byte(`name: d
duration: 1ms
fabric: {topology: {kind: star, hosts: 3}, links: {rate: 100Gbps}}
hosts: {nic: rnic, mtu: 4096}
rnic: {cc: dcqcn}
flows:
  - {src: 0, dst: 2}
  - {src: 1, dst: 2, transport: ud}
  - {src: 0, dst: 1, op: send, rate: 10Gbps, size: 1MB}
`))
	if err != nil {
		t.Fatal(err)
	}
	r, d := s.RNIC, s.DCQCN
	checks := []struct {
		name      string
		got, want any
	}{
		{"cc", r.CC, CCDCQCN},
		{"payload", r.Payload, SizesOnly},
		{"qp timeout", *r.QP.Timeout, 14},
		{"rc transport", s.Flows[0].Transport, RC},
		{"rc message", s.Flows[0].Message, 64 * KiB},
		{"rc depth", s.Flows[0].Depth, 16},
		{"rc op", s.Flows[0].Op, OpWrite},
		{"ud message", s.Flows[1].Message, 4 * KiB},
		{"ud depth", s.Flows[1].Depth, 128},
		{"ud op", s.Flows[1].Op, Op("")},
		{"send op", s.Flows[2].Op, OpSend},
		// Model knobs: unset without the models.
		{"wqe_cost", r.WQECost == nil, true},
		{"units", r.Units, 0},
		{"pcie", r.PCIe.Bandwidth, Rate(0)},
		{"g", d != nil && d.G.IsZero(), true},
		{"K", d.AlphaTimer, Duration(0)},
		{"F", d.FastRecovery == nil, true},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	fl := s.ExpandFlows()
	if !fl[0].Line || fl[2].Line || fl[2].Rate != 10*units.Gbps || fl[1].Transport != UD || fl[2].Size != 1000000 {
		t.Errorf("instances: %+v", fl)
	}
	if err := s.ApplyDefaults(); err != nil {
		t.Errorf("ApplyDefaults is not idempotent: %v", err)
	}
	assertRoundTrip(t, s)
	if y, _ := s.YAML(); strings.Contains(string(y), "wqe_cost") || strings.Contains(string(y), "alpha_timer") || strings.Contains(string(y), "null") {
		t.Errorf("unresolved model knobs are printed:\n%s", y)
	}

	// Zero is a value for costs and counts whose zero means "free" or "none".
	z, err := Parse("z.yaml", []byte("name: z\nduration: 1ms\nfabric: {topology: {kind: star, hosts: 2}}\nhosts: {nic: rnic}\n"+
		"rnic: {packet_cost: 0s, doorbells: {lock_free: 0}, cpu: {lock_transfer: 0s}, qp: {timeout: 0}}\nflows: [{src: 0, dst: 1}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if *z.RNIC.PacketCost != 0 || *z.RNIC.Doorbells.LockFree != 0 || *z.RNIC.CPU.LockTransfer != 0 || *z.RNIC.QP.Timeout != 0 || z.DCQCN != nil {
		t.Errorf("explicit zeros: %+v", z.RNIC)
	}
	assertRoundTrip(t, z)
	// A raw scenario gets no rnic section.
	raw, err := Parse("w.yaml", []byte(strings.Replace(rawFlowYAML, "%s", "", 1)))
	if err != nil || raw.RNIC != nil || raw.Hosts.NIC != RawNIC || raw.Flows[0].Transport != RawTransport {
		t.Errorf("raw: %v %+v", err, raw)
	}
}

// TestModelDefaultsOverlay: with a ModelDefaults registered (here a fake
// one; experiment's gives the models'), ApplyDefaults fills each unset knob
// with the model's value, keeps what the file set (an explicit zero of a
// pointer knob too), leaves a knob whose model value is zero unset, and
// reports an explicit zero of a plain knob naming the model's value.
func TestModelDefaultsOverlay(t *testing.T) {
	seven, five := Duration(7), 5
	var asked *Scenario
	SetModelDefaults(func(s *Scenario) ModelDefaults {
		asked = s
		return ModelDefaults{
			RNIC:  &RNIC{WQECost: &seven, Units: 3, CNPPrio: &five, PCIe: PCIe{Bandwidth: 9}, CPU: RNICCPU{Poll: &seven}},
			DCQCN: &DCQCN{G: Ratio{1, 4}, AlphaTimer: 11, FastRecovery: &five},
		}
	})
	defer SetModelDefaults(nil)
	if !HasModelDefaults() {
		t.Fatal("HasModelDefaults after SetModelDefaults")
	}
	const head = "name: d\nduration: 1ms\nfabric: {topology: {kind: star, hosts: 2}}\nhosts: {nic: rnic}\nflows: [{src: 0, dst: 1}]\n"
	s, err := Parse("d.yaml", []byte(head+"rnic: {cc: dcqcn, units: 8, cpu: {poll: 0s}}\ndcqcn: {alpha_timer: 2us}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if asked != s {
		t.Error("ModelDefaults was not asked about the scenario being resolved")
	}
	r, d := s.RNIC, s.DCQCN
	if *r.WQECost != seven || r.Units != 8 || *r.CNPPrio != 5 || r.PCIe.Bandwidth != 9 || *r.CPU.Poll != 0 {
		t.Errorf("rnic overlay: %+v", r)
	}
	if r.CQECost != nil || r.QPCacheEntries != 0 || r.CPU.PostSend != nil {
		t.Errorf("knobs the model leaves zero were filled: %+v", r)
	}
	if d.G != (Ratio{1, 4}) || d.AlphaTimer.String() != "2us" || *d.FastRecovery != 5 || d.RateTimer != 0 {
		t.Errorf("dcqcn overlay: %+v", d)
	}
	assertRoundTrip(t, s)

	_, err = Parse("z.yaml", []byte(head+"rnic: {units: 0}\n"))
	if err == nil || !strings.Contains(err.Error(), "rnic.units: 0 is not allowed (omit the key for the default, 3)") {
		t.Errorf("explicit zero: %v", err)
	}

	// A ModelDefaults without values leaves every knob unset; the scenario
	// still validates.
	SetModelDefaults(func(s *Scenario) ModelDefaults { return ModelDefaults{} })
	if _, err := Parse("n.yaml", []byte(head+"rnic: {cc: dcqcn}\n")); err != nil {
		t.Errorf("no model values: %v", err)
	}
}

func TestBenchmarkDefaultsAndRuns(t *testing.T) {
	s, err := Parse("b.yaml", []byte("name: b\nbenchmark: {kind: perftest, rates: [25Gbps, 100Gbps], mtus: [1024, 4096], transports: [ud, rc]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	b := s.Benchmark
	if s.Duration.String() != "500us" || b.Warmup.String() != "50us" || b.TxDepth != 128 || b.RxDepth != 512 || b.CQMod != 100 || s.RNIC == nil || s.RNIC.QP.Timeout != nil {
		t.Errorf("perftest defaults: %s %+v", s.Duration, b)
	}
	var keys []string
	for _, r := range b.PerfRuns() {
		keys = append(keys, r.Rate.String()+"/"+r.MTU.String()+"/"+string(r.Transport)+"/"+r.Message.String())
	}
	want := "25Gbps/1KiB/ud/1KiB 25Gbps/1KiB/rc/64KiB 25Gbps/4KiB/ud/4KiB 25Gbps/4KiB/rc/64KiB " +
		"100Gbps/1KiB/ud/1KiB 100Gbps/1KiB/rc/64KiB 100Gbps/4KiB/ud/4KiB 100Gbps/4KiB/rc/64KiB"
	if got := strings.Join(keys, " "); got != want {
		t.Errorf("runs:\n got %s\nwant %s", got, want)
	}
	assertRoundTrip(t, s)

	// A point's own transport overrides the list; a small tx_depth lowers cq_mod.
	p, err := Parse("p.yaml", []byte("name: p\nbenchmark: {kind: perftest, tx_depth: 64, points: [{rate: 25Gbps, mtu: 1024, transport: rc}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if runs := p.Benchmark.PerfRuns(); len(runs) != 1 || runs[0].Transport != RC || p.Benchmark.CQMod != 64 {
		t.Errorf("point transport: %+v cq_mod %d", runs, p.Benchmark.CQMod)
	}

	m, err := Parse("m.yaml", []byte("name: m\nbenchmark: {kind: msgrate}\n"))
	if err != nil {
		t.Fatal(err)
	}
	mb := m.Benchmark
	if m.Duration.String() != "1ms" || mb.Warmup.String() != "500us" || mb.Threads != 8 || len(mb.QPs) != 7 || mb.QPs[6] != 512 ||
		len(mb.ThreadDomains) != 2 || mb.Message != 512 || mb.Rate != 200*units.Gbps || mb.Depth != 16 || mb.SignalEvery != 8 ||
		mb.AppWork.String() != "150ns" || mb.Jitter != 0.5 {
		t.Errorf("msgrate defaults: %s %+v", m.Duration, mb)
	}
	assertRoundTrip(t, m)
	out, _ := m.YAML()
	if strings.Contains(string(out), "fabric") || strings.Contains(string(out), "hosts") || strings.Contains(string(out), "flows") {
		t.Errorf("a benchmark's normalized form has fabric keys:\n%s", out)
	}
}
