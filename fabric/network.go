package fabric

import (
	"fmt"
	"math/bits"
	"path"
	"strconv"
	"strings"

	"github.com/besim/besim/pfc"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
)

// Network is one simulated fabric: it owns the packet pool, the hosts'
// uplinks, the switches and the links, refers to the kernel that drives them,
// and reports every counter from one place (Report).
//
// Node ids: hosts are 0..NumHosts-1 (so a frame's Dst indexes routing tables
// directly), switches follow in builder order (NodeID(NumHosts)+i is
// Switches[i]).
type Network struct {
	K    *sim.Kernel
	Pool *Pool

	Hosts    []*HostPort
	Switches []*Switch
	Links    []*Link

	cfg     Config
	names   []string
	miniPod []int
	raw     []*RawHost
	flows   []*FlowStats
	sampler sampler
	// portSlab holds the switch ports not yet handed out by newPort, and
	// classSlab the per-priority port state not yet handed out by
	// Port.newClass.
	portSlab  []Port
	classSlab []class
	// live holds the running drop and mark totals of Live, and swPFC and
	// hostPFC the PFC ones of the switch ports and the hosts (what Live
	// reads in O(1); the per-port counters stay as they were).
	live    Live
	swPFC   pfc.Tally
	hostPFC pfc.Tally
	onLive  func()
}

