package scenarios

import (
	"fmt"
	"github.com/besim/besim/sim"
	"os"
	"strings"
	"testing"
)

func TestWorkloadBuiltin(t *testing.T) {
	for _, name := range []string{"fig14-incast", "fig15-incast"} {
		s, err := Load(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		w := s.Workload
		if w == nil || w.Kind != IncastPull || !w.Window.None || w.Fragment != 4*KiB || !w.VictimOn() {
			t.Fatalf("%s: workload %+v", name, w)
		}
		if tp := s.Fabric.Topology; tp.Kind != LeafSpine || tp.Spines != DefaultSpines || tp.HostsPerLeaf != 32 ||
			tp.Leaves != 1+(w.Servers+1+31)/32 {
			t.Errorf("%s: derived topology %+v", name, tp)
		}
		if s.Hosts.NIC != RNICModel || s.RNIC.Payload != PayloadBytes {
			t.Errorf("%s: hosts.nic %s payload %s", name, s.Hosts.NIC, s.RNIC.Payload)
		}
	}
}

const workloadYAML = `version: 1
name: w
seed: 1
duration: 1ms
fabric:
  links: {rate: 25Gbps, uplink_rate: 100Gbps, delay: 1us}
  priorities:
    - prio: 3
      lossless: true
hosts:
  nic: rnic
workload:
  kind: incast-pull
  servers: 8
  window: 16KB
`

func TestWorkloadParse(t *testing.T) {
	s, err := Parse("w.yaml", []byte(workloadYAML))
	if err != nil {
		t.Fatal(err)
	}
	w := s.Workload
	if w.Window.Bytes() != 16000 || w.Outstanding != defaultOutstanding || w.Response.Dist != DistLogNormal ||
		w.Response.Mean != 20*KB || w.Request != 64 || w.Workers != 1 {
		t.Errorf("defaults: %+v", w)
	}
	if s.Fabric.Topology.Leaves != 2 {
		t.Errorf("topology %+v", s.Fabric.Topology)
	}
	for _, win := range []string{"none", "0"} {
		s, err := Parse("w.yaml", []byte(strings.Replace(workloadYAML, "window: 16KB", "window: "+win, 1)))
		if err != nil || !s.Workload.Window.None || s.Workload.Window.Bytes() != 0 {
			t.Errorf("window %s: %v %+v", win, err, s.Workload.Window)
		}
	}
}

func TestWorkloadErrors(t *testing.T) {
	for _, c := range []struct{ old, new, want string }{
		{"window: 16KB", "window: lots", `w.yaml:15: workload.window: "lots" is not a window`},
		{"window: 16KB", "window: 100B", "w.yaml:15: workload.window: 100B is out of range"},
		{"servers: 8", "servers: 8\n  serverz: 3", `w.yaml:15: workload.serverz: unknown key "serverz", did you mean "servers"?`},
		{"servers: 8", "servers: -1", "w.yaml:14: workload.servers: -1 is not allowed"},
		{"  servers: 8\n", "", "workload.servers: missing"},
		{"kind: incast-pull", "kind: ps", `w.yaml:13: workload.kind: "ps" is not a workload kind`},
		{"servers: 8", "servers: 8\n  response: {dist: fixed, mean: 4KB}", "workload.response.mean: not used by dist fixed"},
		{"servers: 8", "servers: 8\n  response: {dist: lognormal, mean: 4KB, p99: 2KB}", "workload.response.p99: 2KB must exceed the mean"},
		{"servers: 8", "servers: 8\n  response: {dist: empirical, cdf: [{size: 1KB, p: 50%}]}", "the last point must have p 100%"},
		{"servers: 8", "servers: 8\n  workers: 40", "workload.workers: 40 workers (and the victim's receiver) do not fit"},
		{"hosts:\n  nic: rnic", "hosts:\n  nic: raw", "hosts.nic: raw: a workload runs the ByteExpress core"},
		{"    - prio: 3\n", "    - prio: 2\n", "a workload's RNICs send on priority 3"},
		{"hosts:", "flows: [{src: 0, dst: 1}]\nhosts:", "flows: not used with a workload"},
		{"fabric:\n", "fabric:\n  topology: {kind: star, hosts: 4}\n", "fabric.topology: the topology is derived from the workload"},
	} {
		y := strings.Replace(workloadYAML, c.old, c.new, 1)
		_, err := Parse("w.yaml", []byte(y))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q -> %q: got %v, want %q", c.old, c.new, err, c.want)
		}
	}
}

