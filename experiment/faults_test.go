package experiment_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/besim/besim/experiment"
	"github.com/besim/besim/scenarios"
)

// TestLossFramesAndDirection: an RC flow from host 0 to host 1 under a 2%
// loss fault on host 0's link. Host 0 sends only data and receives only
// ACKs, so: data frames in the direction it receives lose nothing; every
// frame in that direction loses ACKs only (no retransmission is needed for
// most); data frames out of it lose data, which is retransmitted; and data
// frames both ways is exactly data frames out (the other direction's
// stream is never drawn from).
func TestLossFramesAndDirection(t *testing.T) {
	run := func(keys string) map[string]float64 {
		t.Helper()
		src := `name: l
duration: 2ms
fabric: {topology: {kind: star, hosts: 2}}
hosts: {nic: rnic}
flows: [{src: 0, dst: 1, size: 1MB}]
faults: [{kind: loss, at: 0s, host: 0, drop: 2%` + keys + `}]
`
		s, err := scenarios.Parse("l.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		x, err := experiment.Build(s)
		if err != nil {
			t.Fatal(err)
		}
		r, err := x.Run()
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]float64{}
		for _, v := range r.Metrics {
			if strings.HasPrefix(v.Name, "faults/") || strings.HasPrefix(v.Name, "nic/") || strings.HasPrefix(v.Name, "flow") {
				m[v.Name] = v.Value
			}
		}
		return m
	}
	all := run("")
	dataIn := run(", frames: data, direction: in")
	in := run(", direction: in")
	dataOut := run(", frames: data, direction: out")
	data := run(", frames: data")
	t.Logf("lost: all %v, data in %v, in %v, data out %v, data %v; retransmits %v %v %v %v %v",
		all["faults/link_drops"], dataIn["faults/link_drops"], in["faults/link_drops"], dataOut["faults/link_drops"], data["faults/link_drops"],
		all["nic/retransmits"], dataIn["nic/retransmits"], in["nic/retransmits"], dataOut["nic/retransmits"], data["nic/retransmits"])
	if all["faults/link_drops"] == 0 || all["nic/retransmits"] == 0 {
		t.Errorf("loss on every frame: %v lost, %v retransmits", all["faults/link_drops"], all["nic/retransmits"])
	}
	if dataIn["faults/link_drops"] != 0 || dataIn["nic/retransmits"] != 0 {
		t.Errorf("data frames into the sender: %v lost, %v retransmits, want none (it receives only ACKs)",
			dataIn["faults/link_drops"], dataIn["nic/retransmits"])
	}
	if in["faults/link_drops"] == 0 || in["faults/link_drops"] >= in["nic/acks_sent"] {
		t.Errorf("every frame into the sender: %v lost of %v ACKs, want some", in["faults/link_drops"], in["nic/acks_sent"])
	}
	if dataOut["faults/link_drops"] == 0 || dataOut["nic/retransmits"] == 0 {
		t.Errorf("data frames out of the sender: %v lost, %v retransmits, want both", dataOut["faults/link_drops"], dataOut["nic/retransmits"])
	}
	if !reflect.DeepEqual(data, dataOut) {
		t.Errorf("data frames both ways differ from data frames out of the sender (which sends all the data):\n%v\n%v", data, dataOut)
	}
}
