// Package counters reads the NIC and fabric counters a berun host can see,
// before and after a run, so hardware runs report the quantities besim
// simulates (paper §8, Table 7: PFC pause duration, NAKs; §6: CNPs and
// DCQCN settings) next to the workload's own metrics:
//
//   - RDMA port counters: every file under
//     /sys/class/infiniband/DEV/ports/PORT/counters and .../hw_counters
//     (on ConnectX: np_cnp_sent, rp_cnp_handled, out_of_sequence,
//     packet_seq_err, local_ack_timeout_err, rnr_nak_retry_err, ...). The
//     IB port_xmit_data/port_rcv_data counters count 4-byte words, as the
//     IB specification says.
//   - ethtool -S IFACE, keeping the per-priority and pause counters
//     (rx_prio3_pause, rx_prio3_pause_duration, tx_pause_ctrl_phy, ...) and
//     discards/drops/ECN/CNP counters (names matching KeepEthtool).
//   - DCQCN settings under /sys/class/net/IFACE/ecn (roce_np/enable/N,
//     roce_rp/rpg_*, ...), recorded as settings, not differenced.
//
// A source that is not there is never reported as zeros: Snapshot.Absent
// and Report.Absent map it to the reason (no such directory, ethtool not in
// PATH, the command failed and how), and Report.Delta holds only counters
// read both before and after. Config.Root points all paths at another
// directory, which is how the tests use a fake sysfs.
package counters

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// KeepEthtool selects the ethtool -S counters kept.
var KeepEthtool = regexp.MustCompile(`(?i)pause|prio\d|discard|drop|ecn|cnp|out_of_buffer`)

// Bounds on what one snapshot reads.
const (
	maxFiles     = 8192
	maxFileBytes = 256
	maxOutput    = 4 << 20
)

// Config says what to read.
type Config struct {
	// Root prefixes every sysfs path ("" is "/").
	Root string
	// Netdevs are the Ethernet interfaces for ethtool -S and the ecn sysfs.
	Netdevs []string
	// RDMADevices restricts the infiniband devices read (empty: all).
	RDMADevices []string
	// Ethtool is the command ("" is "ethtool" from PATH).
	Ethtool string
	// Exec runs a command and returns its standard output (nil: os/exec).
	Exec func(ctx context.Context, name string, args ...string) ([]byte, error)
	// LookPath finds a command (nil: exec.LookPath).
	LookPath func(string) (string, error)
	// Timeout bounds each command (0: 5 s).
	Timeout time.Duration
}

// Snapshot is one reading.
type Snapshot struct {
	TakenNS  int64             `json:"taken_ns"`
	Values   map[string]uint64 `json:"values"`
	Settings map[string]string `json:"settings,omitempty"`
	// Present maps each source read to how many values it gave.
	Present map[string]int `json:"present,omitempty"`
	// Absent maps each source not read to why.
	Absent map[string]string `json:"absent,omitempty"`
	Notes  []string          `json:"notes,omitempty"`
}

func (c *Config) path(p string) string {
	root := c.Root
	if root == "" {
		root = "/"
	}
	return filepath.Join(root, p)
}

// Read takes a snapshot. It does not fail: what cannot be read is recorded
// in Absent or Notes.
func Read(ctx context.Context, c Config) *Snapshot {
	s := &Snapshot{Values: map[string]uint64{}, Settings: map[string]string{},
		Present: map[string]int{}, Absent: map[string]string{}}
	budget := maxFiles
	c.readIB(s, &budget)
	if len(c.Netdevs) == 0 {
		s.Absent["ethtool"] = "no network interface given or found for the data address"
		s.Absent["dcqcn"] = "no network interface given or found for the data address"
	}
	for _, nd := range c.Netdevs {
		if !plainName(nd) {
			s.Absent["netdev/"+nd] = fmt.Sprintf("netdev %q is not a plain interface name (no '/', not . or ..): not read", nd)
			continue
		}
		c.readEthtool(ctx, s, nd)
		c.readECN(s, nd, &budget)
	}
	if budget <= 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("stopped after reading %d files", maxFiles))
	}
	s.TakenNS = time.Now().UnixNano()
	return s
}

// plainName reports whether a device name is safe to join into a sysfs
// path: not empty, not . or .., no path separator or NUL. (The agent's
// protocol is stricter: wire.CheckDevice.)
func plainName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/\\\x00")
}

func readSmall(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFileBytes))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

func absentReason(what string, err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return what + " not present"
	case errors.Is(err, fs.ErrPermission):
		return what + ": permission denied"
	}
	return fmt.Sprintf("%s: %v", what, err)
}

