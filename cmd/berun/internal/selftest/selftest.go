// Package selftest, internal to cmd/berun (its only user), is `berun
// selftest`: a first check of a new RDMA host before any run. It connects
// two RC queue pairs on one device to each other (loopback through the
// NIC) and checks, with bounded waits, the verbs the ByteExpress core
// depends on (paper §2.2, §5.4): SEND/RECV ping-pong (reporting half
// round-trip latency), chained WRITEs with selective signalling and one
// doorbell per batch (reporting bandwidth, then checking the data landed),
// WRITE_WITH_IMM consuming a receive and carrying its immediate, and READ.
//
// It needs only the verbs port, so it runs on the libibverbs backend (the
// command, built with -tags rdma) and, in this package's tests, on the
// simulated RNIC of package rnic (two contexts instead of one).
package selftest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"time"
	"unsafe"

	"github.com/besim/besim/verbs"
)

// Options tune the checks.
type Options struct {
	Port     uint8 // 0 means 1
	GIDIndex uint8
	Iters    int           // ping-pong round trips (0: 1000)
	Size     int           // bytes per WRITE (0: 1 MiB)
	Writes   int           // WRITEs in the bandwidth test (0: 256)
	Timeout  time.Duration // per wait, counted in Progress time (0: 2 s)
	// Progress lets a simulated backend advance (nil: a real device, which
	// progresses by itself; waits then spin).
	Progress func(d time.Duration)
}

// Report is what the checks measured.
type Report struct {
	Device       string   `json:"device"`
	GID          string   `json:"gid"`
	PortRateGbps float64  `json:"port_rate_gbps"`
	PathMTU      int      `json:"path_mtu"`
	PingIters    int      `json:"ping_iters"`
	LatencyUSP50 float64  `json:"latency_us_p50"` // half round trip, 64 B SEND
	LatencyUSP99 float64  `json:"latency_us_p99"`
	WriteBytes   int64    `json:"write_bytes"`
	WriteGBps    float64  `json:"write_gbytes_per_s"`
	Checks       []string `json:"checks"`
}

type side struct {
	ctx verbs.Context
	pd  verbs.PD
	cq  verbs.CQ
	qp  verbs.QP
	buf []byte
	mr  verbs.MR
}

func (s *side) addr(off int) uintptr { return uintptr(unsafe.Pointer(&s.buf[0])) + uintptr(off) }

func (s *side) sgl(off, n int) []verbs.SGE {
	return []verbs.SGE{{Addr: s.addr(off), Length: uint32(n), LKey: s.mr.LKey()}}
}

type runner struct {
	o       Options
	cleanup []func()
}

func (r *runner) defer_(f func()) { r.cleanup = append(r.cleanup, f) }

// wait polls cq for n completions, all successful.
func (r *runner) wait(cq verbs.CQ, n int, what string) ([]verbs.WC, error) {
	out := make([]verbs.WC, 0, n)
	var buf [32]verbs.WC
	var spent time.Duration
	start := time.Now()
	for len(out) < n {
		k := cq.Poll(buf[:min(len(buf), n-len(out))])
		for _, wc := range buf[:max(k, 0)] {
			if wc.Status != verbs.WCSuccess {
				return out, fmt.Errorf("%s: completion %v (vendor error %#x)", what, wc.Status, wc.VendorErr)
			}
		}
		out = append(out, buf[:max(k, 0)]...)
		if len(out) == n {
			break
		}
		if r.o.Progress != nil {
			r.o.Progress(20 * time.Microsecond)
			spent += 20 * time.Microsecond
		} else {
			spent = time.Since(start)
		}
		if spent > r.o.Timeout {
			return out, fmt.Errorf("%s: %d of %d completions after %v (is the port ACTIVE? is the GID index right? see show_gids)", what, len(out), n, r.o.Timeout)
		}
	}
	return out, nil
}

func (r *runner) open(c verbs.Context, depth, size int) (*side, error) {
	s := &side{ctx: c}
	var err error
	if s.pd, err = c.AllocPD(); err != nil {
		return nil, fmt.Errorf("alloc PD: %w", err)
	}
	r.defer_(func() { s.pd.Dealloc() })
	if s.cq, err = c.CreateCQ(2*depth+16, nil); err != nil {
		return nil, fmt.Errorf("create CQ: %w", err)
	}
	r.defer_(func() { s.cq.Destroy() })
	if s.qp, err = s.pd.CreateQP(verbs.QPInitAttr{Type: verbs.RC, SendCQ: s.cq, RecvCQ: s.cq, MaxSendWR: depth, MaxRecvWR: depth, MaxSGE: 1}); err != nil {
		return nil, fmt.Errorf("create RC QP: %w", err)
	}
	r.defer_(func() { s.qp.Destroy() })
	if s.buf, err = mapMem(size); err != nil {
		return nil, fmt.Errorf("map %d bytes: %w", size, err)
	}
	r.defer_(func() { unmapMem(s.buf) })
	if s.mr, err = s.pd.RegMR(s.addr(0), size, verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead); err != nil {
		return nil, fmt.Errorf("register %d bytes: %w", size, err)
	}
	r.defer_(func() { s.mr.Dereg() })
	return s, nil
}

