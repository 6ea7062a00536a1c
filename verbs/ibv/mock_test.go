//go:build rdma

package ibv

import (
	"errors"
	"reflect"
	"syscall"
	"testing"

	"github.com/besim/besim/verbs"
)

// These tests run the cgo post/poll conversions against mockprov.go's
// recording provider, so they need no device.

func sge(a uintptr, n, k uint32) verbs.SGE { return verbs.SGE{Addr: a, Length: n, LKey: k} }

func TestMockPostSendChainOneDoorbell(t *testing.T) {
	p := newMockProvider(verbs.RC)
	defer p.free()
	q := p.qp(verbs.RC, 16, 2, 16)
	defer q.freeRings()
	wrs := []verbs.SendWR{
		{ID: 1, Opcode: verbs.OpWrite, SGL: []verbs.SGE{sge(0x1000, 64, 7)}, RemoteAddr: 0xdead0000, RKey: 0x55},
		{ID: 2, Opcode: verbs.OpWriteImm, Imm: 0x01020304, RemoteAddr: 0xdead1000, RKey: 0x56},
		{ID: 3, Opcode: verbs.OpSend, Flags: verbs.FlagSignaled | verbs.FlagSolicited,
			SGL: []verbs.SGE{sge(0x2000, 10, 8), sge(0x3000, 20, 9)}},
		{ID: 4, Opcode: verbs.OpRead, Flags: verbs.FlagFence, SGL: []verbs.SGE{sge(0x4000, 4096, 7)}, RemoteAddr: 0xbeef, RKey: 0x57},
	}
	link(wrs)
	if bad, err := q.PostSend(&wrs[0]); bad != nil || err != nil {
		t.Fatalf("PostSend: %v %v", bad, err)
	}
	if p.posts() != 1 {
		t.Fatalf("%d ibv_post_send calls for one chain, want 1", p.posts())
	}
	got := p.sent()
	want := []mockSend{
		{WRID: 1, Opcode: 0, RemoteAddr: 0xdead0000, RKey: 0x55, SGL: []verbs.SGE{sge(0x1000, 64, 7)}},
		{WRID: 2, Opcode: 1, ImmBE: [4]byte{1, 2, 3, 4}, RemoteAddr: 0xdead1000, RKey: 0x56, SGL: []verbs.SGE{}},
		{WRID: 3, Opcode: 2, Flags: 6, SGL: []verbs.SGE{sge(0x2000, 10, 8), sge(0x3000, 20, 9)}},
		{WRID: 4, Opcode: 4, Flags: 1, RemoteAddr: 0xbeef, RKey: 0x57, SGL: []verbs.SGE{sge(0x4000, 4096, 7)}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("posted\n%+v\nwant\n%+v", got, want)
	}
}

func link(wrs []verbs.SendWR) {
	for i := range wrs[:len(wrs)-1] {
		wrs[i].Next = &wrs[i+1]
	}
}

func TestMockPostSendUD(t *testing.T) {
	p := newMockProvider(verbs.UD)
	defer p.free()
	q := p.qp(verbs.UD, 4, 1, 4)
	defer q.freeRings()
	wr := verbs.SendWR{ID: 9, Opcode: verbs.OpSendImm, Imm: 0xa0b0c0d0, SGL: []verbs.SGE{sge(0x5000, 100, 3)},
		AH: p.ah(), RemoteQPN: 0x4242, RemoteQKey: 0x11111111}
	if _, err := q.PostSend(&wr); err != nil {
		t.Fatal(err)
	}
	s := p.sent()[0]
	if !s.AH || s.RemoteQPN != 0x4242 || s.RemoteQK != 0x11111111 || s.ImmBE != [4]byte{0xa0, 0xb0, 0xc0, 0xd0} || s.Opcode != 3 {
		t.Fatalf("UD WR %+v", s)
	}
	// A UD send without an AH of this backend is refused before the post.
	wr.AH = nil
	if bad, err := q.PostSend(&wr); bad != &wr || !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("UD without AH: %v %v", bad, err)
	}
}