func (c *Config) readIB(s *Snapshot, budget *int) {
	base := c.path("/sys/class/infiniband")
	devs, err := os.ReadDir(base)
	if err != nil {
		s.Absent["infiniband"] = absentReason("/sys/class/infiniband", err) + " (no RDMA device or driver loaded)"
		return
	}
	want := map[string]bool{}
	for _, d := range c.RDMADevices {
		want[d] = true
	}
	for d := range want {
		if !plainName(d) {
			want[d] = false // never matches a directory entry; reported below
		}
	}
	found := map[string]bool{}
	for _, d := range devs {
		name := d.Name()
		if len(want) > 0 && !want[name] {
			continue
		}
		found[name] = true
		ports, err := os.ReadDir(filepath.Join(base, name, "ports"))
		if err != nil {
			s.Absent["infiniband/"+name] = absentReason(filepath.Join("/sys/class/infiniband", name, "ports"), err)
			continue
		}
		for _, p := range ports {
			for _, kind := range []string{"counters", "hw_counters"} {
				src := fmt.Sprintf("infiniband/%s/%s/%s", name, p.Name(), kind)
				dir := filepath.Join(base, name, "ports", p.Name(), kind)
				ents, err := os.ReadDir(dir)
				if err != nil {
					s.Absent[src] = absentReason(strings.TrimPrefix(dir, c.path("/")), err)
					continue
				}
				n := 0
				for _, e := range ents {
					if e.IsDir() || *budget <= 0 {
						continue
					}
					*budget--
					v, err := readSmall(filepath.Join(dir, e.Name()))
					if err != nil {
						continue // unreadable entries (write-only, EINVAL on some drivers)
					}
					x, err := strconv.ParseUint(v, 10, 64)
					if err != nil {
						continue
					}
					s.Values[src+"/"+e.Name()] = x
					n++
				}
				s.Present[src] = n
			}
		}
	}
	if len(found) == 0 && len(devs) > 0 {
		s.Absent["infiniband"] = fmt.Sprintf("none of the RDMA devices %v present", c.RDMADevices)
	}
	for _, d := range c.RDMADevices {
		switch {
		case !plainName(d):
			s.Absent["infiniband/"+d] = fmt.Sprintf("RDMA device %q is not a plain device name (no '/', not . or ..): not read", d)
		case !found[d]:
			s.Absent["infiniband/"+d] = "RDMA device " + d + " not present under /sys/class/infiniband"
		}
	}
	if len(devs) == 0 {
		s.Absent["infiniband"] = "/sys/class/infiniband is empty (no RDMA device)"
	}
}

func (c *Config) readEthtool(ctx context.Context, s *Snapshot, nd string) {
	src := "ethtool/" + nd
	cmd := c.Ethtool
	if cmd == "" {
		cmd = "ethtool"
	}
	look := c.LookPath
	if look == nil {
		look = exec.LookPath
	}
	path, err := look(cmd)
	if err != nil {
		s.Absent[src] = fmt.Sprintf("%s not found in PATH, pause counters not read", cmd)
		return
	}
	run := c.Exec
	if run == nil {
		run = func(ctx context.Context, name string, args ...string) ([]byte, error) {
			var out, errb bytes.Buffer
			x := exec.CommandContext(ctx, name, args...)
			x.Stdout, x.Stderr = &limited{&out, maxOutput}, &limited{&errb, 4096}
			if err := x.Run(); err != nil {
				if msg := strings.TrimSpace(errb.String()); msg != "" {
					return nil, fmt.Errorf("%w: %s", err, msg)
				}
				return nil, err
			}
			return out.Bytes(), nil
		}
	}
	to := c.Timeout
	if to <= 0 {
		to = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, to)
	defer cancel()
	out, err := run(ctx, path, "-S", nd)
	if err != nil {
		s.Absent[src] = fmt.Sprintf("ethtool -S %s failed: %v", nd, err)
		return
	}
	vals, err := ParseEthtool(out)
	if err != nil {
		s.Absent[src] = fmt.Sprintf("ethtool -S %s: %v", nd, err)
		return
	}
	n := 0
	for k, v := range vals {
		if KeepEthtool.MatchString(k) {
			s.Values[src+"/"+k] = v
			n++
		}
	}
	if n == 0 {
		s.Absent[src] = fmt.Sprintf("ethtool -S %s reports no pause or per-priority counters (%d counters in all)", nd, len(vals))
		return
	}
	s.Present[src] = n
}

type limited struct {
	w *bytes.Buffer
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if k := min(len(p), l.n-l.w.Len()); k > 0 {
		l.w.Write(p[:k])
	}
	return len(p), nil
}

