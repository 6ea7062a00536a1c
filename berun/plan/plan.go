// Package plan reads the two files `berun run` takes: the hosts file (where
// each agent is and which address its data traffic uses) and the run plan
// (which role instances run on which hosts, for how long), and turns them
// into the per-host assignments the controller sends.
//
// # Hosts file
//
//	hosts:
//	  - name: h1                 # used in plans and results
//	    control: 10.0.0.1:7070   # the address given to `berun agent --listen`
//	    data: 192.168.1.1        # IP (or IP:port) the roles bind and connect from
//	    netdevs: [eth2]          # optional: interfaces for ethtool -S and DCQCN sysfs
//	    rdma_devices: [mlx5_2]   # optional: /sys/class/infiniband devices to read
//
// data is an IP literal; with a port P, the host's role instances get ports
// P, P+1, ... in plan order (firewall-friendly); without one (or with port
// 0) each listening instance takes a free port and the controller tells the
// peers which. Without netdevs, the agent uses the interface holding the data
// IP; without rdma_devices, all RDMA devices.
//
// # Run plan
//
//	name: tcp-baseline         # letters, digits, . _ - (names the result file)
//	duration: 10s              # load generation time
//	grace: 5s                  # optional (default 5s): time after duration to finish exchanges
//	counters: true             # optional (default true): read NIC counters around the run
//	roles:
//	  - {id: sink, role: tcp-bulk, host: h2, params: {mode: sink}}
//	  - {id: send, role: tcp-bulk, host: h1, peers: [sink], params: {mode: send, message_size: 1MiB}}
//	  - {id: srv,  role: tcp-echo, host: h2, params: {mode: server}}
//	  - {id: cli,  role: tcp-echo, host: h1, peers: [srv], params: {mode: client, outstanding: 8}}
//
// Both files are strict: unknown keys, duplicate IDs, unknown hosts, roles,
// peers or role parameters are errors, all checked before any agent is
// contacted (`berun roles` lists the roles and their parameters).
//
// A besim scenario with a ps-cluster or incast-pull workload is the other
// input (see FromScenario); the hosts file's optional ps_roles: [server,
// ranker, trainer, worker] says which of its instances a host takes.
package plan

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/besim/besim/internal/fileio"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/besim/besim/berun/role"
	"github.com/besim/besim/berun/wire"
)

// MaxFile bounds either input file.
const MaxFile = wire.MaxScenario

// DefaultGrace is the time after the duration roles get to finish.
const DefaultGrace = 5 * time.Second

// Host is one entry of the hosts file.
type Host struct {
	Name        string   `yaml:"name"`
	Control     string   `yaml:"control"`
	Data        string   `yaml:"data"`
	Netdevs     []string `yaml:"netdevs"`
	RDMADevices []string `yaml:"rdma_devices"`
	// PSRoles restricts which roles of a besim scenario this host takes
	// (server, ranker, trainer of a ps-cluster; server, worker of an
	// incast-pull); empty: any.
	PSRoles []string `yaml:"ps_roles"`

	dataIP   net.IP
	dataPort int
}

// DataIP is the host's data address.
func (h *Host) DataIP() net.IP { return h.dataIP }

// Hosts is a parsed hosts file.
type Hosts struct {
	Hosts  []Host `yaml:"hosts"`
	byName map[string]*Host
}

// Get returns the named host.
func (hs *Hosts) Get(name string) *Host { return hs.byName[name] }

// readFile reads a hosts or plan file: a regular file only (a FIFO or
// /dev/zero is refused before it is opened for reading), at most MaxFile
// bytes.
func readFile(path string) ([]byte, error) {
	return fileio.ReadFile(path, MaxFile, "berun file")
}

func strict(file string, data []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: %v", file, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var extra any
	if err := dec.Decode(&extra); err == nil {
		return fmt.Errorf("%s: more than one YAML document", file)
	}
	return nil
}

// LoadHosts reads and checks a hosts file.
func LoadHosts(path string) (*Hosts, error) {
	b, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return ParseHosts(path, b)
}