func TestMockPostSendLimits(t *testing.T) {
	p := newMockProvider(verbs.RC)
	defer p.free()
	q := p.qp(verbs.RC, 4, 2, 4)
	defer q.freeRings()
	wrs := make([]verbs.SendWR, 6)
	for i := range wrs {
		wrs[i] = verbs.SendWR{ID: uint64(i), Opcode: verbs.OpSend, SGL: []verbs.SGE{sge(0x1000, 1, 1)}}
	}
	link(wrs)
	// Longer than the ring: the first 4 go in one doorbell, the 5th is bad.
	if bad, err := q.PostSend(&wrs[0]); bad != &wrs[4] || !errors.Is(err, syscall.ENOMEM) {
		t.Fatalf("overlong chain: bad %v err %v", bad, err)
	}
	if p.posts() != 1 || len(p.sent()) != 4 {
		t.Fatalf("overlong chain: %d posts, %d WRs", p.posts(), len(p.sent()))
	}
	// Too many SGEs in WR 2: WRs 0 and 1 are posted.
	p.resetCounts()
	wrs[2].SGL = []verbs.SGE{sge(1, 1, 1), sge(2, 1, 1), sge(3, 1, 1)}
	if bad, err := q.PostSend(&wrs[0]); bad != &wrs[2] || !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("too many SGEs: bad %v err %v", bad, err)
	}
	if n := len(p.sent()); n != 2 {
		t.Fatalf("too many SGEs: %d WRs posted, want 2", n)
	}
	// The provider refuses WR 1: bad maps back to the Go WR.
	p.resetCounts()
	wrs[2].SGL = wrs[0].SGL
	p.failAt(1)
	if bad, err := q.PostSend(&wrs[0]); bad != &wrs[1] || !errors.Is(err, syscall.ENOMEM) {
		t.Fatalf("provider failure: bad %v err %v", bad, err)
	}
	if bad, err := q.PostSend(nil); bad != nil || err != nil {
		t.Fatalf("empty chain: %v %v", bad, err)
	}
}

func TestMockPostRecvAndSRQ(t *testing.T) {
	p := newMockProvider(verbs.RC)
	defer p.free()
	q := p.qp(verbs.RC, 4, 2, 3)
	defer q.freeRings()
	wrs := []verbs.RecvWR{
		{ID: 1, SGL: []verbs.SGE{sge(0x10, 5, 1)}},
		{ID: 2},
		{ID: 3, SGL: []verbs.SGE{sge(0x20, 6, 2), sge(0x30, 7, 3)}},
		{ID: 4, SGL: []verbs.SGE{sge(0x40, 8, 4)}},
	}
	for i := range wrs[:3] {
		wrs[i].Next = &wrs[i+1]
	}
	if bad, err := q.PostRecv(&wrs[0]); bad != &wrs[3] || !errors.Is(err, syscall.ENOMEM) {
		t.Fatalf("recv chain over the ring: bad %v err %v", bad, err)
	}
	want := []mockRecv{
		{WRID: 1, SGL: []verbs.SGE{sge(0x10, 5, 1)}},
		{WRID: 2, SGL: []verbs.SGE{}},
		{WRID: 3, SGL: []verbs.SGE{sge(0x20, 6, 2), sge(0x30, 7, 3)}},
	}
	if got := p.recvd(); p.posts() != 1 || !reflect.DeepEqual(got, want) {
		t.Fatalf("%d posts of %+v", p.posts(), got)
	}
	p.resetCounts()
	s := p.srq(8, 2)
	defer s.ring.free()
	wrs[2].Next = nil
	if _, err := s.PostRecv(&wrs[0]); err != nil {
		t.Fatal(err)
	}
	if got := p.recvd(); len(got) != 3 || !got[0].SRQ || got[2].WRID != 3 {
		t.Fatalf("SRQ receives %+v", got)
	}
	sq := p.qp(verbs.RC, 4, 1, -1) // receives from an SRQ
	defer sq.freeRings()
	if bad, err := sq.PostRecv(&wrs[0]); bad != &wrs[0] || err == nil {
		t.Fatalf("PostRecv on an SRQ QP: %v %v", bad, err)
	}
}

