package experiment

import (
	"github.com/besim/besim/units"
	"reflect"
	"testing"

	"github.com/besim/besim/dcqcn"
	"github.com/besim/besim/rnic"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
)

func parse(t *testing.T, name, text string) *scenarios.Scenario {
	t.Helper()
	s, err := scenarios.Parse(name+".yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDefaultsAgree: the defaults the scenario schema documents are the
// NIC model's and DCQCN's own.
func TestDefaultsAgree(t *testing.T) {
	s := parse(t, "d", "name: d\nduration: 1ms\nfabric: {topology: {kind: star, hosts: 2}}\nhosts: {nic: rnic}\nflows: [{src: 0, dst: 1}]\n")
	got, err := NICConfig(s, 25*units.Gbps)
	if err != nil {
		t.Fatal(err)
	}
	want := rnic.DefaultConfig()
	want.SizesOnly = true
	if !reflect.DeepEqual(got, want) {
		t.Errorf("NICConfig of an empty rnic section:\n got %+v\nwant %+v", got, want)
	}
	q := s.RNIC.QP
	if *q.Timeout != 14 || *q.RetryCnt != 7 || *q.RNRRetry != 7 || *q.MinRNRTimer != 12 {
		t.Errorf("QP attributes %+v: want perftest's 14/7/7/12", q)
	}

	d := parse(t, "d", "name: d\nduration: 1ms\nfabric: {topology: {kind: star, hosts: 2}}\nhosts: {nic: rnic}\nrnic: {cc: dcqcn}\nflows: [{src: 0, dst: 1}]\n")
	gotD, err := NICConfig(d, 25*units.Gbps)
	if err != nil {
		t.Fatal(err)
	}
	if w := dcqcn.DefaultConfig(25 * units.Gbps); !reflect.DeepEqual(gotD.DCQCN, w) {
		t.Errorf("DCQCN defaults:\n got %+v\nwant %+v", gotD.DCQCN, w)
	}
	if gotD.CC != rnic.CCDCQCN || gotD.CNPInterval != sim.Time(dcqcn.DefaultCNPInterval) {
		t.Errorf("cc %v, CNP interval %v", gotD.CC, gotD.CNPInterval)
	}

	// Every key reaches the model.
	o := parse(t, "o", `name: o
duration: 1ms
fabric: {topology: {kind: star, hosts: 2}}
hosts: {nic: rnic}
rnic:
  cc: dcqcn
  payload: bytes
  wqe_cost: 1ns
  packet_cost: 2ns
  units: 3
  cqe_cost: 4ns
  qp_cache_entries: 5
  mr_cache: {mpt_entries: 34, mtt_entries: 35, ways: 4, page: 2MiB}
  rx_buffer: 6KiB
  ack_req_every: 7
  cnp_prio: 5
  pcie: {bandwidth: 9Gbps, read_latency: 10ns, write_latency: 11ns, mmio_latency: 12ns}
  doorbells: {lock_free: 13, shared: 14}
  cpu: {post_send: 15ns, post_send_per_wqe: 16ns, doorbell: 17ns, post_recv: 18ns, post_recv_per_wqe: 19ns,
        poll: 20ns, poll_per_cqe: 21ns, lock_acquire: 22ns, lock_transfer: 23ns, reg_mr: 24ns, reg_mr_per_page: 25ns}
dcqcn: {g: 1/16, initial_alpha: 1/2, alpha_timer: 26us, rate_timer: 27us, byte_counter: 28KB, fast_recovery: 2,
        ai_rate: 30Mbps, hai_rate: 31Mbps, min_rate: 32Mbps, cnp_interval: 33us}
flows: [{src: 0, dst: 1}]
`)
	c, err := NICConfig(o, 25*units.Gbps)
	if err != nil {
		t.Fatal(err)
	}
	ns := sim.Nanosecond
	w := rnic.Config{PortMTU: 4096, TrafficPrio: 3, CNPPrio: 5, AckReqEvery: 7, RxBuffer: 6 << 10,
		WQECost: 1 * ns, PacketCost: 2 * ns, Units: 3, DMABandwidth: 9 * units.Gbps, DMAReadLatency: 10 * ns,
		DMAWriteLatency: 11 * ns, MMIOLatency: 12 * ns, CQECost: 4 * ns, QPCacheEntries: 5,
		MPTCacheEntries: 34, MTTCacheEntries: 35, MRCacheWays: 4, MTTPage: 2 << 20,
		PostSendCall: 15 * ns, PostSendPerWQE: 16 * ns, DoorbellCost: 17 * ns, PostRecvCall: 18 * ns, PostRecvPerWQE: 19 * ns,
		PollCall: 20 * ns, PollPerCQE: 21 * ns, LockAcquire: 22 * ns, LockTransfer: 23 * ns, DedicatedBFRegs: 13, SharedBFRegs: 14,
		RegMRBase: 24 * ns, RegMRPerPage: 25 * ns, CC: rnic.CCDCQCN, CNPInterval: 33 * sim.Microsecond,
		DCQCN: dcqcn.Config{LineRate: 25 * units.Gbps, MinRate: 32_000_000, G: 1.0 / 16, InitialAlpha: 0.5,
			AlphaTimer: 26 * sim.Microsecond, RateTimer: 27 * sim.Microsecond, ByteCounter: 28000,
			FastRecoveryStages: 2, AdditiveIncrease: 30_000_000, HyperIncrease: 31_000_000}}
	if !reflect.DeepEqual(c, w) {
		t.Errorf("every key:\n got %+v\nwant %+v", c, w)
	}
}

// TestDCQCNProfiles: dcqcn.profile: connectx resolves to dcqcn.ConnectXConfig
// and its CNP interval; an explicit key overrides its profile value, the
// others keep the profile's; the mechanism keys override either profile.
func TestDCQCNProfiles(t *testing.T) {
	const head = "name: d\nduration: 1ms\nfabric: {topology: {kind: star, hosts: 2}}\nhosts: {nic: rnic}\nrnic: {cc: dcqcn}\nflows: [{src: 0, dst: 1}]\n"
	const line units.Rate = 25 * units.Gbps
	for _, c := range []struct {
		dcqcn string
		want  dcqcn.Config
		cnp   sim.Time
	}{
		{"", dcqcn.DefaultConfig(line), dcqcn.DefaultCNPInterval},
		{"dcqcn: {profile: dcqcn-paper}\n", dcqcn.DefaultConfig(line), dcqcn.DefaultCNPInterval},
		{"dcqcn: {profile: connectx}\n", dcqcn.ConnectXConfig(line), dcqcn.ConnectXCNPInterval},
		{"dcqcn: {profile: connectx, byte_counter: 10MB, cnp_interval: 50us}\n", func() dcqcn.Config {
			c := dcqcn.ConnectXConfig(line)
			c.ByteCounter = 10_000_000
			return c
		}(), dcqcn.DefaultCNPInterval},
		{"dcqcn: {profile: connectx, alpha_update: on-cnp, target_clamp: always, decrease_period: 0s}\n", func() dcqcn.Config {
			c := dcqcn.ConnectXConfig(line)
			c.AlphaSampled, c.TargetClamp, c.DecreasePeriod = false, dcqcn.ClampAlways, 0
			return c
		}(), dcqcn.ConnectXCNPInterval},
		{"dcqcn: {alpha_update: per-period, target_clamp: never}\n", func() dcqcn.Config {
			c := dcqcn.DefaultConfig(line)
			c.AlphaSampled, c.TargetClamp = true, dcqcn.ClampNever
			return c
		}(), dcqcn.DefaultCNPInterval},
	} {
		s := parse(t, "d", head+c.dcqcn)
		got, err := NICConfig(s, line)
		if err != nil {
			t.Fatalf("%q: %v", c.dcqcn, err)
		}
		if !reflect.DeepEqual(got.DCQCN, c.want) || got.CNPInterval != c.cnp {
			t.Errorf("%q:\n got %+v, CNP interval %v\nwant %+v, %v", c.dcqcn, got.DCQCN, got.CNPInterval, c.want, c.cnp)
		}
	}
	if _, err := scenarios.Parse("d.yaml", []byte(head+"dcqcn: {profile: cx5}\n")); err == nil {
		t.Error("an unknown profile parsed")
	}
}
