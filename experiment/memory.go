package experiment

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/besim/besim/scenarios"
)

// Memory is an estimate of the memory one run of a scenario needs: a sum
// of terms, the largest first. It is an order of magnitude, calibrated on
// measured peak RSS (fig14-incast with 1,024 servers: 1.03 GiB measured,
// 1.13 GiB estimated, nearly all of it the engines' registered buffers),
// and on the conservative side: it counts every registered buffer in
// full, where the OS backs only the pages a run touches (the default
// ps-cluster: 72 MiB measured, 166 MiB estimated).
type Memory struct {
	Bytes int64
	Terms []MemoryTerm
}

// MemoryTerm is one part of a Memory estimate.
type MemoryTerm struct {
	What  string // e.g. "engines: 2 x 1024 connections x 512 KiB (staging 32 x 8 KiB + receive 32 x 8 KiB)"
	Bytes int64
}

// Per-item costs of the estimate (measured with /usr/bin/time on besim
// run; byteexpress defaults for the engine buffers).
const (
	memBase       = 32 << 20 // Go runtime, kernel, result
	memPerHost    = 96 << 10 // a host's NIC, ports, queues and model state
	memPerRoute   = 32       // one routing-table entry (slice header + next hops)
	beSQDepth     = 32       // byteexpress Config defaults
	beRQDepth     = 32
	beRecvBuf     = 8 << 10
	beSRQDepth    = 1024
	memPerTCPConn = 64 << 10 // tcpsim connection state and queues
)

// EstimateMemory estimates the memory a run of s needs.
func EstimateMemory(s *scenarios.Scenario) Memory {
	var m Memory
	add := func(b int64, format string, args ...any) {
		if b > 0 {
			m.Terms = append(m.Terms, MemoryTerm{What: fmt.Sprintf(format, args...), Bytes: b})
		}
	}
	add(memBase, "runtime and kernel")
	t := s.Fabric.Topology
	hosts, switches := int64(t.HostCount()), int64(t.SwitchCount())
	add(hosts*memPerHost, "hosts: %d x %s", hosts, FormatBytes(memPerHost))
	add(hosts*switches*memPerRoute, "routing tables: %d switches x %d hosts x %d B", switches, hosts, memPerRoute)
	if w := s.Workload; w != nil {
		var conns int64
		tcp := false
		switch w.Kind {
		case scenarios.IncastPull:
			conns = int64(w.Workers) * int64(w.Servers)
		case scenarios.PSCluster:
			conns = int64(w.Rankers+w.Trainers) * int64(w.Servers)
			tcp = w.Transport == scenarios.OverTCP
		case scenarios.Failover:
			conns = int64(w.Clients) * 2 * int64(w.Shards) // every client to both replicas of every shard
		}
		if tcp {
			add(conns*memPerTCPConn, "tcp connections: %d x %s", conns, FormatBytes(memPerTCPConn))
		} else if conns > 0 {
			sq, buf := int64(beSQDepth), int64(beRecvBuf)
			if w.SQDepth > 0 {
				sq = int64(w.SQDepth)
			}
			if w.RecvBuffer > 0 {
				buf = int64(w.RecvBuffer)
			}
			per := sq * buf
			what := fmt.Sprintf("staging %d x %s", sq, FormatBytes(buf))
			if !w.SRQ {
				per += beRQDepth * buf
				what += fmt.Sprintf(" + receive %d x %s", beRQDepth, FormatBytes(buf))
			} else {
				add(hosts*beSRQDepth*buf, "shared receive queues: %d hosts x %d x %s", hosts, beSRQDepth, FormatBytes(buf))
			}
			add(2*conns*per, "engines: 2 x %d connections x %s (%s)", conns, FormatBytes(per), what)
		}
	}
	if b := s.Benchmark; b != nil && b.Kind == scenarios.MsgRate && b.Through == scenarios.ThroughCore {
		// Points run one after another: the largest QP count's engines,
		// on both hosts, with the core's default staging and receive
		// buffers (an upper bound: fig11-core's 512 engines measured
		// 143 MB resident against this 512 MiB).
		var qps int64
		for _, q := range b.QPs {
			qps = max(qps, int64(q))
		}
		per := int64(beSQDepth+beRQDepth) * beRecvBuf
		add(2*qps*per, "engines: 2 x %d QPs x %s (staging %d + receive %d x %s)", qps, FormatBytes(per), beSQDepth, beRQDepth, FormatBytes(beRecvBuf))
	}
	slices.SortStableFunc(m.Terms, func(a, b MemoryTerm) int {
		switch {
		case a.Bytes > b.Bytes:
			return -1
		case a.Bytes < b.Bytes:
			return 1
		}
		return 0
	})
	for _, x := range m.Terms {
		m.Bytes += x.Bytes
	}
	return m
}

func (m Memory) String() string {
	if len(m.Terms) == 0 {
		return "about " + FormatBytes(m.Bytes)
	}
	return fmt.Sprintf("about %s (largest: %s = %s)", FormatBytes(m.Bytes), m.Terms[0].What, FormatBytes(m.Terms[0].Bytes))
}

// FormatBytes writes b in binary units with three significant digits.
func FormatBytes(b int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	x, i := float64(b), 0
	for x >= 1024 && i < len(units)-1 {
		x /= 1024
		i++
	}
	if i == 0 || x == float64(int64(x)) {
		return fmt.Sprintf("%d %s", int64(x), units[i])
	}
	return fmt.Sprintf("%.3g %s", x, units[i])
}

// memoryLimit is the limit Build checks estimates against (0: none).
var memoryLimit atomic.Int64

func init() { memoryLimit.Store(DefaultMemoryLimit()) }

// SetMemoryLimit sets the largest estimate Build accepts, in bytes; 0 or
// less turns the check off. The default is DefaultMemoryLimit.
func SetMemoryLimit(b int64) { memoryLimit.Store(max(b, 0)) }

// MemoryLimit is the limit Build checks estimates against (0: none).
func MemoryLimit() int64 { return memoryLimit.Load() }

// EnvMemoryLimit names the environment variable that sets the limit
// (a size such as 8GiB, or 0 for none), for every besim command.
const EnvMemoryLimit = "BESIM_MEMORY_LIMIT"

// DefaultMemoryLimit is 3/4 of the machine's physical memory, or 0 (no
// limit) where that cannot be read.
func DefaultMemoryLimit() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// MemTotal:       24578228 kB
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil || kb <= 0 {
				return 0
			}
			return kb * 1024 / 4 * 3
		}
	}
	return 0
}

// ParseMemoryLimit parses a limit: a size (8GiB, 512MiB) or 0 for none.
func ParseMemoryLimit(v string) (int64, error) {
	sz, err := scenarios.ParseSize(v)
	if err != nil {
		return 0, fmt.Errorf("memory limit %q: %v", v, err)
	}
	return int64(sz), nil
}

// checkMemory refuses a scenario whose estimate exceeds the limit.
func checkMemory(s *scenarios.Scenario) error {
	limit := MemoryLimit()
	if limit <= 0 {
		return nil
	}
	m := EstimateMemory(s)
	if m.Bytes <= limit {
		return nil
	}
	field := "fabric.topology"
	if s.Workload != nil {
		field = "workload"
	}
	return s.Errorf(field, "the run needs %s, more than the memory limit of %s (default 3/4 of physical memory; set --memory-limit or $%s, 0 for none): make the largest term smaller",
		m, FormatBytes(limit), EnvMemoryLimit)
}