// ParseEthtool parses ethtool -S output ("NIC statistics:" then
// "     name: value" lines). Lines that are not name: integer are skipped.
func ParseEthtool(out []byte) (map[string]uint64, error) {
	vals := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 4096), 64<<10)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		x, err := strconv.ParseUint(v, 10, 64)
		if err != nil || k == "" || strings.ContainsAny(k, " \t") {
			continue
		}
		vals[k] = x
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(vals) == 0 {
		return nil, errors.New("no statistics in the output")
	}
	return vals, nil
}

func (c *Config) readECN(s *Snapshot, nd string, budget *int) {
	src := "dcqcn/" + nd
	dir := c.path(filepath.Join("/sys/class/net", nd, "ecn"))
	if _, err := os.Stat(dir); err != nil {
		s.Absent[src] = absentReason(filepath.Join("/sys/class/net", nd, "ecn"), err) + " (not a ConnectX/mlx5 netdev, or no DCQCN sysfs)"
		return
	}
	n := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || *budget <= 0 {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			if strings.Count(rel, string(filepath.Separator)) >= 3 {
				return filepath.SkipDir
			}
			return nil
		}
		*budget--
		v, err := readSmall(p)
		if err != nil {
			return nil
		}
		s.Settings[src+"/"+filepath.ToSlash(rel)] = v
		n++
		return nil
	})
	if n == 0 {
		s.Absent[src] = filepath.Join("/sys/class/net", nd, "ecn") + " has no readable settings"
		return
	}
	s.Present[src] = n
}

// Report is the before/after comparison stored with a host's results.
type Report struct {
	BeforeNS int64 `json:"before_ns"`
	AfterNS  int64 `json:"after_ns"`
	// Delta is after - before for every counter read both times.
	Delta  map[string]int64  `json:"delta"`
	Before map[string]uint64 `json:"before"`
	After  map[string]uint64 `json:"after"`
	// Settings are the DCQCN settings at the start; SettingsChanged lists
	// those that differed at the end ("before -> after").
	Settings        map[string]string `json:"settings,omitempty"`
	SettingsChanged map[string]string `json:"settings_changed,omitempty"`
	Present         map[string]int    `json:"present,omitempty"`
	// Absent maps each source that could not be read to why; its counters
	// are missing from Delta rather than zero.
	Absent map[string]string `json:"absent,omitempty"`
	Notes  []string          `json:"notes,omitempty"`
}

// Diff compares two snapshots.
func Diff(before, after *Snapshot) *Report {
	r := &Report{BeforeNS: before.TakenNS, AfterNS: after.TakenNS, Delta: map[string]int64{},
		Before: before.Values, After: after.Values, Settings: before.Settings,
		Present: after.Present, Absent: map[string]string{}}
	for k, v := range before.Absent {
		r.Absent[k] = v
	}
	for k, v := range after.Absent {
		if b, ok := r.Absent[k]; ok && b != v {
			v = "before: " + b + "; after: " + v
		}
		r.Absent[k] = v
	}
	var gone, backwards []string
	for k, b := range before.Values {
		a, ok := after.Values[k]
		if !ok {
			gone = append(gone, k)
			continue
		}
		if a < b {
			backwards = append(backwards, k)
			continue
		}
		r.Delta[k] = int64(a - b)
	}
	var appeared []string
	for k := range after.Values {
		if _, ok := before.Values[k]; !ok {
			appeared = append(appeared, k)
		}
	}
	note := func(what string, ks []string) {
		if len(ks) > 0 {
			sort.Strings(ks)
			if len(ks) > 10 {
				ks = append(ks[:10], fmt.Sprintf("and %d more", len(ks)-10))
			}
			r.Notes = append(r.Notes, what+": "+strings.Join(ks, ", "))
		}
	}
	note("counters that went backwards (reset during the run?), no delta", backwards)
	note("counters read before but not after, no delta", gone)
	note("counters read after but not before, no delta", appeared)
	for k, b := range before.Settings {
		if a, ok := after.Settings[k]; ok && a != b {
			if r.SettingsChanged == nil {
				r.SettingsChanged = map[string]string{}
			}
			r.SettingsChanged[k] = b + " -> " + a
		}
	}
	r.Notes = append(r.Notes, before.Notes...)
	r.Notes = append(r.Notes, after.Notes...)
	return r
}

// InterfaceFor returns the name of the local interface that holds ip
// ("lo" for loopback addresses).
func InterfaceFor(ip net.IP) (string, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return "", err
	}
	for _, ifc := range ifs {
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return ifc.Name, nil
			}
		}
	}
	if ip.IsLoopback() {
		for _, ifc := range ifs {
			if ifc.Flags&net.FlagLoopback != 0 {
				return ifc.Name, nil
			}
		}
	}
	return "", fmt.Errorf("no local interface has address %v", ip)
}
