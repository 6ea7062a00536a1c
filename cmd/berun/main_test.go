package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/besim/besim/berun/plan"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/verbs/ibv"
)

func runCmd(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestHelp(t *testing.T) {
	for _, c := range []struct {
		args  []string
		words string
	}{
		{[]string{"--help"}, "Commands:"},
		{[]string{"agent", "--help"}, "--listen"},
		{[]string{"run", "--help"}, "HOSTS.yaml"},
		{[]string{"selftest", "--help"}, "--device"},
		{[]string{"roles", "--help"}, "Lists the roles"},
	} {
		code, out, errs := runCmd(c.args...)
		if code != 0 || !strings.Contains(out+errs, c.words) {
			t.Errorf("%v: exit %d, output %q", c.args, code, out+errs)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "p.yaml")
	os.WriteFile(plan, []byte("name: x\nduration: 1s\nroles: [{id: a, role: tcp-bulk, host: nohost, params: {mode: sink}}]\n"), 0o644)
	hosts := filepath.Join(dir, "h.yaml")
	os.WriteFile(hosts, []byte("hosts: [{name: h1, control: '127.0.0.1:1', data: 127.0.0.1}]\n"), 0o644)
	t.Setenv("BERUN_TOKEN", "")
	os.Unsetenv("BERUN_TOKEN")
	for _, c := range []struct {
		args  []string
		code  int
		words string
	}{
		{nil, 2, "Commands:"},
		{[]string{"frobnicate"}, 2, "unknown command"},
		{[]string{"agent"}, 2, "--listen ADDR is required"},
		{[]string{"agent", "--listen", "127.0.0.1:0"}, 1, "no token"},
		{[]string{"run", plan}, 2, "--hosts"},
		{[]string{"run", plan, "--hosts", hosts}, 2, `host "nohost" is not in the hosts file`},
	} {
		code, out, errs := runCmd(c.args...)
		if code != c.code || !strings.Contains(out+errs, c.words) {
			t.Errorf("%v: exit %d (want %d), output %q (want %q)", c.args, code, c.code, out+errs, c.words)
		}
	}
	t.Setenv("BERUN_TOKEN", "0123456789abcdef0123")
	if code, _, errs := runCmd("agent", "--listen", "0.0.0.0:0"); code != 1 || !strings.Contains(errs, "binds every interface") {
		t.Errorf("wildcard listen: %d %q", code, errs)
	}
}

// TestSelftestWithoutDevice: without the rdma tag, or without a device,
// selftest says so and exits non-zero.
func TestSelftestWithoutDevice(t *testing.T) {
	if devs, err := ibv.Devices(); err == nil && len(devs) > 0 {
		t.Skipf("RDMA devices present (%v): the hardware path is exercised by running berun selftest", devs)
	}
	code, _, errs := runCmd("selftest")
	if code == 0 {
		t.Fatalf("selftest without a device exited 0: %q", errs)
	}
	if !strings.Contains(errs, "built without rdma support") && !strings.Contains(errs, "no RDMA device found") {
		t.Fatalf("unclear message: %q", errs)
	}
	t.Log(strings.TrimSpace(errs))
}

// --transport verbs puts every ps role on the ByteExpress core over the
// host's RDMA device (param transport); a role plan refuses the flag.
func TestLoadPlanTransport(t *testing.T) {
	hs, err := plan.ParseHosts("hosts.yaml", []byte(`hosts: [{name: a, control: "127.0.0.1:7001", data: 127.0.0.1}]`))
	if err != nil {
		t.Fatal(err)
	}
	f := t.TempDir() + "/ps.yaml"
	data, _ := scenarios.Builtin("ps-cluster")
	if err := os.WriteFile(f, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tr := range []string{"tcp", "verbs"} {
		p, err := loadPlan(f, hs, time.Second, tr)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Roles {
			if got := r.Params["transport"]; (tr == "verbs") != (got == "verbs") {
				t.Errorf("--transport %s: role %s has transport %q", tr, r.ID, got)
			}
		}
	}
	if _, err := loadPlan(f, hs, time.Second, "udp"); err == nil {
		t.Error("--transport udp accepted")
	}
	// With workload.rpc the ps roles need verbs: tcp is refused, naming
	// the flag to use.
	rpcf := t.TempDir() + "/ps-rpc.yaml"
	if err := os.WriteFile(rpcf, []byte(strings.Replace(string(data), "  window: 16KiB\n", "  window: 16KiB\n  rpc: true\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadPlan(rpcf, hs, time.Second, "tcp"); err == nil || !strings.Contains(err.Error(), "--transport verbs") {
		t.Errorf("rpc over tcp: %v", err)
	}
	if _, err := loadPlan(rpcf, hs, time.Second, "verbs"); err != nil {
		t.Errorf("rpc over verbs: %v", err)
	}
	// A pingpong benchmark's roles likewise (two hosts).
	two, err := plan.ParseHosts("hosts.yaml", []byte("hosts: [{name: a, control: \"127.0.0.1:7001\", data: 127.0.0.1}, {name: b, control: \"127.0.0.1:7002\", data: 127.0.0.1}]"))
	if err != nil {
		t.Fatal(err)
	}
	f = t.TempDir() + "/fig8.yaml"
	data, _ = scenarios.Builtin("fig8")
	if err := os.WriteFile(f, data, 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := loadPlan(f, two, 10*time.Millisecond, "verbs")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range p.Roles {
		if r.Params["transport"] != "verbs" {
			t.Errorf("fig8 --transport verbs: role %s has transport %q", r.ID, r.Params["transport"])
		}
	}
}

// A perftest benchmark is verbs only: an explicit --transport tcp is
// refused with the reason, before any agent is contacted; without the
// flag the plan has the two perftest roles.
func TestPerftestTransport(t *testing.T) {
	dir := t.TempDir()
	hosts := filepath.Join(dir, "hosts.yaml")
	if err := os.WriteFile(hosts, []byte("hosts:\n  - {name: a, control: \"127.0.0.1:7001\", data: 127.0.0.1}\n  - {name: b, control: \"127.0.0.1:7002\", data: 127.0.0.1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "table2.yaml")
	data, _ := scenarios.Builtin("table2")
	if err := os.WriteFile(f, data, 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCmd("run", f, "--hosts", hosts, "--transport", "tcp")
	if code != 2 || !strings.Contains(errs, "always runs over verbs") {
		t.Errorf("--transport tcp: exit %d, %q", code, errs)
	}
	hs, err := plan.LoadHosts(hosts)
	if err != nil {
		t.Fatal(err)
	}
	p, err := loadPlan(f, hs, time.Second, "tcp")
	if err != nil || perftestTransport(p, "tcp", false) != nil || perftestTransport(p, "verbs", true) != nil {
		t.Fatalf("plan without the flag: %v", err)
	}
	if len(p.Roles) != 2 || p.Roles[0].Role != "perftest-server" || p.Roles[1].Role != "perftest-client" {
		t.Errorf("roles %+v", p.Roles)
	}
	// The fragsize, msgrate (through the NIC and the core), hol, peak and
	// mrcache benchmarks likewise.
	for _, name := range []string{"fig9", "fig10", "fig11", "fig11-core", "fig13", "mr-cache"} {
		f := filepath.Join(dir, name+".yaml")
		data, _ := scenarios.Builtin(name)
		if err := os.WriteFile(f, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if code, _, errs := runCmd("run", f, "--hosts", hosts, "--transport", "tcp"); code != 2 || !strings.Contains(errs, "always runs over verbs") {
			t.Errorf("%s --transport tcp: exit %d, %q", name, code, errs)
		}
	}
}

// TestUnboundedInputsRefused: a plan, scenario or hosts file that is not a
// regular file (/dev/zero, a FIFO) is refused before it is read.
func TestUnboundedInputsRefused(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	if _, err := loadPlan("/dev/zero", nil, 0, "tcp"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("plan /dev/zero: %v", err)
	}
	if _, err := loadHosts("/dev/zero"); err == nil || !strings.Contains(err.Error(), "hosts file must be a regular file") {
		t.Errorf("hosts /dev/zero: %v", err)
	}
}

// TestRunChecksOutFirst: --out naming a file (or an unwritable place) is
// refused before any host is contacted, not after the run.
func TestRunChecksOutFirst(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "p.yaml")
	os.WriteFile(plan, []byte("name: x\nduration: 1s\nroles: [{id: a, role: tcp-bulk, host: h1, params: {mode: sink}}]\n"), 0o644)
	hosts := filepath.Join(dir, "h.yaml")
	os.WriteFile(hosts, []byte("hosts: [{name: h1, control: '127.0.0.1:1', data: 127.0.0.1}]\n"), 0o644)
	file := filepath.Join(dir, "result.json")
	os.WriteFile(file, []byte("{}"), 0o644)
	t.Setenv("BERUN_TOKEN", "0123456789abcdef0123")
	code, out, errs := runCmd("run", plan, "--hosts", hosts, "--out", file, "--quiet")
	if code != 2 || !strings.Contains(errs, "is a file, not a folder") || strings.Contains(out+errs, "127.0.0.1:1") {
		t.Errorf("--out FILE: exit %d, output %q", code, out+errs)
	}
}

// --search and --until go together, are parsed as besim parses them, and
// both ends of the range must map onto the hosts before any run.
func TestSearchFlags(t *testing.T) {
	dir := t.TempDir()
	hosts := filepath.Join(dir, "hosts.yaml")
	if err := os.WriteFile(hosts, []byte("hosts:\n  - {name: a, control: \"127.0.0.1:7001\", data: 127.0.0.1}\n  - {name: b, control: \"127.0.0.1:7002\", data: 127.0.0.1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "fig14.yaml")
	data, _ := scenarios.Builtin("fig14-incast")
	if err := os.WriteFile(f, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--search", "workload.servers=2..10"}, "--search and --until go together"},
		{[]string{"--search", "workload.servers=2..10", "--until", "pfc/frames_tx"}, "want METRIC OP NUMBER"},
		{[]string{"--search", "workload.servers=ten", "--until", "pfc/frames_tx>0"}, "workload.servers"},
		{[]string{"--search", "workload.nonsense=1..2", "--until", "pfc/frames_tx>0"}, "nonsense"},
	} {
		code, _, errs := runCmd(append([]string{"run", f, "--hosts", hosts}, c.args...)...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, errs, c.want)
		}
	}
}