func (r *runner) connect(a, b *side, mtu verbs.MTU) error {
	port := r.o.Port
	for _, x := range [][2]*side{{a, b}, {b, a}} {
		q, peer := x[0], x[1]
		init := verbs.QPAttr{State: verbs.StateInit, Port: port, AccessFlags: verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead}
		if err := q.qp.Modify(&init, verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrAccessFlags); err != nil {
			return fmt.Errorf("QP RESET->INIT: %w", err)
		}
		rtr := verbs.QPAttr{State: verbs.StateRTR, PathMTU: mtu, DestQPN: peer.qp.QPN(), RQPSN: 0x1000, MaxDestRdAtomic: 1, MinRNRTimer: 12,
			AH: verbs.AHAttr{DGID: peer.ctx.Attr().GID, SGIDIndex: r.o.GIDIndex, HopLimit: 64, PortNum: port}}
		if err := q.qp.Modify(&rtr, verbs.AttrState|verbs.AttrAV|verbs.AttrPathMTU|verbs.AttrDestQPN|verbs.AttrRQPSN|verbs.AttrMaxDestRdAtomic|verbs.AttrMinRNRTimer); err != nil {
			return fmt.Errorf("QP INIT->RTR (GID index %d): %w", r.o.GIDIndex, err)
		}
	}
	for _, q := range []*side{a, b} {
		rts := verbs.QPAttr{State: verbs.StateRTS, Timeout: 14, RetryCnt: 7, RNRRetry: 7, SQPSN: 0x1000, MaxRdAtomic: 1}
		if err := q.qp.Modify(&rts, verbs.AttrState|verbs.AttrTimeout|verbs.AttrRetryCnt|verbs.AttrRNRRetry|verbs.AttrSQPSN|verbs.AttrMaxQPRdAtomic); err != nil {
			return fmt.Errorf("QP RTR->RTS: %w", err)
		}
	}
	return nil
}

