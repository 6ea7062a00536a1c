// Package verbstest sits beside the verbs port (paper §2.2, §5.4): it is
// the conformance suite that every implementation must pass, the simulated
// RNIC (package rnic, virtual time), the libibverbs backend (package
// verbs/ibv, real hardware) and the in-memory test double verbs/fakeverbs.
// fakeverbs is also the suite's reference model: its tests plant bugs and
// require the suite to fail. One suite keeps the backends honest with each
// other, so that what the ByteExpress core learns in simulation, and in its
// tests on fakeverbs, also holds on a device.
//
// The cases follow the verbs semantics the paper relies on: the RC/UD
// transports and QP state machine of §2.2; chained posts with one doorbell and
// selective signalling (§5.4.1), including the guarantee that a signalled
// completion implies that earlier unsignalled requests on the same QP have
// completed; WRITE_WITH_IMM completion semantics for the notification scheme
// (data of earlier WRITEs on the QP is visible when it completes); RNR
// behaviour that SRQ mode relies on (§6.2.2); thread domains (§6.2.1); and a
// shared CQ dispatched by QP number and SRQs shared by many QPs (§6.2.2).
//
// A backend plugs in with a Backend value:
//
//	func TestConformance(t *testing.T) {
//		verbstest.Run(t, verbstest.Backend{
//			Name: "rnic",
//			Open: func(t testing.TB) (a, b verbs.Context, env verbstest.Env) {
//				w := newWorld(t)                 // one simulated world
//				a, b = w.host(0), w.host(1)      // two hosts that reach each other
//				return a, b, verbstest.Env{Progress: w.RunFor}
//			},
//		})
//	}
//
// Buffers are allocated outside the Go heap with mmap and registered with
// RegMR(addr, len, access), as the core's allocator does; a simulated backend
// copies payloads through those addresses.
//
// The ibverbs behaviour the cases pin down, for implementers:
//
//   - A QP starts in RESET; Modify enforces the transition table and the
//     required/optional masks (verbs.CheckModify is that table) and leaves the
//     state unchanged on error. State reflects asynchronous errors: after an
//     error completion on an RC QP it reports ERR.
//   - Moving a QP to ERR completes every outstanding send and receive WR,
//     signalled or not, with WCWRFlushErr, in posting order. Error
//     completions only promise WRID, Status and QPN.
//   - PostSend/PostRecv post the chain up to the first WR that does not fit
//     (queue full, too many SGEs) and return that WR; the WRs before it are
//     posted, the rest have no effect. The suite relies on a send-queue
//     slot being free again once its completion (or a later signalled one)
//     has been polled, and on it staying taken while nothing progressed.
//   - With SigAll false only FlagSignaled WRs complete at the sender;
//     receives always complete. A WR's completion implies the earlier WRs on
//     the QP are complete and their data placed.
//   - WRITE_WITH_IMM consumes a receive without writing into its buffer;
//     the responder's completion is WCRecvRDMAImm with WCWithImm, Imm and
//     ByteLen = the write length; the requester's is WCRDMAWrite. SEND_IMM
//     is WCRecv with WCWithImm. Imm is in host order at both ends.
//   - READ completions carry ByteLen. RNR: the responder's min_rnr_timer
//     (code 1 = 10 us here) paces retries; rnr_retry N allows N retries, 7
//     retries forever; exhaustion completes WCRNRRetryExcErr.
//   - Invalid rkey, missing remote access right or a range outside the MR
//     completes WCRemAccessErr and writes nothing.
//   - UD receives carry the 40-byte GRH before the payload and ByteLen
//     counts it; SrcQP names the sender; a send over the path MTU fails at
//     post time or with an error completion and delivers nothing.
//   - WC.QPN is the local QP for sends and receives alike, including on a
//     shared CQ and with an SRQ.
package verbstest

import (
	"testing"
	"time"

	"github.com/besim/besim/verbs"
)

// Feature names an optional capability a backend may lack.
type Feature uint32

// Optional features. The simulated RNIC implements all of them.
const (
	// FeatureUD is the UD transport (QPs of type verbs.UD, address handles).
	FeatureUD Feature = 1 << iota
	// FeatureSRQ is shared receive queues.
	FeatureSRQ
	// FeatureThreadDomain is thread domains (Context.AllocTD). A backend
	// whose AllocTD returns an error wrapping verbs.ErrNotSupported is also
	// skipped for that case, since real providers differ.
	FeatureThreadDomain
)

// Backend is one implementation of the verbs port under test.
type Backend struct {
	// Name labels failures.
	Name string
	// Open returns two contexts whose ports can reach each other and the
	// environment to drive them. It is called once per test case, so every
	// case starts from fresh devices. For real hardware, a and b may be two
	// opens of the same device (loopback). The suite destroys what it
	// creates and closes a and b (once if they are the same value) at the
	// end of the case; Open may register further clean-ups on t.
	Open func(t testing.TB) (a, b verbs.Context, env Env)
	// Lacks lists the features this backend does not implement; the cases
	// that need them are skipped with a message. Keep it empty if you can:
	// the simulated RNIC must pass everything.
	Lacks Feature
}

