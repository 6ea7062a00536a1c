package role

import (
	"github.com/besim/besim/units"
	"strings"
	"testing"
	"time"

	"github.com/besim/besim/scenarios"
)

// fragsizeSpecs are the roles of fig10 cut to two fragment sizes and
// 64 KiB messages, with a warm-up of warm.
func fragsizeSpecs(t *testing.T, warm string) []Spec {
	t.Helper()
	data, err := scenarios.Builtin("fig10")
	if err != nil {
		t.Fatal(err)
	}
	small := strings.NewReplacer("fragments: [512, 1KiB, 2KiB, 4KiB, 8KiB, 16KiB, 32KiB, 64KiB]", "fragments: [4KiB, 16KiB]",
		"message: 1MiB", "message: 64KiB", "warmup: 6.7108864ms", "warmup: "+warm).Replace(string(data))
	if !strings.Contains(small, "fragments: [4KiB, 16KiB]") || !strings.Contains(small, "message: 64KiB") {
		t.Fatal("fig10 changed: cannot cut it down")
	}
	return []Spec{
		{ID: "fragsize-receiver", Role: "fragsize-receiver", Bind: "127.0.0.1:0", From: []string{"fragsize-sender"}, Params: map[string]string{}, Scenario: []byte(small)},
		{ID: "fragsize-sender", Role: "fragsize-sender", Bind: "127.0.0.1:0", Peers: []string{"fragsize-receiver"}, Params: map[string]string{}, Scenario: []byte(small)},
	}
}

// Over verbs (an in-memory NIC, verbs/fakeverbs): each fragment size runs
// on its own endpoint in its slot, every message sent is answered, and
// the receiver measures goodput in each point's interval.
func TestFragsizeRolesOverVerbs(t *testing.T) {
	useFakeNICs(t)
	// 1 s per fragment size: one slot of 0.6 s once lost its answers on a
	// loaded 2-core machine (1 run in 19).
	out := runAll(t, 2*time.Second, 5*time.Second, fragsizeSpecs(t, "100ms")...)
	rx, tx := out["fragsize-receiver"], out["fragsize-sender"]
	for id, in := range out {
		if in.err != nil {
			t.Errorf("%s: %v", id, in.err)
		}
		t.Logf("%s: %v", id, in.res.Metrics)
	}
	for _, k := range []string{"4096B", "16384B"} {
		sent, got := tx.res.Metrics["requests/"+k], tx.res.Metrics["responses/"+k]
		if sent == 0 || got != sent {
			t.Errorf("%s: %v messages sent, %v answered", k, sent, got)
		}
		if rx.res.Metrics["gbps/"+k] <= 0 || rx.res.Metrics["messages/"+k] <= 0 {
			t.Errorf("%s: the receiver measured %v Gb/s, %v messages", k, rx.res.Metrics["gbps/"+k], rx.res.Metrics["messages/"+k])
		}
	}
	// fakeverbs ports report 100 Gb/s, one of fig10's rates.
	if rx.res.Metrics["rate_bps"] != float64(100*units.Gbps) || len(rx.res.Notes) != 0 {
		t.Errorf("rate %v (notes %v), want the port's, 100 Gb/s", rx.res.Metrics["rate_bps"], rx.res.Notes)
	}
}

// The roles refuse what they cannot run: a run too short for the warm-up,
// a scenario without a fragsize benchmark, a sender without its receiver.
func TestFragsizeRoleErrors(t *testing.T) {
	specs := fragsizeSpecs(t, "100ms")
	s := specs[1]
	s.Peers = nil
	if _, err := New(s); err == nil || !strings.Contains(err.Error(), "needs one peer") {
		t.Errorf("sender without peer: %v", err)
	}
	s = specs[0]
	s.Params = map[string]string{"rate": "fast"}
	if _, err := New(s); err == nil || !strings.Contains(err.Error(), "rate") {
		t.Errorf("rate=fast: %v", err)
	}
	s.Params = map[string]string{"rate": "40Gbps"}
	r, err := New(s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Prepare(t.Context(), s); err == nil || !strings.Contains(err.Error(), "no measured interval") {
		t.Errorf("no duration: %v", err)
	}
	if fr := r.(*fragsizeRole); fr.rate != 40*units.Gbps {
		t.Errorf("rate=40Gbps: %v", fr.rate)
	}
	s.Params = map[string]string{}
	s.Scenario, _ = scenarios.Builtin("table2")
	if _, err := New(s); err == nil || !strings.Contains(err.Error(), "no fragsize benchmark") {
		t.Errorf("table2: %v", err)
	}
	s = specs[0]
	s.Duration = 150 * time.Millisecond // two slots of 75 ms, shorter than the warm-up
	r, err = New(s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Prepare(t.Context(), s); err == nil || !strings.Contains(err.Error(), "no measured interval") {
		t.Errorf("too short: %v", err)
	}
}
