package plan

import (
	"strings"
	"testing"
)

const hostsYAML = `hosts:
  - {name: h1, control: "127.0.0.1:7001", data: 127.0.0.1}
  - {name: h2, control: "127.0.0.1:7002", data: "127.0.0.1:9000", netdevs: [lo]}
  - {name: h3, control: "127.0.0.1:7003", data: 127.0.0.1}
`

const planYAML = `name: smoke
duration: 1500ms
roles:
  - {id: sink, role: tcp-bulk, host: h2, params: {mode: sink}}
  - {id: send, role: tcp-bulk, host: h1, peers: [sink], params: {mode: send, connections: 2}}
  - {id: srv, role: tcp-echo, host: h2, params: {mode: server}}
  - {id: cli, role: tcp-echo, host: h3, peers: [srv], params: {mode: client, outstanding: 4}}
`

func TestAssign(t *testing.T) {
	hs, err := ParseHosts("hosts.yaml", []byte(hostsYAML))
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePlan("plan.yaml", []byte(planYAML))
	if err != nil {
		t.Fatal(err)
	}
	if p.Dur.Milliseconds() != 1500 || p.GraceDur != DefaultGrace || !p.ReadCounters() {
		t.Fatalf("plan %+v", p)
	}
	as, err := Assign(p, hs)
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 3 || as[1].Host.Name != "h2" || len(as[1].Roles) != 2 {
		t.Fatalf("assignments %+v", as)
	}
	sink, srv := as[1].Roles[0], as[1].Roles[1]
	if sink.Bind != "127.0.0.1:9000" || srv.Bind != "127.0.0.1:9001" || sink.From[0] != "send" || srv.From[0] != "cli" {
		t.Fatalf("h2 roles %+v", as[1].Roles)
	}
	if as[0].Roles[0].Bind != "127.0.0.1:0" || as[0].Roles[0].Params["connections"] != "2" {
		t.Fatalf("h1 roles %+v", as[0].Roles)
	}
}

func TestErrors(t *testing.T) {
	hs, _ := ParseHosts("hosts.yaml", []byte(hostsYAML))
	for _, c := range []struct{ in, words string }{
		{"name: x\nduration: 1s\nroles: []\nextra: 1\n", "field extra not found"},
		{"name: x\nduration: 0s\nroles: [{id: a, role: tcp-bulk, host: h1}]\n", "duration"},
		{"name: x\nduration: 1s\n", "no roles"},
		{"name: x\nduration: 1s\nfabric: {}\nflows: []\n", "is a besim scenario"},
	} {
		if _, err := ParsePlan("p.yaml", []byte(c.in)); err == nil || !strings.Contains(err.Error(), c.words) {
			t.Errorf("%q: %v, want %q", c.in, err, c.words)
		}
	}
	for _, c := range []struct{ roles, words string }{
		{"[{id: a, role: tcp-bulk, host: h9, params: {mode: sink}}]", `host "h9" is not in the hosts file`},
		{"[{id: a, role: tcp-bulk, host: h1, peers: [b], params: {mode: send}}]", `peer "b" is not a role id`},
		{"[{id: a, role: tcp-bulk, host: h1, peers: [a], params: {mode: send}}]", "itself"},
		{"[{id: a, role: tcp-bulk, host: h1, params: {mode: sink}}, {id: a, role: tcp-bulk, host: h1, params: {mode: sink}}]", "used twice"},
		{"[{id: a, role: tcp-blk, host: h1}]", `role "tcp-blk" is not known`},
		{"[{id: a, role: tcp-bulk, host: h1, params: {mode: sink, size: 3}}]", `unknown parameter "size"`},
	} {
		p, err := ParsePlan("p.yaml", []byte("name: x\nduration: 1s\nroles: "+c.roles+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Assign(p, hs); err == nil || !strings.Contains(err.Error(), c.words) {
			t.Errorf("%s: %v, want %q", c.roles, err, c.words)
		}
	}
	for _, c := range []struct{ in, words string }{
		{"hosts: []\n", "no hosts"},
		{"hosts: [{name: a, control: 'x', data: 127.0.0.1}]\n", "control"},
		{"hosts: [{name: a, control: '127.0.0.1:0', data: 127.0.0.1}]\n", "port 0"},
		{"hosts: [{name: a, control: '127.0.0.1:1', data: example.com}]\n", "want an IP"},
		{"hosts: [{name: a, control: '127.0.0.1:1', data: 0.0.0.0}]\n", "unicast"},
		{"hosts: [{name: a, control: '127.0.0.1:1', data: 127.0.0.1}, {name: a, control: '127.0.0.1:2', data: 127.0.0.1}]\n", "twice"},
		{"hosts: [{name: a, control: '127.0.0.1:1', data: 127.0.0.1, nic: x}]\n", "field nic not found"},
	} {
		if _, err := ParseHosts("h.yaml", []byte(c.in)); err == nil || !strings.Contains(err.Error(), c.words) {
			t.Errorf("%q: %v, want %q", c.in, err, c.words)
		}
	}
}