// New builds the topology cfg describes on kernel k, computes routes and
// attaches a RawHost to every host. Errors name the offending config field;
// New never panics on a bad config.
func New(k *sim.Kernel, cfg Config) (*Network, error) {
	if k == nil {
		return nil, fmt.Errorf("fabric: nil kernel")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Sampling.Cap == 0 {
		cfg.Sampling.Cap = DefaultSampleCap
	}
	g := buildGraph(&cfg)
	n := &Network{K: k, Pool: &Pool{}, cfg: cfg, names: g.names, miniPod: g.miniPod}

	nh := g.hosts
	for i := 0; i < nh; i++ {
		h := &HostPort{net: n, k: k, pool: n.Pool, id: NodeID(i), rate: cfg.HostLink.Rate}
		h.hid = k.RegisterNew(h)
		n.Hosts = append(n.Hosts, h)
	}
	lossless := cfg.Switch.PFC.LosslessMask()
	for i := 0; i < g.switches; i++ {
		id := NodeID(nh + i)
		sw := &Switch{
			net: n, pool: n.Pool, ID: id, Name: g.names[id],
			rng:      sim.Stream(cfg.Seed, "fabric/switch/"+g.names[id]),
			salt:     ECMPHash(id, id, uint32(id), cfg.Seed),
			lossless: lossless,
			alpha:    cfg.Switch.Alpha,
			wdAction: cfg.Switch.PFC.Watchdog.Action,
			ecn:      cfg.Switch.ECN,
		}
		for j, w := range cfg.Switch.Weights {
			sw.quantum[j] = int64(w) * cfg.MaxFrame()
		}
		sw.buf.Init(cfg.Switch.Buffer)
		n.Switches = append(n.Switches, sw)
	}
	// Every switch port comes from one array (480 B a port; one
	// allocation instead of one each, without rounding each up to its size
	// class), and every switch's port list is sized once.
	per := make([]int, g.switches)
	for _, e := range g.edges {
		if e.a >= NodeID(nh) {
			per[int(e.a)-nh]++
		}
		per[int(e.b)-nh]++
	}
	total := 0
	for i, c := range per {
		n.Switches[i].Ports = make([]*Port, 0, c)
		total += c
	}
	n.portSlab = make([]Port, total)
	for _, e := range g.edges {
		if err := n.connect(e); err != nil {
			return nil, err
		}
	}
	for _, sw := range n.Switches {
		for _, p := range sw.Ports {
			if err := n.initPort(sw, p); err != nil {
				return nil, err
			}
		}
	}
	pc := &cfg.Switch.PFC
	for _, h := range n.Hosts {
		h.tx.Init(h.rate, pc.Quanta, pc.Refresh)
		h.rx.Init(h.rate, lossless, pfc.Watchdog{})
		h.tx.SetTally(&n.hostPFC)
		h.rxTimer.Init(k, h, tagRx)
		h.refreshTimer.Init(k, h, tagRefresh)
	}
	n.routes(g)
	n.raw = make([]*RawHost, nh)
	for i, h := range n.Hosts {
		r := NewRawHost(n)
		n.raw[i] = r
		h.host = r
		r.Attach(h)
	}
	if cfg.Sampling.Interval > 0 {
		if err := n.markQueues(cfg.Sampling.Queues); err != nil {
			return nil, err
		}
		n.sampler = sampler{net: n, interval: cfg.Sampling.Interval, cap: cfg.Sampling.Cap, first: k.Now() + cfg.Sampling.Interval}
		k.After(cfg.Sampling.Interval, &n.sampler, 0)
		for _, sw := range n.Switches {
			for _, p := range sw.Ports {
				if p.track == 0 {
					continue
				}
				p.smp = &n.sampler
				for _, c := range p.cls {
					if c != nil {
						c.seen = untracked
					}
				}
			}
		}
	}
	return n, nil
}

// SampledQueues is the number of switch queues the sampler follows: every
// port's eight with sampling on and no Sampling.Queues, none with it off.
func (n *Network) SampledQueues() int {
	c := 0
	for _, sw := range n.Switches {
		for _, p := range sw.Ports {
			if p.smp != nil {
				c += bits.OnesCount8(p.track)
			}
		}
	}
	return c
}

// QueueName names switch sw's egress queue of priority prio toward peer,
// as series, tables and Sampling.Queues do: SWITCH->PEER/PRIO.
func QueueName(sw, peer string, prio int) string {
	return sw + "->" + peer + "/" + strconv.Itoa(prio)
}

// QueuePatternError is a Sampling.Queues pattern that matches no queue.
type QueuePatternError struct {
	Index   int // into Sampling.Queues
	Pattern string
	Example string // a queue name, for the message
}

func (e *QueuePatternError) Error() string {
	return fmt.Sprintf("sampling queue pattern %q matches no switch queue (names are SWITCH->PEER/PRIO, e.g. %q)", e.Pattern, e.Example)
}

// markQueues sets each switch port's sampled priorities (Port.track): all
// of them without patterns, else those whose QueueName a pattern matches,
// and every priority of a port whose SWITCH->PEER a pattern without a '/'
// matches (path.Match's * stops at a '/', so "*" alone would match no
// queue name).
func (n *Network) markQueues(patterns []string) error {
	matched := make([]bool, len(patterns))
	for _, sw := range n.Switches {
		for _, p := range sw.Ports {
			if len(patterns) == 0 {
				p.track = 1<<NumPrio - 1
				continue
			}
			peer := n.NodeName(p.Peer)
			port := sw.Name + "->" + peer
			for i, pat := range patterns {
				if !strings.Contains(pat, "/") { // the port: every priority
					if ok, _ := path.Match(pat, port); ok {
						p.track, matched[i] = 1<<NumPrio-1, true
					}
					continue
				}
				for prio := range NumPrio {
					if ok, _ := path.Match(pat, QueueName(sw.Name, peer, prio)); ok {
						p.track |= 1 << prio
						matched[i] = true
					}
				}
			}
		}
	}
	for i, ok := range matched {
		if !ok {
			e := &QueuePatternError{Index: i, Pattern: patterns[i], Example: "no switch has a port"}
			if len(n.Switches) > 0 && len(n.Switches[0].Ports) > 0 {
				sw := n.Switches[0]
				e.Example = QueueName(sw.Name, n.NodeName(sw.Ports[0].Peer), 3)
			}
			return e
		}
	}
	return nil
}

func (n *Network) connect(e edge) error {
	nh := NodeID(len(n.Hosts))
	mk := func(from, to NodeID, r receiver) *Link {
		l := &Link{k: n.K, Rate: e.link.Rate, Delay: e.link.Delay, From: from, To: to, to: r, pool: n.Pool}
		l.hid = n.K.RegisterNew(l)
		n.Links = append(n.Links, l)
		return l
	}
	if e.a < nh {
		h := n.Hosts[e.a]
		sw := n.Switches[e.b-nh]
		p := sw.newPort(e.a, 0, e.link.Rate)
		h.peer, h.peerPort = e.b, p.Index
		h.rate = e.link.Rate
		h.out = mk(e.a, e.b, p)
		p.out = mk(e.b, e.a, h)
		return nil
	}
	sa, sb := n.Switches[e.a-nh], n.Switches[e.b-nh]
	pa := sa.newPort(e.b, 0, e.link.Rate)
	pb := sb.newPort(e.a, 0, e.link.Rate)
	pa.PeerPort, pb.PeerPort = pb.Index, pa.Index
	pa.out = mk(e.a, e.b, pb)
	pb.out = mk(e.b, e.a, pa)
	return nil
}

func (sw *Switch) newPort(peer NodeID, peerPort int, rate units.Rate) *Port {
	var p *Port
	if n := sw.net; len(n.portSlab) > 0 {
		p, n.portSlab = &n.portSlab[0], n.portSlab[1:]
	} else {
		p = new(Port)
	}
	*p = Port{sw: sw, k: sw.net.K, pool: sw.pool, Index: len(sw.Ports), Peer: peer, PeerPort: peerPort, rate: rate}
	p.hid = sw.net.K.RegisterNew(p)
	sw.Ports = append(sw.Ports, p)
	return p
}

func (n *Network) initPort(sw *Switch, p *Port) error {
	c := &n.cfg.Switch
	pc := &c.PFC
	p.headroom = pc.Headroom
	if p.headroom == 0 {
		p.headroom = pfc.Headroom(p.rate, p.out.Delay, units.Size(n.cfg.MaxFrame()+WireGap), pc.Response)
	}
	// The ingress groups themselves are set up on first use (Port.class),
	// with n.thresholds; their headroom is reserved here.
	for i := 0; i < NumPrio; i++ {
		if pc.Lossless[i] {
			if err := sw.buf.Reserve(p.headroom); err != nil {
				return fmt.Errorf("fabric: switch %s: buffer %d B cannot hold the headroom of %d lossless port-priorities of %d B each: %w (raise switch.buffer or lower switch.pfc.headroom)",
					sw.Name, c.Buffer, len(sw.Ports)*countBits(pc.LosslessMask()), p.headroom, err)
			}
		}
	}
	p.dwrr = c.Scheduler == DWRR
	p.tx.Init(p.rate, pc.Quanta, pc.Refresh)
	p.rx.Init(p.rate, pc.LosslessMask(), pc.Watchdog)
	p.tx.SetTally(&n.swPFC)
	p.rx.SetTally(&n.swPFC)
	p.rxTimer.Init(n.K, p, tagRx)
	p.refreshTimer.Init(n.K, p, tagRefresh)
	return nil
}

// thresholds is the configuration of priority group prio at a port with
// headroom h.
func (n *Network) thresholds(prio int, h units.Size) pfc.Thresholds {
	pc := &n.cfg.Switch.PFC
	th := pfc.Thresholds{Lossless: pc.Lossless[prio]}
	if th.Lossless {
		th.Alpha, th.XONOffset, th.XOFF, th.XON, th.Headroom = pc.Alpha, pc.XONOffset, pc.XOFF, pc.XON, h
	}
	return th
}

func countBits(m uint8) int {
	c := 0
	for ; m != 0; m &= m - 1 {
		c++
	}
	return c
}

// Config is the (validated) configuration the network was built from.
func (n *Network) Config() Config { return n.cfg }

// Link is the link from a to b (adjacent nodes), or nil.
func (n *Network) Link(from, to NodeID) *Link {
	for _, l := range n.Links {
		if l.From == from && l.To == to {
			return l
		}
	}
	return nil
}

// NumHosts is the number of hosts; their ids are 0..NumHosts-1.
func (n *Network) NumHosts() int { return len(n.Hosts) }

// NodeName is "h3", "sw0", "leaf1", "spine0", "edge2.1", "agg0.1", "core5".
func (n *Network) NodeName(id NodeID) string {
	if id < 0 || int(id) >= len(n.names) {
		return fmt.Sprintf("node%d", id)
	}
	return n.names[id]
}

// Switch returns the switch with node id, or nil.
func (n *Network) Switch(id NodeID) *Switch {
	i := int(id) - len(n.Hosts)
	if i < 0 || i >= len(n.Switches) {
		return nil
	}
	return n.Switches[i]
}

// HostPort returns host id's uplink, or nil.
func (n *Network) HostPort(id NodeID) *HostPort {
	if id < 0 || int(id) >= len(n.Hosts) {
		return nil
	}
	return n.Hosts[id]
}

// MiniPod is the index of the leaf (edge switch for a fat-tree) host id hangs
// off: the paper's mini-pod in a leaf-spine big-pod. Star: always 0.
func (n *Network) MiniPod(id NodeID) int {
	if id < 0 || int(id) >= len(n.miniPod) {
		return -1
	}
	return n.miniPod[id]
}

// Attach replaces the endpoint model of host id (a RawHost by default) with
// h and calls h.Attach with the uplink. Attach before the host has traffic.
func (n *Network) Attach(id NodeID, h Host) error {
	hp := n.HostPort(id)
	switch {
	case hp == nil:
		return fmt.Errorf("fabric: attach: %d is not a host (0..%d)", id, len(n.Hosts)-1)
	case h == nil:
		return fmt.Errorf("fabric: attach: nil host for %s", n.NodeName(id))
	case hp.held != nil || hp.busy:
		return fmt.Errorf("fabric: attach: %s is already transmitting", n.NodeName(id))
	}
	if r := n.raw[id]; r != nil && len(r.flows) > 0 && r != h {
		return fmt.Errorf("fabric: attach: %s already sources raw flows", n.NodeName(id))
	}
	n.raw[id], _ = h.(*RawHost)
	hp.host = h
	h.Attach(hp)
	return nil
}

// AddFlow starts a raw flow from a RawHost; it returns the flow id (the
// Packet.Flow of its frames and the index into Flows).
func (n *Network) AddFlow(f Flow) (uint32, error) {
	if err := f.validate(n); err != nil {
		return 0, err
	}
	r := n.raw[f.Src]
	if r == nil {
		return 0, fmt.Errorf("fabric: flow source %s runs a custom host model, not a RawHost", n.NodeName(f.Src))
	}
	id := uint32(len(n.flows))
	st := &FlowStats{ID: id, Flow: f}
	n.flows = append(n.flows, st)
	r.addFlow(st)
	return id, nil
}

// Flows are the raw flows' counters, by id.
func (n *Network) Flows() []*FlowStats { return n.flows }

// Run runs the kernel up to and including instant until.
func (n *Network) Run(until sim.Time) { n.K.RunUntil(until) }

// sampler is the periodic queue-depth sampler: every Interval it records the
// egress bytes of each sampled switch queue that has ever held a frame, into
// a pfc.Recorder per queue (created the first time the queue is seen
// non-empty): the runs of ticks at one depth, a few bytes each, until they
// would outgrow a full pfc.Compact (1-3 bytes a point, at most Cap points),
// which the recorder then becomes; the Compact is built when a series is
// read. It stops rescheduling once it is the only pending event.
//
// A tick costs O(1), not O(ports): it only counts itself. A queue's series
// is written when its depth changes (Port.syncDepth), with one point per
// tick that passed since the previous change at the depth that held over
// them, and brought up to date by Report; that is the series a tick visiting
// every queue would record, point for point.
type sampler struct {
	net      *Network
	interval sim.Time
	cap      int
	first    sim.Time // instant of tick 1 (tick j is at first + (j-1)*interval)
	ticks    int64    // ticks so far
}

func (s *sampler) OnEvent(now sim.Time, _ uint64) {
	s.ticks++
	if s.net.K.Pending() > 0 {
		s.net.K.After(s.interval, s, 0)
	}
}
