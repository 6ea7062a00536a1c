package role

import (
	"strings"
	"testing"
	"time"
)

// Three flows over loopback TCP: one of a fixed size paced at 200 Mb/s
// that starts late, one unpaced of a fixed size, one that runs until the
// end. Every byte sent is counted by its receiver and acknowledged; the
// sized flows complete, with a completion time no shorter than their
// size at their rate allows.
func TestFlowRoles(t *testing.T) {
	pair := func(id string, p map[string]string) []Spec {
		rx := map[string]string{"name": id}
		p["name"] = id
		return []Spec{
			{ID: id + "-rx", Role: "flow-receiver", Bind: "127.0.0.1:0", From: []string{id + "-tx"}, Params: rx},
			{ID: id + "-tx", Role: "flow-sender", Bind: "127.0.0.1:0", Peers: []string{id + "-rx"}, Params: p},
		}
	}
	var specs []Spec
	specs = append(specs, pair("paced", map[string]string{"start": "200ms", "size": "2MiB", "rate": "200000000", "message": "16KiB"})...)
	specs = append(specs, pair("fast", map[string]string{"size": "8MiB"})...)
	specs = append(specs, pair("long", map[string]string{"rate": "100000000"})...)
	out := runAll(t, time.Second, 5*time.Second, specs...)
	for id, in := range out {
		if in.err != nil {
			t.Errorf("%s: %v", id, in.err)
		}
		t.Logf("%s: %v", id, in.res.Metrics)
	}
	for _, id := range []string{"paced", "fast", "long"} {
		tx, rx := out[id+"-tx"].res.Metrics, out[id+"-rx"].res.Metrics
		if tx["bytes"] <= 0 || tx["bytes"] != rx["bytes"] || tx["acked_bytes"] != tx["bytes"] || tx["completed"] != 1 {
			t.Errorf("%s: sent %v, acknowledged %v, received %v, completed %v", id, tx["bytes"], tx["acked_bytes"], rx["bytes"], tx["completed"])
		}
		if rx["goodput_gbps"] <= 0 {
			t.Errorf("%s: goodput %v", id, rx["goodput_gbps"])
		}
	}
	if b := out["paced-tx"].res.Metrics["bytes"]; b != 2<<20 {
		t.Errorf("paced flow sent %v bytes, want 2 MiB", b)
	}
	// 2 MiB at 200 Mb/s takes 84 ms; the pacing cannot be beaten.
	if fct := out["paced-tx"].res.Metrics["fct_s"]; fct < 0.08 {
		t.Errorf("paced flow completed in %v s, faster than its rate", fct)
	}
	if first := out["paced-rx"].res.Metrics["first_s"]; first < 0.2 {
		t.Errorf("paced flow's first byte at %v s, before its start at 0.2 s", first)
	}
}

// The roles refuse a flow without a name, a bad rate, a sender without its
// receiver, and a start after the run's end.
func TestFlowRoleErrors(t *testing.T) {
	for _, c := range []struct {
		spec Spec
		want string
	}{
		{Spec{ID: "a", Role: "flow-receiver", Params: map[string]string{}}, "name"},
		{Spec{ID: "a", Role: "flow-sender", Peers: []string{"b"}, Params: map[string]string{"name": "f", "rate": "fast"}}, "parameter rate"},
		{Spec{ID: "a", Role: "flow-sender", Params: map[string]string{"name": "f"}}, "needs one peer"},
	} {
		if _, err := New(c.spec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.spec, err, c.want)
		}
	}
	s := Spec{ID: "a", Role: "flow-sender", Peers: []string{"b"}, Params: map[string]string{"name": "f", "start": "2s"}, Duration: time.Second}
	r, err := New(s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Prepare(t.Context(), s); err == nil || !strings.Contains(err.Error(), "not before the run's end") {
		t.Errorf("start after the end: %v", err)
	}
}
