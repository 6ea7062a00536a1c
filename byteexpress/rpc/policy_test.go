package rpc

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/besim/besim/byteexpress"
)

func TestPolicyDrive(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RetryProb = 1
	cfg.MaxAttempts = 4
	if _, err := NewPolicy(Config{}, svc3(), 0, nil); err == nil {
		t.Fatal("invalid config accepted")
	}
	p, err := NewPolicy(cfg, svc3(), 0, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if p.NextDeadline() != byteexpress.Never {
		t.Fatal("idle policy has a deadline")
	}
	d := p.Selector.Pick(0, 0)
	if d.Node != 10 {
		t.Fatalf("%+v", d)
	}
	p.Tracker.Start(Request{Shard: 0, Idempotent: true}, 0)
	// Drive purely by deadlines: every attempt times out (a dead replica).
	var nodes []NodeID
	for i := 0; i < 4; i++ {
		now := p.NextDeadline()
		if now != time.Duration(i+1)*cfg.RequestTimeout {
			t.Fatalf("tick %d at %v", i, now)
		}
		r := p.Tick(now)
		if len(r.Calls) != 1 {
			t.Fatalf("tick %d: %+v", i, r)
		}
		p.Selector.OnRequestTimeout(0, d.Target(), now)
		d = p.Selector.Pick(0, now)
		nodes = append(nodes, d.Node)
	}
	// Three timeouts walked path, path, replica: the call now targets 11.
	if nodes[2] != 11 || p.Tracker.Outstanding() != 0 || p.Tracker.Stats.Retries != 3 {
		t.Fatalf("nodes %v stats %+v", nodes, p.Tracker.Stats)
	}
	// Node 10 is on TCP fallback: its probe is the next deadline.
	if got := p.NextDeadline(); got != 3*cfg.RequestTimeout+cfg.ProbeInterval {
		t.Fatalf("probe deadline %v", got)
	}
	if r := p.Tick(p.NextDeadline()); len(r.Probes) != 1 || r.Probes[0].Node != 10 {
		t.Fatalf("%+v", r)
	}
}
