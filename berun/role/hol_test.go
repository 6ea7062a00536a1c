package role

import (
	"strings"
	"testing"
	"time"

	"github.com/besim/besim/scenarios"
)

// holSpecs are the roles of fig13 cut to 0 and 2 large flows of 64 KiB
// messages with 4 KiB fragments, a small message every 200 us, and a
// warm-up of 100 ms.
func holSpecs(t *testing.T) []Spec {
	t.Helper()
	data, err := scenarios.Builtin("fig13")
	if err != nil {
		t.Fatal(err)
	}
	small := strings.NewReplacer("large_flows: [0, 1, 2, 4, 8]", "large_flows: [0, 2]",
		"large_message: 1MiB", "large_message: 64KiB", "interval: 20us", "interval: 200us", "warmup: 2ms", "warmup: 100ms").Replace(string(data))
	for _, want := range []string{"large_flows: [0, 2]", "large_message: 64KiB", "interval: 200us", "warmup: 100ms"} {
		if !strings.Contains(small, want) {
			t.Fatalf("fig13 changed: cannot cut it down (%s)", want)
		}
	}
	return []Spec{
		{ID: "hol-receiver", Role: "hol-receiver", Bind: "127.0.0.1:0", From: []string{"hol-sender"}, Params: map[string]string{}, Scenario: []byte(small)},
		{ID: "hol-sender", Role: "hol-sender", Bind: "127.0.0.1:0", Peers: []string{"hol-receiver"}, Params: map[string]string{}, Scenario: []byte(small)},
	}
}

// Over verbs (an in-memory NIC, verbs/fakeverbs): each point runs on its
// own endpoint in its slot, every large message is answered, and the
// receiver records the small flow's latency in every point and the large
// flows' goodput where there are large flows.
func TestHolRolesOverVerbs(t *testing.T) {
	useFakeNICs(t)
	out := runAll(t, 4*time.Second, 5*time.Second, holSpecs(t)...)
	rx, tx := out["hol-receiver"], out["hol-sender"]
	for id, in := range out {
		if in.err != nil {
			t.Errorf("%s: %v", id, in.err)
		}
		t.Logf("%s: %v", id, in.res.Metrics)
	}
	for _, k := range []string{"0/fragmented", "0/whole", "2/fragmented", "2/whole"} {
		if tx.res.Metrics["small_sent/"+k] <= 0 || rx.res.Metrics["samples/"+k] <= 0 || rx.res.Metrics["mean_us/"+k] <= 0 {
			t.Errorf("%s: %v small messages sent, %v latency samples, mean %v us", k, tx.res.Metrics["small_sent/"+k], rx.res.Metrics["samples/"+k], rx.res.Metrics["mean_us/"+k])
		}
		sent, got := tx.res.Metrics["requests/"+k], tx.res.Metrics["responses/"+k]
		if got != sent {
			t.Errorf("%s: %v large messages sent, %v answered", k, sent, got)
		}
		if strings.HasPrefix(k, "2/") && (sent == 0 || rx.res.Metrics["large_gbps/"+k] <= 0) {
			t.Errorf("%s: %v large messages sent, %v Gb/s received", k, sent, rx.res.Metrics["large_gbps/"+k])
		}
		if strings.HasPrefix(k, "0/") && (sent != 0 || rx.res.Metrics["large_messages/"+k] != 0) {
			t.Errorf("%s: no large flow, yet %v sent and %v received", k, sent, rx.res.Metrics["large_messages/"+k])
		}
	}
}

// The roles refuse what they cannot run: a run too short for the warm-up,
// a scenario without a hol benchmark, a sender without its receiver.
func TestHolRoleErrors(t *testing.T) {
	specs := holSpecs(t)
	s := specs[1]
	s.Peers = nil
	if _, err := New(s); err == nil || !strings.Contains(err.Error(), "needs one peer") {
		t.Errorf("sender without peer: %v", err)
	}
	s = specs[0]
	s.Scenario, _ = scenarios.Builtin("fig10")
	if _, err := New(s); err == nil || !strings.Contains(err.Error(), "no hol benchmark") {
		t.Errorf("fig10: %v", err)
	}
	s = specs[0]
	s.Duration = 400 * time.Millisecond // four slots of 100 ms, no longer than the warm-up
	r, err := New(s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Prepare(t.Context(), s); err == nil || !strings.Contains(err.Error(), "no measured interval") {
		t.Errorf("too short: %v", err)
	}
}
