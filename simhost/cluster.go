package simhost

import (
	"errors"
	"fmt"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/byteexpress/bemalloc"
	"github.com/besim/besim/fabric"
	"github.com/besim/besim/rnic"
	"github.com/besim/besim/sim"
)

// Config describes a simulated cluster: the fabric, and for every fabric
// host the same RNIC, ByteExpress endpoint, bemalloc pool and CPU costs.
type Config struct {
	// Fabric is the network. A zero Topology.Kind means a star of Hosts hosts.
	Fabric fabric.Config
	// Hosts is the number of hosts of the default star (ignored when
	// Fabric.Topology.Kind is set).
	Hosts int
	// NIC is every host's RNIC. SizesOnly must be false: the ByteExpress
	// wire protocol reads the records its peer SENDs.
	NIC rnic.Config
	// BE is every endpoint's configuration (zero fields: byteexpress
	// defaults). A Trace function, if set, still runs (after simhost's own).
	BE byteexpress.Config
	// Pool is every host's bemalloc configuration.
	Pool bemalloc.Config
	// CPU is the modelled cost of the core's work; the zero value selects
	// DefaultCPUCost.
	CPU CPUCost
	// NoCoreCPU charges nothing for the core's own work (only the RNIC
	// provider's verbs costs remain), for experiments that isolate it.
	NoCoreCPU bool
	// ControlDelay is the one-way delay of the out-of-band connection
	// exchange (a TCP-like side channel). 0 selects HostLink.Delay + 10 us,
	// i.e. a control RTT of 2 x link delay + 20 us.
	ControlDelay sim.Time
	// CheckInvariants runs IOThread.CheckInvariants after every Poll; the
	// first violation is kept (Cluster.Err).
	CheckInvariants bool
}

// DefaultConfig is a star of hosts hosts at the fabric defaults (25 Gb/s,
// 1 us links, 1024 B MTU), default RNICs in payload mode, the core's
// defaults and DefaultCPUCost.
func DefaultConfig(hosts int) Config {
	fc := fabric.DefaultConfig()
	fc.Topology = fabric.Topology{Kind: fabric.Star, Hosts: hosts}
	return Config{Fabric: fc, Hosts: hosts, NIC: rnic.DefaultConfig(), CPU: DefaultCPUCost()}
}

// Cluster is one simulation: a kernel, a fabric and a Host on every fabric
// host. It is single-threaded, like the kernel.
type Cluster struct {
	cfg    Config
	k      *sim.Kernel
	net    *fabric.Network
	hosts  []*Host
	byAddr map[byteexpress.Addr]*Host
	hid    sim.HandlerID
	ctl    []ctlMsg
	free   []uint32
	err    error
	// retired are crashed hosts replaced by a restart.
	retired []*Host
}

// Errors of the simulated side channel.
var (
	// ErrNoHost: the dialed address names no host of the cluster.
	ErrNoHost = errors.New("simhost: no host with that address")
)

// New builds the cluster: kernel, fabric, and one Host per fabric host.
func New(cfg Config) (*Cluster, error) {
	if cfg.Fabric.Topology.Kind == "" {
		if cfg.Hosts < 1 {
			return nil, fmt.Errorf("simhost: Config.Hosts = %d: need at least 1 host (or a Fabric.Topology)", cfg.Hosts)
		}
		if cfg.Fabric.MTU == 0 {
			def := fabric.DefaultConfig()
			def.Topology = cfg.Fabric.Topology
			cfg.Fabric = def
		}
		cfg.Fabric.Topology = fabric.Topology{Kind: fabric.Star, Hosts: cfg.Hosts}
	}
	if cfg.NIC.PortMTU == 0 {
		cfg.NIC = rnic.DefaultConfig()
	}
	if cfg.NIC.SizesOnly {
		return nil, errors.New("simhost: Config.NIC.SizesOnly must be false: ByteExpress parses the bytes its peer SENDs")
	}
	if cfg.CPU == (CPUCost{}) && !cfg.NoCoreCPU {
		cfg.CPU = DefaultCPUCost()
	}
	if cfg.NoCoreCPU {
		cfg.CPU = CPUCost{}
	}
	if err := cfg.CPU.Validate(); err != nil {
		return nil, err
	}
	if cfg.ControlDelay < 0 {
		return nil, fmt.Errorf("simhost: Config.ControlDelay = %v: must be >= 0", cfg.ControlDelay)
	}
	if cfg.ControlDelay == 0 {
		cfg.ControlDelay = cfg.Fabric.HostLink.Delay + 10*sim.Microsecond
	}
	k := sim.NewKernel()
	net, err := fabric.New(k, cfg.Fabric)
	if err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg, k: k, net: net, byAddr: make(map[byteexpress.Addr]*Host)}
	c.hid = k.Register(c)
	for i := range net.Hosts {
		h, err := newHost(c, i)
		if err != nil {
			return nil, err
		}
		c.hosts = append(c.hosts, h)
		c.byAddr[h.addr] = h
	}
	return c, nil
}

// Config is the effective configuration.
func (c *Cluster) Config() Config { return c.cfg }

// Kernel is the simulation kernel.
func (c *Cluster) Kernel() *sim.Kernel { return c.k }

// Network is the fabric.
func (c *Cluster) Network() *fabric.Network { return c.net }

// Hosts are the hosts, by fabric node id.
func (c *Cluster) Hosts() []*Host { return c.hosts }

// Host is host i (fabric node i).
func (c *Cluster) Host(i int) *Host { return c.hosts[i] }