// Env is how the suite drives a backend and addresses its ports.
type Env struct {
	// Progress lets the backend make progress for up to d. A simulator runs
	// virtual time until nothing is pending or d has passed; a hardware
	// backend sleeps (or spins) for about d. The suite measures all of its
	// waits by the sum of the d it passes here, so virtual time and real
	// time work alike. Required.
	Progress func(d time.Duration)
	// Port is the port number used for QP INIT and address vectors
	// (0 means 1).
	Port uint8
	// GIDIndex is the local GID index placed in AHAttr.SGIDIndex
	// (for RoCEv2 on real NICs this is often not 0).
	GIDIndex uint8
	// AH returns the address vector with which from reaches to's port.
	// Nil means: DGID = to.Attr().GID, SGIDIndex = GIDIndex, PortNum = Port,
	// HopLimit = 64.
	AH func(from, to verbs.Context) verbs.AHAttr
	// Timeout bounds each wait for completions, counted in Progress time
	// (0 means 2 s). A wait that succeeds returns as soon as it can.
	Timeout time.Duration
	// Step is the d passed to each Progress call while waiting
	// (0 means 20 us).
	Step time.Duration
}

func (e Env) withDefaults() Env {
	if e.Port == 0 {
		e.Port = 1
	}
	if e.Timeout == 0 {
		e.Timeout = 2 * time.Second
	}
	if e.Step == 0 {
		e.Step = 20 * time.Microsecond
	}
	if e.AH == nil {
		port, idx := e.Port, e.GIDIndex
		e.AH = func(from, to verbs.Context) verbs.AHAttr {
			return verbs.AHAttr{DGID: to.Attr().GID, SGIDIndex: idx, HopLimit: 64, PortNum: port}
		}
	}
	return e
}

// SendQueueCapper is implemented by QPs whose backend rounds the requested
// MaxSendWR up (real providers do: ibv_create_qp returns the actual cap). The
// send-queue overflow case uses it to know where the queue really ends; a QP
// that does not implement it is assumed to hold exactly MaxSendWR requests.
type SendQueueCapper interface {
	SendQueueCap() int
}

// Case is one conformance case.
type Case struct {
	Name  string
	Needs Feature
	Run   func(f *Fixture)
}

// Cases returns the conformance cases in the order Run executes them. The
// names are the subtest names, so `go test -run 'Conformance/RNR'` selects.
func Cases() []Case {
	return []Case{
		{Name: "Device", Run: testDevice},
		{Name: "QPStateMachine", Run: testQPStateMachine},
		{Name: "FlushOnErr/Recv", Run: testFlushRecv},
		{Name: "FlushOnErr/Send", Run: testFlushSend},
		{Name: "SendRecv/ChainedInOrder", Run: testSendRecvChained},
		{Name: "SelectiveSignaling", Run: testSelectiveSignaling},
		{Name: "Write/NoRecvConsumed", Run: testWrite},
		{Name: "WriteImm/PriorWritesVisible", Run: testWriteImm},
		{Name: "Read", Run: testRead},
		{Name: "SendQueueOverflow", Run: testSendQueueOverflow},
		{Name: "RNR/Retry0Exceeded", Run: func(f *Fixture) { testRNRExceeded(f, 0) }},
		{Name: "RNR/Retry2Exceeded", Run: func(f *Fixture) { testRNRExceeded(f, 2) }},
		{Name: "RNR/InfiniteThenRecv", Run: testRNRInfinite},
		{Name: "RemoteAccess/BadRKeyWrite", Run: testBadRKeyWrite},
		{Name: "RemoteAccess/BadRKeyRead", Run: testBadRKeyRead},
		{Name: "RemoteAccess/OutOfBounds", Run: testOutOfBounds},
		{Name: "UD/StateMasks", Needs: FeatureUD, Run: testUDStateMasks},
		{Name: "UD/SendRecvMTU", Needs: FeatureUD, Run: testUDMTU},
		{Name: "UD/LargerThanMTURejected", Needs: FeatureUD, Run: testUDOverMTU},
		{Name: "SharedCQ/DispatchByQPN", Run: testSharedCQ},
		{Name: "SRQ/TwoQPs", Needs: FeatureSRQ, Run: testSRQ},
		{Name: "ThreadDomain", Needs: FeatureThreadDomain, Run: testThreadDomain},
	}
}

// Run runs every conformance case against be as subtests of t.
func Run(t *testing.T, be Backend) {
	if be.Open == nil {
		t.Fatalf("verbstest: backend %q has no Open", be.Name)
	}
	for _, c := range Cases() {
		t.Run(c.Name, func(t *testing.T) {
			if c.Needs&be.Lacks != 0 {
				t.Skipf("backend %q lacks this feature (Backend.Lacks)", be.Name)
			}
			c.Run(NewFixture(t, be))
		})
	}
}
