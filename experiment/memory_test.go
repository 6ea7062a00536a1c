package experiment

import (
	"regexp"
	"strings"
	"testing"

	"github.com/besim/besim/scenarios"
)

func loadWith(t *testing.T, name, old, new string) *scenarios.Scenario {
	t.Helper()
	src, err := scenarios.Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	if old != "" {
		text = regexp.MustCompile(`(?m)^  `+old+`$`).ReplaceAllString(text, "  "+new)
	}
	s, err := scenarios.Parse(name+".yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestMemoryEstimate: the documented maxima that cannot fit are refused
// by Build with the estimate, its largest term and the limit; what fits
// is built.
func TestMemoryEstimate(t *testing.T) {
	defer SetMemoryLimit(MemoryLimit())
	big := loadWith(t, "fig14-incast", `servers: \d+`, "servers: 8192")
	m := EstimateMemory(big)
	if m.Bytes < 8<<30 || !strings.HasPrefix(m.Terms[0].What, "engines: 2 x 8192 connections x 512 KiB") {
		t.Errorf("8192-server incast: %s", m)
	}
	ps := loadWith(t, "ps-cluster", `servers: \d+`, "servers: 1024")
	ps.Workload.Rankers = 1024
	if m := EstimateMemory(ps); m.Bytes < 1<<40 {
		t.Errorf("1024 x 1024 ps-cluster: %s", m)
	}
	SetMemoryLimit(4 << 30)
	_, err := Build(big)
	if err == nil || !strings.Contains(err.Error(), "workload: the run needs about 8.") ||
		!strings.Contains(err.Error(), "largest: engines: 2 x 8192 connections") ||
		!strings.Contains(err.Error(), "more than the memory limit of 4 GiB") {
		t.Errorf("over the limit: %v", err)
	}
	if _, err := Build(loadWith(t, "fig14-incast", "", "")); err != nil {
		t.Errorf("within the limit: %v", err)
	}
	SetMemoryLimit(0) // no limit
	if _, err := Build(big); err != nil {
		t.Errorf("no limit: %v", err)
	}
	if v, err := ParseMemoryLimit("8GiB"); err != nil || v != 8<<30 {
		t.Errorf("parse: %v %v", v, err)
	}
}

// TestMemoryEstimateCoreMsgrate: msgrate through the core counts the
// largest point's engines on both hosts; the NIC microbenchmark does not.
func TestMemoryEstimateCoreMsgrate(t *testing.T) {
	core := loadWith(t, "fig11-core", `qps: .*`, "qps: [8, 4096]")
	if m := EstimateMemory(core); m.Bytes < 4<<30 || !strings.HasPrefix(m.Terms[0].What, "engines: 2 x 4096 QPs x 512 KiB") {
		t.Errorf("fig11-core at 4096 QPs: %s", m)
	}
	nic := loadWith(t, "fig11", "", "")
	if m := EstimateMemory(nic); m.Bytes != memBase {
		t.Errorf("fig11: %s", m)
	}
}