// ParseHosts parses and checks a hosts file.
func ParseHosts(file string, data []byte) (*Hosts, error) {
	hs := &Hosts{}
	if err := strict(file, data, hs); err != nil {
		return nil, err
	}
	if len(hs.Hosts) == 0 {
		return nil, fmt.Errorf("%s: no hosts", file)
	}
	var errs []error
	hs.byName = map[string]*Host{}
	for i := range hs.Hosts {
		h := &hs.Hosts[i]
		at := fmt.Sprintf("%s: hosts[%d] (%s)", file, i, h.Name)
		if err := wire.CheckName("name", h.Name); err != nil {
			errs = append(errs, fmt.Errorf("%s: %v", at, err))
		} else if hs.byName[h.Name] != nil {
			errs = append(errs, fmt.Errorf("%s: host %q listed twice", at, h.Name))
		}
		hs.byName[h.Name] = h
		if err := checkControl(h.Control); err != nil {
			errs = append(errs, fmt.Errorf("%s: control: %v", at, err))
		}
		ip, port, err := parseData(h.Data)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: data: %v", at, err))
		}
		h.dataIP, h.dataPort = ip, port
		for _, r := range h.PSRoles {
			if !slices.Contains(psKinds, r) {
				errs = append(errs, fmt.Errorf("%s: ps_roles: %q is not one of %s", at, r, strings.Join(psKinds, ", ")))
			}
		}
		// Plain device names only, as the agent checks them (the counter
		// reader joins them into sysfs paths): refused here, before any
		// agent is contacted.
		for _, n := range h.Netdevs {
			if err := wire.CheckDevice("netdevs", n, wire.MaxNetdev); err != nil {
				errs = append(errs, fmt.Errorf("%s: %v", at, err))
			}
		}
		for _, n := range h.RDMADevices {
			if err := wire.CheckDevice("rdma_devices", n, wire.MaxRDMADevice); err != nil {
				errs = append(errs, fmt.Errorf("%s: %v", at, err))
			}
		}
	}
	return hs, errors.Join(errs...)
}

func checkControl(s string) error {
	if err := wire.CheckAddr("address", s); err != nil {
		return err
	}
	_, p, _ := net.SplitHostPort(s)
	if p == "0" {
		return fmt.Errorf("%q: port 0 (give the port the agent listens on)", s)
	}
	return nil
}

func parseData(s string) (net.IP, int, error) {
	host, port := s, 0
	if h, p, err := net.SplitHostPort(s); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 65535 {
			return nil, 0, fmt.Errorf("%q: bad port", s)
		}
		host, port = h, n
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return nil, 0, fmt.Errorf("%q: want an IP address (optionally with :port)", s)
	}
	if ip.IsUnspecified() || ip.IsMulticast() {
		return nil, 0, fmt.Errorf("%q: want the host's own unicast address", s)
	}
	return ip, port, nil
}

// RoleEntry is one role instance in a plan.
type RoleEntry struct {
	ID     string            `yaml:"id"`
	Role   string            `yaml:"role"`
	Host   string            `yaml:"host"`
	Peers  []string          `yaml:"peers"`
	Params map[string]string `yaml:"params"`
}

// Plan is a parsed run plan.
type Plan struct {
	Name     string      `yaml:"name"`
	Duration string      `yaml:"duration"`
	Grace    string      `yaml:"grace"`
	Counters *bool       `yaml:"counters"`
	Roles    []RoleEntry `yaml:"roles"`

	File     string        `yaml:"-"`
	Raw      []byte        `yaml:"-"`
	Dur      time.Duration `yaml:"-"`
	GraceDur time.Duration `yaml:"-"`
}

// ReadCounters reports whether counters are read around the run.
func (p *Plan) ReadCounters() bool { return p.Counters == nil || *p.Counters }

// LoadPlan reads a plan file.
func LoadPlan(path string) (*Plan, error) {
	b, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return ParsePlan(path, b)
}

// besimKeys are top-level keys of a besim scenario (scenarios/SCHEMA.md).
var besimKeys = []string{"fabric", "flows", "outputs", "seed", "version", "workload", "hosts", "rnic", "benchmark"}

// IsScenario reports whether data looks like a besim scenario rather than a
// berun role plan (it has a top-level key only scenarios have).
func IsScenario(data []byte) bool {
	var top map[string]any
	if err := yaml.Unmarshal(data, &top); err != nil {
		return false
	}
	for _, k := range besimKeys {
		if _, ok := top[k]; ok {
			return true
		}
	}
	return false
}