// Loopback runs the checks between a QP on ca and one on cb; on a real
// device ca and cb are the same context.
func Loopback(ca, cb verbs.Context, o Options) (rep *Report, err error) {
	if o.Port == 0 {
		o.Port = 1
	}
	if o.Iters <= 0 {
		o.Iters = 1000
	}
	if o.Size <= 0 {
		o.Size = 1 << 20
	}
	if o.Writes <= 0 {
		o.Writes = 256
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	r := &runner{o: o}
	defer func() {
		for i := len(r.cleanup) - 1; i >= 0; i-- {
			r.cleanup[i]()
		}
	}()
	attr := ca.Attr()
	mtu := min(attr.PortMTU, cb.Attr().PortMTU)
	if !mtu.Valid() {
		return nil, fmt.Errorf("port MTU %d is not an IB MTU (port down?)", mtu)
	}
	rep = &Report{Device: ca.Name(), GID: attr.GID.String(), PortRateGbps: float64(attr.PortRate) / 1e9, PathMTU: int(mtu)}
	const depth = 64
	a, err := r.open(ca, depth, o.Size)
	if err != nil {
		return rep, err
	}
	b, err := r.open(cb, depth, o.Size)
	if err != nil {
		return rep, err
	}
	if err := r.connect(a, b, mtu); err != nil {
		return rep, err
	}
	rep.Checks = append(rep.Checks, fmt.Sprintf("RC QPs %d and %d connected (path MTU %d)", a.qp.QPN(), b.qp.QPN(), mtu))

	// SEND/RECV ping-pong, 64 bytes.
	recv := func(s *side, off int) error {
		_, err := s.qp.PostRecv(&verbs.RecvWR{ID: 1, SGL: s.sgl(off, 64)})
		return err
	}
	send := func(s *side, off int) error {
		_, err := s.qp.PostSend(&verbs.SendWR{ID: 2, SGL: s.sgl(off, 64), Opcode: verbs.OpSend, Flags: verbs.FlagSignaled})
		return err
	}
	if err := errors.Join(recv(a, 4096), recv(b, 4096)); err != nil {
		return rep, fmt.Errorf("post receive: %w", err)
	}
	lat := make([]time.Duration, 0, o.Iters)
	for i := range o.Iters {
		t0 := time.Now()
		a.buf[0] = byte(i)
		if err := send(a, 0); err != nil {
			return rep, fmt.Errorf("ping %d: post send: %w", i, err)
		}
		if _, err := r.wait(b.cq, 1, fmt.Sprintf("ping %d at the responder", i)); err != nil {
			return rep, err
		}
		if b.buf[4096] != byte(i) {
			return rep, fmt.Errorf("ping %d: received byte %d", i, b.buf[4096])
		}
		if err := errors.Join(recv(b, 4096), send(b, 0)); err != nil {
			return rep, fmt.Errorf("pong %d: %w", i, err)
		}
		// a: its send completion and the pong; b: its send completion.
		if _, err := r.wait(a.cq, 2, fmt.Sprintf("pong %d", i)); err != nil {
			return rep, err
		}
		lat = append(lat, time.Since(t0)/2)
		if _, err := r.wait(b.cq, 1, fmt.Sprintf("pong %d send", i)); err != nil {
			return rep, err
		}
		if err := recv(a, 4096); err != nil {
			return rep, fmt.Errorf("post receive: %w", err)
		}
	}
	slices.Sort(lat)
	rep.PingIters = o.Iters
	rep.LatencyUSP50 = float64(lat[len(lat)/2]) / 1e3
	rep.LatencyUSP99 = float64(lat[min(len(lat)-1, len(lat)*99/100)]) / 1e3
	rep.Checks = append(rep.Checks, fmt.Sprintf("SEND/RECV: %d ping-pongs, data intact", o.Iters))

	// WRITE bandwidth: batches of 16 chained WRITEs, one doorbell, the last
	// signalled.
	for i := range a.buf {
		a.buf[i] = byte(i*7 + 3)
	}
	clear(b.buf)
	const batch = 16
	wrs := make([]verbs.SendWR, batch)
	t0 := time.Now()
	for done := 0; done < o.Writes; done += batch {
		n := min(batch, o.Writes-done)
		for j := range n {
			wrs[j] = verbs.SendWR{ID: uint64(done + j), SGL: a.sgl(0, o.Size), Opcode: verbs.OpWrite,
				RemoteAddr: uint64(b.addr(0)), RKey: b.mr.RKey()}
			if j+1 < n {
				wrs[j].Next = &wrs[j+1]
			} else {
				wrs[j].Flags = verbs.FlagSignaled
			}
		}
		if bad, err := a.qp.PostSend(&wrs[0]); err != nil {
			return rep, fmt.Errorf("post %d chained WRITEs (bad WR %v): %w", n, bad != nil, err)
		}
		if _, err := r.wait(a.cq, 1, "WRITE batch"); err != nil {
			return rep, err
		}
	}
	el := time.Since(t0)
	rep.WriteBytes = int64(o.Writes) * int64(o.Size)
	rep.WriteGBps = float64(rep.WriteBytes) / el.Seconds() / 1e9
	if !bytes.Equal(a.buf, b.buf) {
		return rep, errors.New("WRITE: destination buffer differs from the source")
	}
	rep.Checks = append(rep.Checks, fmt.Sprintf("WRITE: %d x %d B in batches of %d (selective signalling), data intact", o.Writes, o.Size, batch))

	// WRITE_WITH_IMM consumes a receive and carries the immediate.
	if err := recv(b, 0); err != nil {
		return rep, err
	}
	if _, err := a.qp.PostSend(&verbs.SendWR{ID: 9, SGL: a.sgl(0, 4096), Opcode: verbs.OpWriteImm, Flags: verbs.FlagSignaled,
		Imm: 0xbe5e, RemoteAddr: uint64(b.addr(8192)), RKey: b.mr.RKey()}); err != nil {
		return rep, fmt.Errorf("post WRITE_WITH_IMM: %w", err)
	}
	wc, err := r.wait(b.cq, 1, "WRITE_WITH_IMM at the responder")
	if err != nil {
		return rep, err
	}
	if wc[0].Opcode != verbs.WCRecvRDMAImm || wc[0].Flags&verbs.WCWithImm == 0 || wc[0].Imm != 0xbe5e || wc[0].ByteLen != 4096 {
		return rep, fmt.Errorf("WRITE_WITH_IMM completion %+v, want RECV_RDMA_WITH_IMM imm 0xbe5e len 4096", wc[0])
	}
	if _, err := r.wait(a.cq, 1, "WRITE_WITH_IMM"); err != nil {
		return rep, err
	}
	rep.Checks = append(rep.Checks, "WRITE_WITH_IMM: receive consumed, immediate 0xbe5e delivered")

	// READ back.
	for i := range 4096 {
		b.buf[16384+i] = byte(i ^ 0x5a)
	}
	if _, err := a.qp.PostSend(&verbs.SendWR{ID: 10, SGL: a.sgl(16384, 4096), Opcode: verbs.OpRead, Flags: verbs.FlagSignaled,
		RemoteAddr: uint64(b.addr(16384)), RKey: b.mr.RKey()}); err != nil {
		return rep, fmt.Errorf("post READ: %w", err)
	}
	if _, err := r.wait(a.cq, 1, "READ"); err != nil {
		return rep, err
	}
	if !bytes.Equal(a.buf[16384:16384+4096], b.buf[16384:16384+4096]) {
		return rep, errors.New("READ: data differs")
	}
	rep.Checks = append(rep.Checks, "READ: 4096 B, data intact")
	return rep, nil
}
