// Package role is the plug-in point of berun: a Role is what one host does
// during a run (send, sink, serve, fetch, push), and the agent runs the role
// instances the controller assigns to its host through this interface.
//
// Built in, so that berun exercises real traffic today:
//
//   - tcp-bulk (mode send | sink): 1 MiB messages over kernel TCP as fast as
//     the stack allows, acknowledged end to end; the throughput half of the
//     paper's TCP baseline (§8).
//
//   - tcp-echo (mode client | server): request/response with a window of
//     outstanding requests, reporting latency percentiles; the latency
//     half.
//
//   - ps-server and ps-client (a besim ps-cluster scenario, paper §2.1),
//     incast-server and incast-worker (an incast-pull scenario, §6.3):
//     the workload replayed by its own state machines (workloads/ps,
//     workloads/incast) over kernel TCP or, with param transport verbs,
//     over the ByteExpress core on the host's RDMA device; they read the
//     workload from Spec.Scenario. The fan-out runner they share
//     (fanout.go, fanverbs.go) serves every request/answer workload the
//     same way; a ps-cluster with workload.rpc sends the clients' fetches
//     and pushes through byteexpress/rpc over verbs (psrpc.go), and a
//     ps-server's mute_at black-holes it.
//
//   - perftest-server and perftest-client (a besim perftest benchmark,
//     Table 2): the benchmark's endpoint (workloads/perftest) on the
//     host's RDMA device, RC and UD SENDs at the link's rate and MTU.
//
//   - pingpong-sender and pingpong-server (a besim pingpong benchmark,
//     Figure 8): workloads/pingpong's Pinger, one message outstanding,
//     over kernel TCP or the core on verbs; peak-sender, peak-receiver,
//     peak-perftest-client and peak-perftest-server (a peak benchmark,
//     Figure 9): fragsize's and perftest's machines taking turns on the
//     link (peak.go).
//
//   - the other benchmarks, each on two hosts over the RDMA device:
//     fragsize-sender and fragsize-receiver (Figure 10), hol-sender and
//     hol-receiver (Figure 13), msgrate-sender and msgrate-target (Figure
//     11, WRITEs posted on the verbs), msgrate-core-sender and
//     msgrate-core-target (Figure 11 through the core, fig11-core),
//     mrcache-sender and mrcache-target (§5.2: regions per block, per
//     buffer or per message; a real NIC's MPT/MTT misses are not
//     observable, so those metrics are absent from the report); and
//     flow-sender and flow-receiver (a flow scenario's flows as kernel TCP
//     streams).
//
//   - failover-server and failover-client (a besim failover scenario,
//     §7.2): the clients' fetches through byteexpress/rpc, driven by
//     workloads/failover's machine over kernel TCP or verbs; a server's
//     crash_at closes its endpoint abruptly, the hardware analogue of the
//     scenario's host crash.
//
// Further roles plug in the same way: a package calls Register from init
// with a Factory, and the command links it in with a blank import. Nothing
// in the agent or controller changes.
//
// # Life of a role instance
//
//  1. The controller validates the plan with the same registry: Factory
//     rejects unknown or bad parameters before anything starts.
//  2. On the agent, Factory builds the instance and Prepare binds its
//     listeners (on Spec.Bind) and allocates what it needs; it returns the
//     address peers should connect to ("" if it accepts nothing).
//  3. All hosts report ready; the controller starts them at one instant T.
//     At T the agent calls Run with the final PeerMap (every instance of the
//     run with the address it reported). Run generates load for
//     Spec.Duration from Spec.Start, then finishes its exchanges and
//     returns. Its context is cancelled at Start + Duration + Grace, or
//     earlier when the run is aborted; Run must then return promptly with
//     what it has, so that nothing hangs.
//  4. Close releases everything, whether or not Run was called.
//
// Run returns a Result and an error; both are reported: a failed exchange
// with a peer (for example a peer host that was killed) keeps the metrics
// gathered so far. Metric names carry their unit (bytes, gbps, latency_us_p99).
package role

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"
)

// Spec is one role instance as assigned to a host.
type Spec struct {
	ID   string // unique in the run
	Role string // registered role name
	Host string // host name in the hosts file
	// Bind is the IP:port to listen on if the role accepts connections
	// (port 0: any free port); its IP is also the source address for the
	// connections the role makes.
	Bind string
	// Peers are the instances this one connects to; From, the instances
	// that name this one in their Peers (a sink waits for exactly these).
	Peers  []string
	From   []string
	Params map[string]string
	// Duration is how long load is generated; Grace how long after it the
	// role may take to finish its exchanges before its context ends.
	Duration, Grace time.Duration
	// Start is the run's start instant (set for Run, zero in Prepare).
	Start time.Time
	// Scenario is the file given to `berun run`, for roles (the
	// parameter-server workloads) that read their configuration from it.
	Scenario []byte
	// Logf logs a line on the agent (never nil when called by the agent).
	Logf func(format string, args ...any)
}

// End is when load generation stops.
func (s *Spec) End() time.Time { return s.Start.Add(s.Duration) }

// Peer is another role instance of the run.
type Peer struct {
	ID, Role, Host string
	Addr           string // where it accepts connections; "" if it accepts none
}

// PeerMap holds every instance of the run by ID.
type PeerMap map[string]Peer

// Result is what an instance reports.
type Result struct {
	// Metrics are named numbers; the name carries the unit.
	Metrics map[string]float64
	// Detail is role-specific structured data, encoded as JSON (at most
	// 1 MiB once encoded).
	Detail any
	Notes  []string
}

// Role is one role instance. Prepare, Run and Close are called in that
// order from one goroutine; Run at most once.
type Role interface {
	Prepare(ctx context.Context, spec Spec) (addr string, err error)
	Run(ctx context.Context, spec Spec, peers PeerMap) (Result, error)
	Close() error
}

// Factory builds an instance after checking its parameters.
type Factory func(spec Spec) (Role, error)

// Param documents one parameter.
type Param struct {
	Name    string
	Default string // "" means required or no default, see Doc
	Doc     string
}

// Info describes a registered role.
type Info struct {
	Name    string
	Summary string
	Params  []Param
	New     Factory
}

var (
	mu       sync.RWMutex
	registry = map[string]Info{}
)

// Register adds a role; it panics on a duplicate or empty name (call it
// from init).
func Register(info Info) {
	mu.Lock()
	defer mu.Unlock()
	if info.Name == "" || info.New == nil {
		panic("role: Register needs a name and a factory")
	}
	if _, dup := registry[info.Name]; dup {
		panic("role: " + info.Name + " registered twice")
	}
	registry[info.Name] = info
}

// Lookup finds a registered role.
func Lookup(name string) (Info, bool) {
	mu.RLock()
	defer mu.RUnlock()
	i, ok := registry[name]
	return i, ok
}

// Names lists the registered roles in order.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	var n []string
	for k := range registry {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// New builds an instance of spec.Role.
func New(spec Spec) (Role, error) {
	info, ok := Lookup(spec.Role)
	if !ok {
		return nil, fmt.Errorf("role %q is not known (known: %v)", spec.Role, Names())
	}
	r, err := info.New(spec)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", spec.Role, spec.ID, err)
	}
	return r, nil
}
