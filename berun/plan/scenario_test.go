package plan

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/besim/besim/scenarios"
)

func TestFromScenario(t *testing.T) {
	scen, err := scenarios.Builtin("ps-cluster") // 16 servers, 4 rankers, 4 trainers
	if err != nil {
		t.Fatal(err)
	}
	hs, err := ParseHosts("hosts.yaml", []byte(`hosts:
  - {name: a, control: "127.0.0.1:7001", data: 127.0.0.1, ps_roles: [server]}
  - {name: b, control: "127.0.0.1:7002", data: 127.0.0.1, ps_roles: [server]}
  - {name: c, control: "127.0.0.1:7003", data: 127.0.0.1, ps_roles: [ranker, trainer]}
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := FromScenario("ps.yaml", scen, hs, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if p.Dur != 2*time.Second || p.Name != "ps-cluster" || string(p.Raw) != string(scen) {
		t.Errorf("plan %s, %v, raw kept %v", p.Name, p.Dur, string(p.Raw) == string(scen))
	}
	per := map[string]map[string]int{}
	for _, r := range p.Roles {
		if per[r.Host] == nil {
			per[r.Host] = map[string]int{}
		}
		per[r.Host][r.Role]++
		if r.Role == "ps-client" && len(r.Peers) != 16 {
			t.Errorf("%s has %d peers", r.ID, len(r.Peers))
		}
	}
	if per["a"]["ps-server"] != 8 || per["b"]["ps-server"] != 8 || per["c"]["ps-client"] != 8 || len(per["c"]) != 1 {
		t.Errorf("placement %v", per)
	}
	as, err := Assign(p, hs)
	if err != nil || len(as) != 3 {
		t.Fatalf("assign: %v (%d hosts)", err, len(as))
	}

	// Without --duration the scenario's own (virtual) 2ms is used.
	if p, err := FromScenario("ps.yaml", scen, hs, 0); err != nil || p.Dur != 2*time.Millisecond {
		t.Errorf("default duration: %v, %v", p, err)
	}
	for _, c := range []struct{ hosts, want string }{
		{`hosts: [{name: a, control: "127.0.0.1:7001", data: 127.0.0.1, ps_roles: [server]}]`, "no host in the hosts file takes them"},
	} {
		hs, err := ParseHosts("h.yaml", []byte(c.hosts))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := FromScenario("ps.yaml", scen, hs, time.Second); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
	if _, err := ParseHosts("h.yaml", []byte(`hosts: [{name: a, control: "127.0.0.1:7001", data: 127.0.0.1, ps_roles: [victim]}]`)); err == nil || !strings.Contains(err.Error(), `"victim" is not one of server, ranker, trainer, worker, client`) {
		t.Errorf("bad ps_roles: %v", err)
	}
	inc, _ := scenarios.Builtin("incast")
	if _, err := FromScenario("incast.yaml", inc, hs, time.Second); err == nil || !strings.Contains(err.Error(), "the flows use scenario hosts 0..17, and scenario host i runs on the hosts file's i-th host; the hosts file has 3") {
		t.Errorf("incast: %v", err)
	}
	if !IsScenario(scen) || IsScenario([]byte(planYAML)) {
		t.Error("IsScenario")
	}
}

// An incast-pull scenario: servers off the workers' host, every worker
// pulling from every server, the victim a tcp-bulk pair from a server host
// into the workers' host, bandwidth flows likewise.
func TestFromIncastScenario(t *testing.T) {
	hs, err := ParseHosts("h.yaml", []byte(`hosts:
  - {name: a, control: "127.0.0.1:7001", data: 127.0.0.1}
  - {name: b, control: "127.0.0.1:7002", data: 127.0.0.2}
  - {name: c, control: "127.0.0.1:7003", data: 127.0.0.3}
`))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := scenarios.Builtin("fig14-incast")
	scen := []byte(strings.Replace(string(data), "servers: 64", "servers: 5\n  bandwidth_flows: 2", 1))
	p, err := FromScenario("fig14.yaml", scen, hs, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Assign(p, hs); err != nil {
		t.Fatal(err)
	}
	got := map[string]RoleEntry{}
	for _, r := range p.Roles {
		got[r.ID] = r
	}
	if len(p.Roles) != 5+1+2+4 {
		t.Errorf("%d roles, want 5 servers, 1 worker, victim and 2 bandwidth pairs: %+v", len(p.Roles), p.Roles)
	}
	for i := range 5 {
		r := got["server"+strconv.Itoa(i)]
		if r.Role != "incast-server" || r.Host == "a" {
			t.Errorf("server%d: %+v (want incast-server off the workers' host a)", i, r)
		}
	}
	if w := got["worker0"]; w.Role != "incast-worker" || w.Host != "a" || len(w.Peers) != 5 {
		t.Errorf("worker0: %+v", w)
	}
	if v, rx := got["victim-tx"], got["victim-rx"]; v.Role != "tcp-bulk" || v.Host == "a" || rx.Host != "a" || v.Params["message_size"] != "65536" {
		t.Errorf("victim: %+v -> %+v", v, rx)
	}
	if b := got["bw1-rx"]; b.Host != "a" || got["bw1-tx"].Peers[0] != "bw1-rx" {
		t.Errorf("bw1: %+v", b)
	}
}

// A perftest benchmark: client on the first host, server on the second,
// each transport's warmup and measured interval in the run's duration.
func TestFromPerftestScenario(t *testing.T) {
	two := `hosts:
  - {name: a, control: "127.0.0.1:7001", data: 127.0.0.1, ps_roles: [server]}
  - {name: b, control: "127.0.0.1:7002", data: 127.0.0.2}
  - {name: c, control: "127.0.0.1:7003", data: 127.0.0.3}
`
	hs, err := ParseHosts("h.yaml", []byte(two))
	if err != nil {
		t.Fatal(err)
	}
	scen, _ := scenarios.Builtin("table2") // rc and ud, warmup 50us, duration 500us
	p, err := FromScenario("table2.yaml", scen, hs, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if p.Dur != 2*(2*time.Second+50*time.Microsecond) || len(p.Roles) != 2 {
		t.Fatalf("plan %v, roles %+v", p.Dur, p.Roles)
	}
	srv, cli := p.Roles[0], p.Roles[1]
	if srv.Role != "perftest-server" || srv.Host != "b" || cli.Role != "perftest-client" || cli.Host != "a" || len(cli.Peers) != 1 || cli.Peers[0] != srv.ID {
		t.Errorf("roles %+v", p.Roles)
	}
	if _, err := Assign(p, hs); err != nil {
		t.Fatal(err)
	}
	if p, err := FromScenario("table2.yaml", scen, hs, 0); err != nil || p.Dur != 2*550*time.Microsecond {
		t.Errorf("default duration: %v, %v", p, err)
	}
	one, _ := ParseHosts("h.yaml", []byte(`hosts: [{name: a, control: "127.0.0.1:7001", data: 127.0.0.1}]`))
	if _, err := FromScenario("table2.yaml", scen, one, time.Second); err == nil || !strings.Contains(err.Error(), "runs between two hosts; the hosts file has 1") {
		t.Errorf("one host: %v", err)
	}
	fig11, _ := scenarios.Builtin("fig11")
	if p, err := FromScenario("fig11.yaml", fig11, hs, time.Second); err != nil || len(p.Roles) != 2 || p.Roles[0].Role != "msgrate-target" || p.Roles[1].Role != "msgrate-sender" ||
		p.Roles[1].Peers[0] != "msgrate-target" || p.Roles[0].Host == p.Roles[1].Host {
		t.Errorf("msgrate benchmark: %+v, %v", p, err)
	}
}

// A hosts file naming a device that is not a plain name is refused before
// any agent is contacted.
func TestHostsDeviceNames(t *testing.T) {
	for _, bad := range []string{`netdevs: ["../../tmp/x"]`, `rdma_devices: ["mlx5/0"]`, `netdevs: [".."]`} {
		_, err := ParseHosts("h.yaml", []byte(`hosts: [{name: a, control: "127.0.0.1:7001", data: 127.0.0.1, `+bad+`}]`))
		if err == nil || !strings.Contains(err.Error(), "plain device name") {
			t.Errorf("%s: %v", bad, err)
		}
	}
	if _, err := ParseHosts("h.yaml", []byte(`hosts: [{name: a, control: "127.0.0.1:7001", data: 127.0.0.1, netdevs: [eth2], rdma_devices: [mlx5_0]}]`)); err != nil {
		t.Errorf("plain names: %v", err)
	}
}

// A failover scenario: eight replica servers (hosts 8..11 and 16..19 of
// the layout), two clients peering with all of them, replica A first; the
// scenario's host crash becomes crash_at on its server and fault_at on
// the clients; what berun cannot cause is refused, saying why.
func TestFromFailoverScenario(t *testing.T) {
	hs, err := ParseHosts("h.yaml", []byte(`hosts:
  - {name: a, control: "127.0.0.1:7001", data: 127.0.0.1, ps_roles: [client]}
  - {name: b, control: "127.0.0.1:7002", data: 127.0.0.2, ps_roles: [server]}
  - {name: c, control: "127.0.0.1:7003", data: 127.0.0.3, ps_roles: [server]}
`))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := scenarios.Builtin("failover")
	p, err := FromScenario("failover.yaml", data, hs, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Assign(p, hs); err != nil {
		t.Fatal(err)
	}
	got := map[string]RoleEntry{}
	for _, r := range p.Roles {
		got[r.ID] = r
	}
	if len(p.Roles) != 10 {
		t.Fatalf("%d roles, want 8 servers and 2 clients: %+v", len(p.Roles), p.Roles)
	}
	s8, c1 := got["server8"], got["client1"]
	if s8.Role != "failover-server" || s8.Params["crash_at"] != "5.2ms" || got["server16"].Params["crash_at"] != "" {
		t.Errorf("server8 %+v, server16 %+v: want crash_at 5.2ms (warmup 200us + at 5ms) on server8 only", s8, got["server16"])
	}
	if c1.Role != "failover-client" || c1.Host != "a" || c1.Params["fault_at"] != "5.2ms" || c1.Params["crashed"] != "8" ||
		len(c1.Peers) != 8 || c1.Peers[0] != "server8" || c1.Peers[4] != "server16" {
		t.Errorf("client1 %+v", c1)
	}
	if s8.Host == "a" || got["server9"].Host == s8.Host {
		t.Errorf("servers on %s and %s: want the server hosts, round-robin", s8.Host, got["server9"].Host)
	}
	for _, c := range []struct{ from, to, want string }{
		{"- {kind: host-crash, at: 5ms, host: 8}", "- {kind: link-down, at: 5ms, host: 8}", "berun can cause a host crash"},
		{"- {kind: host-crash, at: 5ms, host: 8}", "- {kind: host-crash, at: 5ms, host: 8, duration: 10ms}", "does not come back"},
		{"- {kind: host-crash, at: 5ms, host: 8}", "- {kind: host-crash, at: 5ms, host: 0}", "crashes a replica server"},
		{"- {kind: host-crash, at: 5ms, host: 8}", "- {kind: host-crash, at: 5ms, host: 8}\n  - {kind: host-crash, at: 9ms, host: 9}", "one fault"},
		{"keepalive:", "tcp_fallback: true\n  keepalive:", "tcp_fallback"},
	} {
		scen := strings.Replace(string(data), c.from, c.to, 1)
		if scen == string(data) {
			t.Fatalf("failover scenario changed: %q not found", c.from)
		}
		if _, err := FromScenario("failover.yaml", []byte(scen), hs, time.Second); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.to, err, c.want)
		}
	}
	if _, err := FromScenario("failover.yaml", data, hs, 3*time.Millisecond); err == nil || !strings.Contains(err.Error(), "not before the end of the run") {
		t.Errorf("a run ending before the crash: %v", err)
	}
}

// Hosts and plan files are read only if regular, and only up to MaxFile:
// a FIFO or /dev/zero is refused, not read until memory runs out.
func TestLoadRefusesNonRegular(t *testing.T) {
	if _, err := LoadHosts("/dev/zero"); err == nil {
		t.Error("LoadHosts(/dev/zero) read it")
	}
	if _, err := LoadPlan("/dev/zero"); err == nil {
		t.Error("LoadPlan(/dev/zero) read it")
	}
	if _, err := LoadHosts(t.TempDir()); err == nil {
		t.Error("LoadHosts of a folder read it")
	}
}

// A flow scenario: each flow instance a flow-sender on its source host and
// a flow-receiver on its destination (scenario host i = the hosts file's
// i-th), with its start, size and rate; rate: line is unpaced. A
// scenario whose point is a fault is refused with the reason.
func TestFromFlowsScenario(t *testing.T) {
	var y strings.Builder
	y.WriteString("hosts:\n")
	for i := range 18 {
		fmt.Fprintf(&y, "  - {name: h%d, control: \"127.0.0.1:%d\", data: 127.0.0.1}\n", i, 7000+i)
	}
	hs, err := ParseHosts("h.yaml", []byte(y.String()))
	if err != nil {
		t.Fatal(err)
	}
	inc, _ := scenarios.Builtin("incast")
	p, err := FromScenario("incast.yaml", inc, hs, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Roles) != 34 || p.Dur != 2*time.Millisecond {
		t.Fatalf("%d roles, %v; want 17 flows, 2ms", len(p.Roles), p.Dur)
	}
	rx, tx := p.Roles[0], p.Roles[1]
	if rx.Role != "flow-receiver" || rx.Host != "h16" || tx.Role != "flow-sender" || tx.Host != "h0" || tx.Peers[0] != rx.ID ||
		tx.Params["size"] != "262144" || tx.Params["rate"] != "15000000000" || tx.Params["start"] != "100µs" || tx.Params["name"] != "incast.0-16" {
		t.Errorf("first flow: %+v %+v", rx, tx)
	}
	if v := p.Roles[33]; v.Host != "h0" || v.Params["size"] != "0" || v.Params["name"] != "victim" {
		t.Errorf("victim: %+v", v)
	}
	if _, err := Assign(p, hs); err != nil {
		t.Fatal(err)
	}
	lr, _ := scenarios.Builtin("line-rate")
	if p, err := FromScenario("line-rate.yaml", lr, hs, time.Second); err != nil {
		t.Error(err)
	} else if p.Roles[1].Params["rate"] != "0" {
		t.Errorf("rate: line: %+v", p.Roles[1])
	}
	storm, _ := scenarios.Builtin("pfc-storm")
	if _, err := FromScenario("pfc-storm.yaml", storm, hs, time.Second); err == nil || !strings.Contains(err.Error(), "kind pfc-storm: the point of this flow scenario is a fault") {
		t.Errorf("pfc-storm: %v", err)
	}
}

// A ps-cluster with the RPC layer on and replicas is planned like one
// without (the ps roles run the layer): every client has every server as
// a peer, in server order, which is how its RPC layer numbers them for
// ps.ReplicaSet.
func TestFromPSScenarioRPC(t *testing.T) {
	hs, err := ParseHosts("h.yaml", []byte(`hosts: [{name: a, control: "127.0.0.1:7001", data: 127.0.0.1}, {name: b, control: "127.0.0.1:7002", data: 127.0.0.2}]`))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := scenarios.Builtin("ps-cluster")
	for _, add := range []string{"  rpc: {connect_timeout: 10ms, request_timeout: 40ms}\n", "  rpc: true\n  replicas: 2\n"} {
		scen := strings.Replace(string(data), "  window: 16KiB\n", "  window: 16KiB\n"+add, 1)
		if !strings.Contains(scen, "rpc: ") {
			t.Fatal("ps-cluster changed: cannot turn rpc on")
		}
		p, err := FromScenario("ps.yaml", []byte(scen), hs, time.Second)
		if err != nil {
			t.Fatalf("%q: %v", add, err)
		}
		var servers []string
		clients := 0
		for _, r := range p.Roles {
			if r.Role == "ps-server" {
				if r.Params["index"] != strconv.Itoa(len(servers)) {
					t.Errorf("%s has index %s, want %d", r.ID, r.Params["index"], len(servers))
				}
				servers = append(servers, r.ID)
			}
		}
		for _, r := range p.Roles {
			if r.Role != "ps-client" {
				continue
			}
			clients++
			if !slices.Equal(r.Peers, servers) {
				t.Errorf("%s: peers %v, want the servers in order %v", r.ID, r.Peers, servers)
			}
		}
		if len(servers) != 16 || clients != 8 {
			t.Errorf("%q: %d servers, %d clients; want 16 and 8", add, len(servers), clients)
		}
	}
}