func TestPSClusterWorkload(t *testing.T) {
	s, err := Load("ps-cluster")
	if err != nil {
		t.Fatal(err)
	}
	w := s.Workload
	if w.Kind != PSCluster || w.Shards != 128 || w.Push == nil || w.Push.Mean != 20*KB || w.Compute == nil {
		t.Errorf("ps-cluster: %+v", w)
	}
	if tp := s.Fabric.Topology; tp.Leaves != 2 || tp.HostsPerLeaf != 32 || tp.Spines != DefaultSpines {
		t.Errorf("topology %+v", tp)
	}
	base := strings.Replace(workloadYAML, "kind: incast-pull", "kind: ps-cluster\n  rankers: 2", 1)
	if _, err := Parse("w.yaml", []byte(base)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ old, new, want string }{
		{"rankers: 2", "rankers: 2\n  victim: false", "workload.victim: not used by kind ps-cluster"},
		{"rankers: 2", "rankers: 0", "a ps-cluster needs at least one ranker or trainer"},
		{"rankers: 2", "rankers: 2\n  fan_out: 100", "workload.fan_out: 100 is too large"},
		{"rankers: 2", "rankers: 2\n  rate: fast", "workload.rate: \"fast\" is not a number"},
		{"rankers: 2", "rankers: 2\n  transport: udp", `workload.transport: "udp" is not a workload transport (allowed: rdma, tcp)`},
		{"rankers: 2", "rankers: 2\n  tcp: {cc: dctcp}", "workload.tcp: only used with transport: tcp"},
		{"rankers: 2", "rankers: 2\n  transport: tcp", "workload.tcp.prio: priority 0 is not declared in fabric.priorities"},
		{"rankers: 2", "rankers: 2\n  transport: tcp\n  tcp: {prio: 3}", "workload.tcp.prio: priority 3 is lossless"},
		{"rankers: 2", "rankers: 2\n  transport: tcp\n  tcp: {cc: bbr}", `workload.tcp.cc: "bbr" is not a TCP congestion control`},
		{"rankers: 2", "rankers: 2\n  transport: tcp\n  tcp: {speed: 1}", `unknown key "speed"`},
		{"rankers: 2", "rankers: 2\n  ack_timeout: 0", "workload.ack_timeout: 0 is not allowed (must be >= 1)"},
		{"rankers: 2", "rankers: 2\n  ack_timeout: 32", "workload.ack_timeout: 32 is too large (at most 31)"},
		{"rankers: 2", "rankers: 2\n  ack_timeout: 67ms", "workload.ack_timeout"},
		{"rankers: 2", "rankers: 2\n  spines: 0", "workload.spines: 0 is not allowed (omit the key for the default, 4)"},
		{"rankers: 2", "rankers: 2\n  spines: 65", "workload.spines: 65 is too large (at most 64)"},
	} {
		_, err := Parse("w.yaml", []byte(strings.Replace(base, c.old, c.new, 1)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.new, err, c.want)
		}
	}
	// A rate is a number (floats too), and open loop keeps outstanding as
	// the cap on requests in flight.
	if s, err := Parse("w.yaml", []byte(strings.Replace(base, "rankers: 2", "rankers: 2\n  rate: 2.5e3", 1))); err != nil || s.Workload.Rate != 2500 {
		t.Errorf("rate 2.5e3: %v", err)
	}
	if s, err := Parse("w.yaml", []byte(strings.Replace(base, "rankers: 2", "rankers: 2\n  ack_timeout: 18", 1))); err != nil || s.Workload.AckTimeout != 18 {
		t.Errorf("ack_timeout 18: %v", err)
	}
	inc := strings.Replace(workloadYAML, "servers: 8", "servers: 8\n  shards: 4", 1)
	if _, err := Parse("w.yaml", []byte(inc)); err == nil || !strings.Contains(err.Error(), "workload.shards: not used by kind incast-pull") {
		t.Errorf("shards under incast-pull: %v", err)
	}
}

