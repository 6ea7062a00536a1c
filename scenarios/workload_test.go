package scenarios

import (
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
		if tp := s.Fabric.Topology; tp.Kind != LeafSpine || tp.Spines != 1 || tp.HostsPerLeaf != 32 ||
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
	if tp := s.Fabric.Topology; tp.Leaves != 2 || tp.HostsPerLeaf != 32 {
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
	inc := strings.Replace(workloadYAML, "servers: 8", "servers: 8\n  shards: 4", 1)
	if _, err := Parse("w.yaml", []byte(inc)); err == nil || !strings.Contains(err.Error(), "workload.shards: not used by kind incast-pull") {
		t.Errorf("shards under incast-pull: %v", err)
	}
}
