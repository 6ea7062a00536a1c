package bemalloc

import (
	"errors"
	"fmt"
	"sync"

	"github.com/besim/besim/verbs"
)

// fakePD is a verbs.PD for tests: it records RegMR and Dereg calls, hands
// out distinct keys, checks that registered ranges never overlap and that an
// MR is deregistered once, and can be told to fail registrations.
type fakePD struct {
	mu        sync.Mutex
	nextKey   uint32
	regs      int
	deregs    int
	live      map[uint32]*fakeMR
	failRegs  bool // RegMR fails while set
	failDereg bool // Dereg fails while set
	dealloced bool
}

type fakeMR struct {
	pd     *fakePD
	addr   uintptr
	n      int
	lkey   uint32
	rkey   uint32
	access verbs.Access
	gone   bool
}

var errFake = errors.New("fake PD: registration refused")

func newFakePD() *fakePD { return &fakePD{nextKey: 0x100, live: map[uint32]*fakeMR{}} }

func (pd *fakePD) RegMR(addr uintptr, length int, access verbs.Access) (verbs.MR, error) {
	pd.mu.Lock()
	defer pd.mu.Unlock()
	if pd.failRegs {
		return nil, errFake
	}
	if addr == 0 || length <= 0 {
		return nil, fmt.Errorf("fake PD: bad range %#x+%d", addr, length)
	}
	for _, m := range pd.live {
		if addr < m.addr+uintptr(m.n) && m.addr < addr+uintptr(length) {
			return nil, fmt.Errorf("fake PD: %#x+%d overlaps MR %#x+%d", addr, length, m.addr, m.n)
		}
	}
	// Pin like ibv_reg_mr: every page of the range becomes resident.
	for a := addr; a < addr+uintptr(length); a += 4096 {
		*(*byte)(ptrAt(a)) = 0
	}
	pd.nextKey++
	m := &fakeMR{pd: pd, addr: addr, n: length, lkey: pd.nextKey, rkey: pd.nextKey | 0x8000_0000, access: access}
	pd.live[m.lkey] = m
	pd.regs++
	return m, nil
}

func (pd *fakePD) counts() (regs, deregs, live int) {
	pd.mu.Lock()
	defer pd.mu.Unlock()
	return pd.regs, pd.deregs, len(pd.live)
}

func (pd *fakePD) setFailRegs(v bool) {
	pd.mu.Lock()
	pd.failRegs = v
	pd.mu.Unlock()
}

func (pd *fakePD) CreateQP(verbs.QPInitAttr) (verbs.QP, error)    { return nil, verbs.ErrNotSupported }
func (pd *fakePD) CreateSRQ(verbs.SRQInitAttr) (verbs.SRQ, error) { return nil, verbs.ErrNotSupported }
func (pd *fakePD) CreateAH(verbs.AHAttr) (verbs.AH, error)        { return nil, verbs.ErrNotSupported }

// Dealloc fails while MRs are registered, like ibv_dealloc_pd (EBUSY).
func (pd *fakePD) Dealloc() error {
	pd.mu.Lock()
	defer pd.mu.Unlock()
	if len(pd.live) > 0 {
		return fmt.Errorf("fake PD: %d MRs still registered", len(pd.live))
	}
	pd.dealloced = true
	return nil
}

func (m *fakeMR) Addr() uintptr        { return m.addr }
func (m *fakeMR) Len() int             { return m.n }
func (m *fakeMR) LKey() uint32         { return m.lkey }
func (m *fakeMR) RKey() uint32         { return m.rkey }
func (m *fakeMR) Access() verbs.Access { return m.access }

func (m *fakeMR) Dereg() error {
	pd := m.pd
	pd.mu.Lock()
	defer pd.mu.Unlock()
	if m.gone {
		return errors.New("fake PD: MR deregistered twice")
	}
	if pd.failDereg {
		return errors.New("fake PD: deregistration refused")
	}
	m.gone = true
	delete(pd.live, m.lkey)
	pd.deregs++
	return nil
}