func TestFaultsSection(t *testing.T) {
	s, err := Load("failover")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Faults) != 1 || s.Faults[0].Kind != FaultHostCrash || *s.Faults[0].Host != 8 || s.Workload.RPC.RequestTimeout != Duration(40*sim.Millisecond) {
		t.Errorf("failover: %+v %+v", s.Faults, s.Workload.RPC)
	}
	st, err := Load("pfc-storm")
	if err != nil || *st.Faults[0].Prio != 3 {
		t.Fatalf("pfc-storm: %v", err)
	}
	q, err := Load("quarantine")
	if err != nil || q.Workload.RPC.MaxReqFailures != 5 || q.Workload.RPC.MaxConnFailures != 30 || q.Workload.RPC.QuarantineWindow != Duration(150*sim.Millisecond) {
		t.Fatalf("quarantine: %v %+v", err, q.Workload.RPC)
	}
	fo, _ := builtinFS.ReadFile("builtin/failover.yaml")
	qu, _ := builtinFS.ReadFile("builtin/quarantine.yaml")
	storm, _ := builtinFS.ReadFile("builtin/pfc-storm.yaml")
	for _, c := range []struct {
		src      []byte
		old, new string
		want     string
	}{
		{fo, "{kind: host-crash, at: 5ms, host: 8}", "{kind: meteor, at: 5ms, host: 8}", `faults[0].kind: "meteor" is not a fault kind (allowed: link-down, link-up, link-flap, loss, host-crash, qp-error, pfc-storm)`},
		{fo, "{kind: host-crash, at: 5ms, host: 8}", "{kind: host-crash, host: 8}", "faults[0].at: missing"},
		{fo, "{kind: host-crash, at: 5ms, host: 8}", "{kind: host-crash, at: 5ms, host: 99}", "faults[0].host: 99 is too large (at most 23)"},
		{fo, "{kind: host-crash, at: 5ms, host: 8}", "{kind: host-crash, at: 5ms, host: 8, drop: 1%}", "faults[0].drop: not used by kind host-crash"},
		{fo, "{kind: host-crash, at: 5ms, host: 8}", "{kind: link-flap, at: 5ms, host: 8, duration: 2ms, period: 1ms, count: 2}", "a link-flap needs 0 < duration < period"},
		{fo, "{kind: host-crash, at: 5ms, host: 8}", "{kind: loss, at: 5ms, switch: 1, port: 0, drop: 70%, corrupt: 40%}", "their sum in (0, 100%]"},
		{fo, "{kind: host-crash, at: 5ms, host: 8}", "{kind: link-down, at: 5ms, switch: 1}", "a switch port needs both switch and port"},
		{fo, "{kind: host-crash, at: 5ms, host: 8}", "{kind: link-down, at: 5ms, host: 1, switch: 1, port: 2}", "give a host, or a switch and a port, not both"},
		{fo, "  clients: 2", "  clients: 2\n  fan_out: 3", "workload.fan_out: not used by kind failover"},
		// SCHEMA documents workload.warmup as > 0 (TestSchemaWarmupAgrees).
		{fo, "  clients: 2", "  clients: 2\n  warmup: 0s", "workload.warmup: 0s is not allowed (omit the key for the default, 200us)"},
		{fo, "response: {dist: fixed, size: 16KiB}", "response: {dist: lognormal, mean: 16KiB, p99: 32KiB}", "a failover response is {dist: fixed, size}"},
		{qu, "max_req_failures: 5", "max_req_failures: 0", "workload.rpc.max_req_failures"},
		{qu, "quarantine_window: 150ms", "quarantine_window: 0s", "workload.rpc.quarantine_window: 0s is not allowed"},
		{qu, "probe_interval: 50ms", "probe_intervall: 50ms", "probe_intervall"},
		// A fault that would never fire (at or after the end) is refused,
		// whatever the workload; so are flaps that do not fit.
		{fo, "{kind: host-crash, at: 5ms, host: 8}", "{kind: host-crash, at: 150ms, host: 8}", "faults[0].at: 150ms is not before the end of the run (duration 150ms): the fault would never fire"},
		{fo, "duration: 150ms", "duration: 2ms", "faults[0].at: 5ms is not before the end of the run (duration 2ms)"},
		{storm, "{kind: pfc-storm, at: 10ms, host: 0, prio: 3}", "{kind: pfc-storm, at: 10s, host: 0, prio: 3}", "the fault would never fire"},
		{fo, "{kind: host-crash, at: 5ms, host: 8}", "{kind: link-flap, at: 5ms, host: 8, duration: 1ps, period: 2ps, count: 1000000000}", "faults[0].period: 2ps is too short (at least 1us)"},
		{fo, "{kind: host-crash, at: 5ms, host: 8}", "{kind: link-flap, at: 5ms, host: 8, duration: 1us, period: 2us, count: 1000000000}", "faults[0].count: 1000000000 is too large (at most 10000"},
		{fo, "{kind: host-crash, at: 5ms, host: 8}", "{kind: link-flap, at: 5ms, host: 8, duration: 1ms, period: 50ms, count: 4}", "faults[0].count: 4 flaps every 50ms from 5ms do not fit before the end of the run (duration 150ms): at most 3 would fire"},
		{storm, "{kind: pfc-storm, at: 10ms, host: 0, prio: 3}", "{kind: host-crash, at: 10ms, host: 0}", "host-crash needs hosts with the RPC recovery layer: use workload kind failover"},
		// A loss fault's frames and direction: strict values, loss only.
		{fo, "{kind: host-crash, at: 5ms, host: 8}", "{kind: loss, at: 5ms, host: 8, drop: 1%, frames: acks}", `"acks" is not a loss frame selection (allowed: all, data)`},
		{fo, "{kind: host-crash, at: 5ms, host: 8}", "{kind: loss, at: 5ms, host: 8, drop: 1%, direction: up}", `"up" is not a loss direction (allowed: both, out, in)`},
		{fo, "{kind: host-crash, at: 5ms, host: 8}", "{kind: link-down, at: 5ms, host: 8, frames: data}", "faults[0].frames: not used by kind link-down"},
		{fo, "{kind: host-crash, at: 5ms, host: 8}", "{kind: pfc-storm, at: 5ms, host: 8, direction: in}", "faults[0].direction: not used by kind pfc-storm"},
	} {
		_, err := Parse("f.yaml", []byte(strings.Replace(string(c.src), c.old, c.new, 1)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.new, err, c.want)
		}
	}
}

