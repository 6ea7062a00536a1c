package role

import (
	"strings"
	"testing"
	"time"

	"github.com/besim/besim/scenarios"
)

// peakScenario is fig9 cut to the point 100G/4096B (the in-memory NICs'
// ports), RC only (fakeverbs has no UD), 64 KiB messages in 16 KiB
// fragments and a 50 ms warm-up.
func peakScenario(t *testing.T) []byte {
	t.Helper()
	data, err := scenarios.Builtin("fig9")
	if err != nil {
		t.Fatal(err)
	}
	small := strings.NewReplacer("    - {rate: 25Gbps, mtu: 1024}\n", "", "    - {rate: 100Gbps, mtu: 1024}\n", "", "    - {rate: 200Gbps, mtu: 4096}\n", "",
		"transports: [rc, ud]", "transports: [rc]", "message: 1MiB", "message: 64KiB", "fragment: 64KiB", "fragment: 16KiB",
		"warmup: 2ms", "warmup: 50ms").Replace(string(data))
	for _, want := range []string{"transports: [rc]", "message: 64KiB", "fragment: 16KiB", "warmup: 50ms"} {
		if !strings.Contains(small, want) || strings.Contains(small, "25Gbps") {
			t.Fatalf("fig9 changed: cannot cut it down (%s)", want)
		}
	}
	return []byte(small)
}

func peakSpecs(scen []byte) []Spec {
	spec := func(id, peer string) Spec {
		s := Spec{ID: id, Role: id, Host: "a", Bind: "127.0.0.1:0", Params: map[string]string{}, Scenario: scen}
		if peer != "" {
			s.Peers = []string{peer}
		} else {
			s.Host = "b"
		}
		return s
	}
	return []Spec{spec("peak-receiver", ""), spec("peak-sender", "peak-receiver"),
		spec("peak-perftest-server", ""), spec("peak-perftest-client", "peak-perftest-server")}
}

// TestPeakRolesOverVerbs replays the cut fig9 on in-memory NICs: the
// ByteExpress series answers every message of its slot and measures a
// goodput, then the RC perftest, started after the ByteExpress slot,
// measures its own at the link's point.
func TestPeakRolesOverVerbs(t *testing.T) {
	useFakeNICs(t)
	out := runAll(t, 700*time.Millisecond, 5*time.Second, peakSpecs(peakScenario(t))...)
	for id, in := range out {
		if in.err != nil {
			t.Errorf("%s: %v", id, in.err)
		}
		t.Logf("%s: %v %v", id, in.res.Metrics, in.res.Notes)
	}
	rx, tx := out["peak-receiver"].res.Metrics, out["peak-sender"].res.Metrics
	if sent, got := tx["requests/16384B"], tx["responses/16384B"]; sent == 0 || sent != got {
		t.Errorf("ByteExpress: %v messages sent, %v answered", sent, got)
	}
	if rx["gbps/16384B"] <= 0 || rx["messages/16384B"] <= 0 || rx["rate_bps"] != 100e9 || rx["path_mtu"] != 4096 {
		t.Errorf("ByteExpress receiver: %v", rx)
	}
	srv := out["peak-perftest-server"].res
	d := perftestDetail(t, srv)
	if d.Match != "100G/4096B" || len(d.Runs) != 1 || d.Runs[0].Gbps <= 0 || d.Runs[0].Message != 65536 || d.Runs[0].Error != "" {
		t.Errorf("perftest detail %+v", d)
	}
	// The perftest part starts where ByteExpress's slot ends, and the two
	// parts fill the run.
	ps := srv.Metrics
	if ps["start_s"] <= 0 || ps["start_s"] != rx["part_s"] || rx["start_s"] != 0 || ps["start_s"]+ps["part_s"] > 0.7+1e-9 {
		t.Errorf("ByteExpress [%v, +%v), perftest [%v, +%v)", rx["start_s"], rx["part_s"], ps["start_s"], ps["part_s"])
	}
	if cli := out["peak-perftest-client"].res.Metrics; cli["rc_sent"] < ps["rc_msgs"] || ps["rc_msgs"] == 0 {
		t.Errorf("RC: client sent %v, server counted %v", cli["rc_sent"], ps["rc_msgs"])
	}
}

// The peak roles check their scenario, peers and duration first.
func TestPeakRoleChecks(t *testing.T) {
	scen := peakScenario(t)
	specs := peakSpecs(scen)
	t2, _ := scenarios.Builtin("table2")
	for _, c := range []struct {
		spec Spec
		want string
	}{
		{func() Spec { s := specs[0]; s.Peers = []string{"x"}; return s }(), "connects to nobody"},
		{func() Spec { s := specs[1]; s.Peers = nil; return s }(), "needs one peer"},
		{func() Spec { s := specs[2]; s.Scenario = t2; return s }(), "no peak benchmark"},
		{func() Spec { s := specs[3]; s.Params = map[string]string{"rate": "25Gbps"}; return s }(), "unknown parameter \"rate\""},
	} {
		if _, err := New(c.spec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.spec.ID, err, c.want)
		}
	}
	r, err := New(specs[0])
	if err != nil {
		t.Fatal(err)
	}
	s := specs[0]
	s.Duration = 100 * time.Millisecond // two series with a 50 ms warm-up each
	if _, err := r.Prepare(t.Context(), s); err == nil || !strings.Contains(err.Error(), "no measured interval") {
		t.Errorf("too short: %v", err)
	}
}