func TestMockPollConverts(t *testing.T) {
	p := newMockProvider(verbs.RC)
	defer p.free()
	c := p.cq(64)
	defer c.freeArrays()
	in := []verbs.WC{
		{WRID: 1, Status: verbs.WCSuccess, Opcode: verbs.WCRecvRDMAImm, ByteLen: 777, Imm: 0xc0ffee01, QPN: 5, SrcQP: 6},
		{WRID: 2, Status: verbs.WCRNRRetryExcErr, QPN: 5, VendorErr: 0x81},
		{WRID: 3, Status: verbs.WCSuccess, Opcode: verbs.WCRecv, ByteLen: 1064, QPN: 7, SrcQP: 9, Imm: 0x1234},
		{WRID: 4, Opcode: verbs.WCRDMARead, ByteLen: 8, QPN: 5},
	}
	flags := []uint32{2, 0, 1 /* GRH only: imm ignored */, 0}
	for i, w := range in {
		p.pushWC(w, flags[i])
	}
	out := make([]verbs.WC, 3)
	if n := c.Poll(out); n != 3 {
		t.Fatalf("Poll: %d", n)
	}
	want := []verbs.WC{in[0], in[1], in[2]}
	want[0].Flags = verbs.WCWithImm
	want[2].Imm = 0 // no IBV_WC_WITH_IMM
	if !reflect.DeepEqual(out, want) {
		t.Fatalf("polled\n%+v\nwant\n%+v", out, want)
	}
	if n := c.Poll(out); n != 1 || !reflect.DeepEqual(out[0], in[3]) {
		t.Fatalf("second poll %d %+v", n, out[0])
	}
	if n := c.Poll(out); n != 0 {
		t.Fatalf("empty CQ polled %d", n)
	}
	if n := c.Poll(nil); n != 0 {
		t.Fatalf("Poll(nil) = %d", n)
	}
}

// TestMockHotPathDoesNotAllocate: a 16-WR chained post and a 16-entry poll
// allocate nothing in Go.
func TestMockHotPathDoesNotAllocate(t *testing.T) {
	p := newMockProvider(verbs.RC)
	defer p.free()
	q := p.qp(verbs.RC, 64, 2, 64)
	defer q.freeRings()
	c := p.cq(64)
	defer c.freeArrays()
	wrs := make([]verbs.SendWR, 16)
	for i := range wrs {
		wrs[i] = verbs.SendWR{ID: uint64(i), Opcode: verbs.OpWrite, SGL: []verbs.SGE{sge(0x1000, 64, 1)}, RemoteAddr: 0x2000, RKey: 2}
	}
	wrs[15].Flags = verbs.FlagSignaled
	link(wrs)
	rwrs := make([]verbs.RecvWR, 16)
	for i := range rwrs[:15] {
		rwrs[i].Next = &rwrs[i+1]
	}
	wc := make([]verbs.WC, 16)
	allocs := testing.AllocsPerRun(100, func() {
		p.resetCounts()
		for i := 0; i < 16; i++ {
			p.pushWC(verbs.WC{WRID: uint64(i), QPN: 0x123}, 0)
		}
		if _, err := q.PostSend(&wrs[0]); err != nil {
			panic(err)
		}
		if _, err := q.PostRecv(&rwrs[0]); err != nil {
			panic(err)
		}
		if c.Poll(wc) != 16 {
			panic("poll")
		}
	})
	if allocs != 0 {
		t.Fatalf("post 16 + post recv 16 + poll 16: %.1f allocations per round, want 0", allocs)
	}
}