// TestSchemaWarmupAgrees: SCHEMA.md documents every warmup key as the
// loader checks it: none may say that 0 is allowed, since the loader
// refuses warmup: 0 (the workloads read 0 as "the default").
func TestSchemaWarmupAgrees(t *testing.T) {
	b, err := os.ReadFile("SCHEMA.md")
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "| `warmup` |") && strings.Contains(l, "≥ 0") {
			t.Errorf("SCHEMA.md:%d allows warmup 0, the loader does not: %s", i+1, l)
		}
	}
}

// workload.spines reaches the derived topology of every workload kind.
func TestWorkloadSpines(t *testing.T) {
	for _, kind := range []string{"kind: incast-pull", "kind: ps-cluster\n  rankers: 2"} {
		y := strings.Replace(workloadYAML, "kind: incast-pull", kind+"\n  spines: 6", 1)
		s, err := Parse("w.yaml", []byte(y))
		if err != nil {
			t.Errorf("%s: %v", kind, err)
			continue
		}
		if tp := s.Fabric.Topology; tp.Spines != 6 {
			t.Errorf("%s: topology %+v, want 6 spines", kind, tp)
		}
	}
	data, err := Builtin("failover")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse("failover", []byte(strings.Replace(string(data), "kind: failover", "kind: failover\n  spines: 6", 1)))
	if err != nil || s.Fabric.Topology.Spines != 6 {
		t.Errorf("failover: %v, topology %+v", err, s)
	}
}

