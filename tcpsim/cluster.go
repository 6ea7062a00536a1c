package tcpsim

import (
	"errors"
	"math"

	"github.com/besim/besim/fabric"
	"github.com/besim/besim/sim"
)

// Cluster is one simulation: a kernel, a fabric, and a TCP Host on every
// fabric host.
type Cluster struct {
	cfg   Config
	k     *sim.Kernel
	net   *fabric.Network
	hosts []*Host
	flows uint32
}

// New builds the fabric fc and a TCP stack cfg attached to every host.
func New(fc fabric.Config, cfg Config) (*Cluster, error) {
	net, err := fabric.New(sim.NewKernel(), fc)
	if err != nil {
		return nil, err
	}
	c, err := NewOn(net.K, net, cfg)
	if err != nil {
		return nil, err
	}
	for i, hp := range net.Hosts {
		if err := net.Attach(hp.Node(), c.hosts[i]); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// NewOn puts a TCP stack on every host of an existing fabric without
// attaching it: the caller attaches each Host, usually behind a
// fabric.Mux that shares the port with an RDMA NIC model (the TCP priority
// must then be outside the Mux's RDMA mask).
func NewOn(k *sim.Kernel, net *fabric.Network, cfg Config) (*Cluster, error) {
	cfg.defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if net.Config().Switch.PFC.Lossless[cfg.Prio] {
		return nil, errors.New("tcpsim: the TCP priority is lossless in the fabric config; TCP runs on a lossy class")
	}
	c := &Cluster{cfg: cfg, k: k, net: net}
	for i, hp := range net.Hosts {
		c.hosts = append(c.hosts, newHost(c, i, hp))
	}
	return c, nil
}

// Config is the stack configuration after defaults.
func (c *Cluster) Config() Config { return c.cfg }

// Kernel is the event kernel.
func (c *Cluster) Kernel() *sim.Kernel { return c.k }

// Network is the fabric.
func (c *Cluster) Network() *fabric.Network { return c.net }

// Hosts is every host, in fabric host order.
func (c *Cluster) Hosts() []*Host { return c.hosts }

// Now is the simulation time.
func (c *Cluster) Now() sim.Time { return c.k.Now() }

// Run advances the simulation to until.
func (c *Cluster) Run(until sim.Time) { c.k.RunUntil(until) }

// Dial establishes a connection from h to r and returns h's end (r's end is
// what r's App sees in OnMessage).
func (h *Host) Dial(r *Host) (*Conn, error) {
	if r == h {
		return nil, errors.New("tcpsim: dial to self")
	}
	if len(h.conns) >= math.MaxUint32-1 || len(r.conns) >= math.MaxUint32-1 {
		return nil, errors.New("tcpsim: too many connections")
	}
	a, b := h.newConn(), r.newConn()
	a.peer, b.peer = b, a
	return a, nil
}

func (h *Host) newConn() *Conn {
	cfg := h.cfg
	c := &Conn{h: h, id: uint32(len(h.conns)), flow: h.c.flows, thread: len(h.conns) % cfg.Threads}
	h.c.flows++
	c.cwnd = float64(int64(cfg.InitCwnd) * cfg.MSS.Bytes())
	c.ssthresh = math.Inf(1)
	c.rto = cfg.MinRTO
	c.rtoT.Init(h.c.k, c, tagRTO)
	c.delT.Init(h.c.k, c, tagDelAck)
	h.conns = append(h.conns, c)
	return c
}