// ParsePlan parses a plan; it is checked against hosts by Assign.
func ParsePlan(file string, data []byte) (*Plan, error) {
	if IsScenario(data) {
		return nil, fmt.Errorf("%s: this is a besim scenario, not a role plan: load it with FromScenario", file)
	}
	p := &Plan{File: file, Raw: data}
	if err := strict(file, data, p); err != nil {
		return nil, err
	}
	var errs []error
	if err := wire.CheckName("name", p.Name); err != nil {
		errs = append(errs, fmt.Errorf("%s: %v", file, err))
	}
	var err error
	if p.Dur, err = time.ParseDuration(p.Duration); err != nil || p.Dur <= 0 || p.Dur > wire.MaxDuration {
		errs = append(errs, fmt.Errorf("%s: duration %q: want e.g. 10s, more than 0 and at most %v", file, p.Duration, wire.MaxDuration))
	}
	p.GraceDur = DefaultGrace
	if p.Grace != "" {
		if p.GraceDur, err = time.ParseDuration(p.Grace); err != nil || p.GraceDur < 0 || p.GraceDur > time.Hour {
			errs = append(errs, fmt.Errorf("%s: grace %q: want e.g. 5s, 0..1h", file, p.Grace))
		}
	}
	if len(p.Roles) == 0 {
		errs = append(errs, fmt.Errorf("%s: no roles", file))
	}
	return p, errors.Join(errs...)
}

// Assignment is what one host is told to run.
type Assignment struct {
	Host  *Host
	Roles []wire.RoleSpec
}

// Assign checks the plan against the hosts and the role registry and
// returns the per-host assignments, in hosts-file order, for the hosts that
// have roles.
func Assign(p *Plan, hs *Hosts) ([]Assignment, error) {
	var errs []error
	ids := map[string]*RoleEntry{}
	from := map[string][]string{}
	for i := range p.Roles {
		r := &p.Roles[i]
		at := fmt.Sprintf("%s: roles[%d] (%s)", p.File, i, r.ID)
		if err := wire.CheckName("id", r.ID); err != nil {
			errs = append(errs, fmt.Errorf("%s: %v", at, err))
			continue
		}
		if ids[r.ID] != nil {
			errs = append(errs, fmt.Errorf("%s: id %q used twice", at, r.ID))
		}
		ids[r.ID] = r
	}
	for i := range p.Roles {
		r := &p.Roles[i]
		at := fmt.Sprintf("%s: roles[%d] (%s)", p.File, i, r.ID)
		if hs.Get(r.Host) == nil {
			var names []string
			for _, h := range hs.Hosts {
				names = append(names, h.Name)
			}
			errs = append(errs, fmt.Errorf("%s: host %q is not in the hosts file (hosts: %s)", at, r.Host, strings.Join(names, ", ")))
		}
		for _, peer := range r.Peers {
			switch {
			case peer == r.ID:
				errs = append(errs, fmt.Errorf("%s: lists itself as a peer", at))
			case ids[peer] == nil:
				errs = append(errs, fmt.Errorf("%s: peer %q is not a role id of this plan", at, peer))
			default:
				from[peer] = append(from[peer], r.ID)
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	var out []Assignment
	for hi := range hs.Hosts {
		h := &hs.Hosts[hi]
		a := Assignment{Host: h}
		for i := range p.Roles {
			r := &p.Roles[i]
			if r.Host != h.Name {
				continue
			}
			port := 0
			if h.dataPort != 0 {
				port = h.dataPort + len(a.Roles)
				if port > 65535 {
					errs = append(errs, fmt.Errorf("%s: roles[%d] (%s): data port %d out of range", p.File, i, r.ID, port))
				}
			}
			f := from[r.ID]
			sort.Strings(f)
			spec := wire.RoleSpec{ID: r.ID, Role: r.Role, Bind: net.JoinHostPort(h.dataIP.String(), strconv.Itoa(port)),
				Peers: r.Peers, From: f, Params: r.Params}
			if err := spec.Validate(); err != nil {
				errs = append(errs, fmt.Errorf("%s: roles[%d] (%s): %v", p.File, i, r.ID, err))
				continue
			}
			// The role's own checks, exactly as the agent will run them.
			inst, err := role.New(role.Spec{ID: r.ID, Role: r.Role, Host: r.Host, Bind: spec.Bind, Peers: r.Peers, From: f,
				Params: r.Params, Duration: p.Dur, Grace: p.GraceDur, Scenario: p.Raw})
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: roles[%d]: %v", p.File, i, err))
				continue
			}
			inst.Close()
			a.Roles = append(a.Roles, spec)
		}
		if len(a.Roles) > wire.MaxRoles {
			errs = append(errs, fmt.Errorf("host %s: %d role instances, at most %d", h.Name, len(a.Roles), wire.MaxRoles))
		}
		if len(a.Roles) > 0 {
			out = append(out, a)
		}
	}
	return out, errors.Join(errs...)
}