// workload.rpc under ps-cluster is a boolean (or a mapping of the RPC
// policy's keys, which turns it on): off when left out or false, on with
// the paper's Tc and Tr when true; refused with transport tcp. Under
// failover it cannot be false.
func TestPSClusterRPCKey(t *testing.T) {
	base := strings.Replace(workloadYAML, "kind: incast-pull", "kind: ps-cluster\n  rankers: 2", 1)
	with := func(extra string) (*Scenario, error) {
		return Parse("w.yaml", []byte(strings.Replace(base, "rankers: 2", "rankers: 2\n  "+extra, 1)))
	}
	s, err := Parse("w.yaml", []byte(base))
	if err != nil || s.Workload.RPCOn() || s.Workload.RPC != nil {
		t.Fatalf("left out: %v, on %v", err, s.Workload.RPCOn())
	}
	for _, c := range []struct {
		yaml string
		on   bool
		tr   Duration
	}{{"rpc: false", false, 0}, {"rpc: true", true, Duration(40 * sim.Millisecond)}, {"rpc: {request_timeout: 5ms}", true, Duration(5 * sim.Millisecond)}} {
		s, err := with(c.yaml)
		if err != nil {
			t.Fatalf("%s: %v", c.yaml, err)
		}
		w := s.Workload
		if w.RPCOn() != c.on || (c.on && (w.RPC.RequestTimeout != c.tr || w.RPC.ConnectTimeout != Duration(10*sim.Millisecond) || w.RPC.MaxAttempts != 3)) {
			t.Errorf("%s: on %v, %+v", c.yaml, w.RPCOn(), *w.RPC)
		}
		// The printed scenario loads back to the same setting.
		b, err := s.YAML()
		if err != nil {
			t.Fatal(err)
		}
		s2, err := Parse("p.yaml", b)
		if err != nil || s2.Workload.RPCOn() != c.on {
			t.Errorf("%s printed and loaded again: %v, on %v", c.yaml, err, s2 != nil && s2.Workload.RPCOn())
		}
	}
	for _, c := range []struct{ yaml, want string }{
		{"rpc: 3", `workload.rpc: "3" is neither a boolean (true, false) nor a mapping of RPC keys`},
		{"rpc: yes please", `workload.rpc: "yes please" is neither a boolean`},
		{"rpc: {speed: 1}", `unknown key "speed"`},
		{"rpc: {request_timeout: 0s}", "workload.rpc.request_timeout"},
		{"rpc: true\n  transport: tcp\n  tcp: {prio: 0}", "workload.rpc: the RPC layer (byteexpress/rpc) runs over ByteExpress: it needs transport rdma (transport is tcp"},
	} {
		if _, err := with(c.yaml); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.yaml, err, c.want)
		}
	}
	if _, err := with("rpc: false\n  transport: tcp"); err != nil && strings.Contains(err.Error(), "workload.rpc") {
		t.Errorf("rpc: false with tcp: %v", err)
	}
	fo, _ := builtinFS.ReadFile("builtin/failover.yaml")
	fo = []byte(strings.Replace(string(fo), "  rpc: {connect_timeout: 10ms, request_timeout: 40ms, retry_prob: 100%, max_attempts: 5}", "  rpc: false", 1))
	if _, err := Parse("f.yaml", fo); err == nil || !strings.Contains(err.Error(), "workload.rpc: false: failover always runs through the RPC layer") {
		t.Errorf("failover rpc: false: %v", err)
	}
}

// workload.replicas under ps-cluster: left out it stays 0 (one replica,
// not filled in, so resolved scenarios that predate it are unchanged);
// 1 to servers with the RPC layer on; more than one without it, fewer
// than one, more than the servers or under another kind is refused with
// the reason.
func TestPSClusterReplicasKey(t *testing.T) {
	base := strings.Replace(workloadYAML, "kind: incast-pull", "kind: ps-cluster\n  rankers: 2", 1)
	with := func(extra string) (*Scenario, error) {
		return Parse("w.yaml", []byte(strings.Replace(base, "rankers: 2", "rankers: 2\n  "+extra, 1)))
	}
	s, err := Parse("w.yaml", []byte(base))
	if err != nil || s.Workload.Replicas != 0 {
		t.Fatalf("left out: %v, replicas %d", err, s.Workload.Replicas)
	}
	if b, _ := s.YAML(); strings.Contains(string(b), "replicas") {
		t.Error("left out: the printed scenario names replicas")
	}
	servers := s.Workload.Servers
	for _, y := range []string{"replicas: 1", "replicas: 2\n  rpc: true", fmt.Sprintf("replicas: %d\n  rpc: {request_timeout: 1ms}", servers)} {
		s, err := with(y)
		if err != nil {
			t.Errorf("%q: %v", y, err)
			continue
		}
		b, _ := s.YAML()
		if s2, err := Parse("p.yaml", b); err != nil || s2.Workload.Replicas != s.Workload.Replicas {
			t.Errorf("%q printed and loaded again: %v", y, err)
		}
	}
	for _, c := range []struct{ yaml, want string }{
		{"replicas: 0", "workload.replicas: 0: allowed 1 to servers"},
		{"replicas: -1\n  rpc: true", "workload.replicas: -1: allowed 1 to servers"},
		{fmt.Sprintf("replicas: %d\n  rpc: true", servers+1), fmt.Sprintf("workload.replicas: %d is more than the %d servers", servers+1, servers)},
		{"replicas: 2", "workload.replicas: 2 needs the RPC layer (rpc: true)"},
		{"replicas: 2\n  rpc: false", "workload.replicas: 2 needs the RPC layer (rpc: true)"},
	} {
		if _, err := with(c.yaml); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.yaml, err, c.want)
		}
	}
	fo, _ := builtinFS.ReadFile("builtin/failover.yaml")
	fo = []byte(strings.Replace(string(fo), "  kind: failover\n", "  kind: failover\n  replicas: 2\n", 1))
	if _, err := Parse("f.yaml", fo); err == nil || !strings.Contains(err.Error(), "workload.replicas: not used by kind failover") {
		t.Errorf("failover replicas: %v", err)
	}
}