// Alias makes a another address of host h: a Dial to it reaches h's
// endpoint. The core keeps one engine per remote address (§6.1), so
// dialing n aliases of one host opens n engines (n QPs) to it, as n peers
// would, without simulating n hosts (the core message-rate benchmark,
// workloads/msgrate/msgratesim). The address must be new.
func (c *Cluster) Alias(h *Host, a byteexpress.Addr) error {
	if c.byAddr[a] != nil {
		return fmt.Errorf("simhost: alias %q: address already in use", a)
	}
	c.byAddr[a] = h
	return nil
}

// Lookup finds the host with address a.
func (c *Cluster) Lookup(a byteexpress.Addr) *Host { return c.byAddr[a] }

// Now is the kernel's virtual time.
func (c *Cluster) Now() sim.Time { return c.k.Now() }

// Run runs the simulation up to and including instant t.
func (c *Cluster) Run(t sim.Time) { c.k.RunUntil(t) }

// RunFor runs the simulation for d more.
func (c *Cluster) RunFor(d sim.Time) { c.k.RunUntil(c.k.Now() + d) }

// Err is the first invariant violation seen (with CheckInvariants), or nil.
func (c *Cluster) Err() error { return c.err }

// restart replaces crashed host i with a fresh one (Host.Restart).
func (c *Cluster) restart(i int) {
	old := c.hosts[i]
	if !old.crashed {
		return
	}
	// A port shared with another endpoint model (a kernel TCP stack behind
	// a fabric.Mux) keeps the other model.
	mux, _ := c.net.HostPort(old.node).Host().(*fabric.Mux)
	n, err := newHost(c, i)
	if err != nil {
		if c.err == nil {
			c.err = fmt.Errorf("simhost: restart %s: %w", old.name, err)
		}
		return
	}
	if mux != nil && mux.A == fabric.Host(&old.port) {
		mux.A = &n.port
		if err := c.net.Attach(old.node, mux); err != nil && c.err == nil {
			c.err = fmt.Errorf("simhost: restart %s: %w", old.name, err)
		}
	}
	n.app = old.app
	if old.listening {
		n.Listen()
	}
	c.hosts[i] = n
	for a, h := range c.byAddr {
		if h == old {
			c.byAddr[a] = n // its own address and its aliases
		}
	}
	c.retired = append(c.retired, old)
}

// Close closes every endpoint (returning the buffers the core holds) and
// every pool, and reports leaks: buffers still allocated (the application
// must have freed what it was given) and QPs not destroyed.
func (c *Cluster) Close() error {
	var errs []error
	for _, h := range c.hosts {
		if err := h.close(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, h := range c.retired {
		_ = h.close() // a crashed machine's state is gone; only its memory is returned
	}
	return errors.Join(errs...)
}

// ---- the simulated out-of-band channel (byteexpress.Connector) ----

// ctlMsg is one message of the side channel in flight.
type ctlMsg struct {
	reply bool
	from  *Host // dialer
	to    *Host // passive side
	info  byteexpress.ConnInfo
	err   error
	done  func(byteexpress.ConnInfo, error)
}

const (
	tagCrash   = 1 << 40
	tagRestart = 1 << 41
)

// Connect implements byteexpress.Connector: the dialer's ConnInfo reaches
// the remote host ControlDelay later; its endpoint answers from a Poll and
// the answer takes ControlDelay back. A crashed host never answers (the
// dialer's ConnectTimeout fires); an unknown address is refused after one
// control RTT.
func (c *Cluster) Connect(from, remote byteexpress.Addr, local byteexpress.ConnInfo, done func(byteexpress.ConnInfo, error)) {
	src := c.byAddr[from]
	dst := c.byAddr[remote]
	if src == nil {
		done(byteexpress.ConnInfo{}, ErrNoHost)
		return
	}
	if dst == nil {
		c.send(src, 2*c.cfg.ControlDelay, ctlMsg{reply: true, from: src, err: ErrNoHost, done: done})
		return
	}
	c.send(src, c.cfg.ControlDelay, ctlMsg{from: src, to: dst, info: local, done: done})
}

// send schedules m d after the sending host's current time.
func (c *Cluster) send(by *Host, d sim.Time, m ctlMsg) {
	var i uint32
	if k := len(c.free); k > 0 {
		i = c.free[k-1]
		c.free = c.free[:k-1]
		c.ctl[i] = m
	} else {
		i = uint32(len(c.ctl))
		c.ctl = append(c.ctl, m)
	}
	c.k.Post(by.Now()+d, c.hid, uint64(i))
}

// OnEvent implements sim.Handler: side-channel deliveries and crashes.
func (c *Cluster) OnEvent(now sim.Time, tag uint64) {
	if tag&tagCrash != 0 {
		c.hosts[tag&^tagCrash].crash(now)
		return
	}
	if tag&tagRestart != 0 {
		c.restart(int(tag &^ tagRestart))
		return
	}
	m := c.ctl[tag]
	c.ctl[tag] = ctlMsg{}
	c.free = append(c.free, uint32(tag))
	if m.reply {
		if !m.from.crashed {
			m.done(m.info, m.err)
		}
		return
	}
	dst, src, done := m.to, m.from, m.done
	if dst.crashed {
		return // no answer: the dialer's connect times out
	}
	dst.ep.HandleConnect(src.addr, m.info, func(ri byteexpress.ConnInfo, err error) {
		if dst.crashed {
			return
		}
		c.send(dst, c.cfg.ControlDelay, ctlMsg{reply: true, from: src, info: ri, err: err, done: done})
	})
}

var _ byteexpress.Connector = (*Cluster)(nil)
