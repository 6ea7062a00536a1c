package wire

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"time"
	"unicode/utf8"
)

// Message is one control message.
type Message interface {
	Type() Type
	// Validate checks every bound of the message; decoding calls it, and
	// Encode refuses to send a message that fails it.
	Validate() error
}

// Bounds on message contents, beyond the frame bounds.
const (
	NonceSize     = 32      // handshake nonces
	MACSize       = 32      // HMAC-SHA256 output
	MaxName       = 64      // identifiers: hosts, role instances, roles, metrics, run IDs
	MaxText       = 4096    // free text: reasons, notes, errors
	MaxAddr       = 256     // host:port
	MaxScenario   = 1 << 20 // raw scenario/plan file pushed to agents
	MaxRoles      = 256     // role instances on one host
	MaxPeers      = 4096    // peers in a run
	MaxParams     = 64      // parameters of one role instance
	MaxParamValue = 1024    // bytes of one parameter value
	MaxMetrics    = 512     // metrics of one role result
	MaxNotes      = 64      // notes of one result
	MaxDetail     = 1 << 20 // role-specific detail JSON of one role result
	MaxCounters   = 4 << 20 // counters JSON of one host result
	MaxDuration   = 24 * time.Hour
)

// Name reports whether s is a valid identifier: 1..MaxName bytes of
// letters, digits, '.', '_', '-', ':' or '/', starting with a letter or digit.
func validName(s string) bool {
	if len(s) == 0 || len(s) > MaxName {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-' && c != ':' && c != '/') {
			return false
		}
	}
	return true
}

// CheckName returns an error unless s is a valid identifier (see the
// package bounds): what names the field in the message.
func CheckName(what, s string) error {
	if !validName(s) {
		return fmt.Errorf("%s %q: want 1..%d letters, digits, '.', '_', '-', ':', '/', starting with a letter or digit", what, clip(s), MaxName)
	}
	return nil
}

func checkText(what, s string, max int) error {
	if len(s) > max {
		return fmt.Errorf("%s: %d bytes, at most %d", what, len(s), max)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s: not valid UTF-8", what)
	}
	return nil
}

// Device name bounds: a Linux network interface name is at most 15 bytes
// (IFNAMSIZ 16 with its NUL), an RDMA device name at most 63
// (IB_DEVICE_NAME_MAX 64).
const (
	MaxNetdev     = 15
	MaxRDMADevice = 63
)

// CheckDevice returns an error unless s is a plain device name: 1..max
// bytes of letters, digits, '.', '_' or '-', starting with a letter or
// digit. No '/' and no "." or "..": the counter reader joins these names
// into sysfs paths (/sys/class/net/NAME/ecn, /sys/class/infiniband/NAME).
func CheckDevice(what, s string, max int) error {
	ok := len(s) > 0 && len(s) <= max
	for i := 0; ok && i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		ok = alnum || i > 0 && (c == '.' || c == '_' || c == '-')
	}
	if !ok {
		return fmt.Errorf("%s %q: want a plain device name, 1..%d letters, digits, '.', '_', '-', starting with a letter or digit (no '/')", what, clip(s), max)
	}
	return nil
}

func checkDevices(what string, s []string, max, maxLen int) error {
	if len(s) > max {
		return fmt.Errorf("%s: %d entries, at most %d", what, len(s), max)
	}
	seen := make(map[string]bool, len(s))
	for i, x := range s {
		if err := CheckDevice(fmt.Sprintf("%s[%d]", what, i), x, maxLen); err != nil {
			return err
		}
		if seen[x] {
			return fmt.Errorf("%s: %q listed twice", what, x)
		}
		seen[x] = true
	}
	return nil
}

// IsWildcard reports whether host (of a host:port) binds every interface:
// empty, 0.0.0.0 or :: (any unspecified address).
func IsWildcard(host string) bool {
	ip := net.ParseIP(host)
	return host == "" || ip != nil && ip.IsUnspecified()
}

// CheckAddr returns an error unless s is host:port with a numeric port.
func CheckAddr(what, s string) error {
	if len(s) == 0 || len(s) > MaxAddr {
		return fmt.Errorf("%s %q: want host:port of at most %d bytes", what, clip(s), MaxAddr)
	}
	h, p, err := net.SplitHostPort(s)
	if err != nil || h == "" {
		return fmt.Errorf("%s %q: want host:port", what, clip(s))
	}
	if err := checkText(what, h, MaxAddr); err != nil {
		return err
	}
	n := 0
	for _, c := range p {
		if c < '0' || c > '9' || n > 65535 {
			return fmt.Errorf("%s %q: port must be 0..65535", what, clip(s))
		}
		n = n*10 + int(c-'0')
	}
	if p == "" || n > 65535 {
		return fmt.Errorf("%s %q: port must be 0..65535", what, clip(s))
	}
	return nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

func checkBytes(what string, b []byte, n int) error {
	if len(b) != n {
		return fmt.Errorf("%s: %d bytes, want %d", what, len(b), n)
	}
	return nil
}

func checkDuration(what string, ns int64, allowZero bool) error {
	if ns < 0 || (!allowZero && ns == 0) || ns > int64(MaxDuration) {
		return fmt.Errorf("%s: %v, want %s..%v", what, time.Duration(ns), map[bool]string{true: "0", false: ">0"}[allowZero], MaxDuration)
	}
	return nil
}

func checkNames(what string, s []string, max int) error {
	if len(s) > max {
		return fmt.Errorf("%s: %d entries, at most %d", what, len(s), max)
	}
	seen := make(map[string]bool, len(s))
	for i, x := range s {
		if err := CheckName(fmt.Sprintf("%s[%d]", what, i), x); err != nil {
			return err
		}
		if seen[x] {
			return fmt.Errorf("%s: %q listed twice", what, x)
		}
		seen[x] = true
	}
	return nil
}

func checkNotes(what string, s []string) error {
	if len(s) > MaxNotes {
		return fmt.Errorf("%s: %d entries, at most %d", what, len(s), MaxNotes)
	}
	for i, x := range s {
		if err := checkText(fmt.Sprintf("%s[%d]", what, i), x, MaxText); err != nil {
			return err
		}
	}
	return nil
}

func checkRunID(s string) error { return CheckName("run_id", s) }

// Hello opens the handshake (controller -> agent).
type Hello struct {
	Version    int    `json:"version"`
	Controller string `json:"controller"` // free text naming the controller host, for the agent's log
	Nonce      []byte `json:"nonce"`      // NonceSize random bytes
}

// Challenge answers Hello (agent -> controller) and proves the agent holds
// the token.
type Challenge struct {
	Version int    `json:"version"`
	Agent   string `json:"agent"` // agent name
	Nonce   []byte `json:"nonce"` // NonceSize random bytes
	Proof   []byte `json:"proof"` // HMAC over both nonces, see the package doc
}

// Auth is the controller's answer to the challenge.
type Auth struct {
	MAC []byte `json:"mac"`
}

// AgentInfo describes an agent process.
type AgentInfo struct {
	Name      string   `json:"name"`
	Hostname  string   `json:"hostname"`
	Version   string   `json:"version"`
	GoVersion string   `json:"go_version"`
	OS        string   `json:"os"`
	Arch      string   `json:"arch"`
	PID       int      `json:"pid"`
	Listen    string   `json:"listen"`
	Roles     []string `json:"roles"` // role names this agent can run
}

// Welcome ends a successful handshake (agent -> controller).
type Welcome struct {
	Agent AgentInfo `json:"agent"`
}

// Scenario pushes the run to an agent: the file given to `berun run` and the
// run's timing.
type Scenario struct {
	RunID      string `json:"run_id"`
	Name       string `json:"name"`
	File       string `json:"file"`   // base name of the file, for logs
	Raw        []byte `json:"raw"`    // the file itself (at most MaxScenario)
	SHA256     []byte `json:"sha256"` // of Raw
	DurationNS int64  `json:"duration_ns"`
	GraceNS    int64  `json:"grace_ns"` // after the duration, before roles are cancelled
}

// RoleSpec is one role instance assigned to a host.
type RoleSpec struct {
	ID     string            `json:"id"`              // unique in the run
	Role   string            `json:"role"`            // registered role name
	Bind   string            `json:"bind"`            // IP:port this instance listens on if it accepts connections (port 0: any)
	Peers  []string          `json:"peers,omitempty"` // instances it connects to
	From   []string          `json:"from,omitempty"`  // instances that name it in their peers
	Params map[string]string `json:"params,omitempty"`
}

// CounterConfig says which NIC counters an agent reads around the run.
type CounterConfig struct {
	Skip        bool     `json:"skip,omitempty"`
	Netdevs     []string `json:"netdevs,omitempty"`      // for ethtool -S and the ecn sysfs; empty: the data address's interface (plain names, CheckDevice)
	RDMADevices []string `json:"rdma_devices,omitempty"` // under /sys/class/infiniband; empty: all (plain names, CheckDevice)
}

// Assign gives a host its roles (controller -> agent).
type Assign struct {
	RunID    string        `json:"run_id"`
	Host     string        `json:"host"`
	DataAddr string        `json:"data_addr"` // IP:port; port 0 lets roles pick
	Roles    []RoleSpec    `json:"roles"`
	Counters CounterConfig `json:"counters"`
}

// Ready reports that the host's roles are prepared (agent -> controller).
type Ready struct {
	RunID string            `json:"run_id"`
	Bound map[string]string `json:"bound"` // instance ID -> address its peers reach it at ("" if it accepts nothing)
}

// Peer is one role instance as other instances see it.
type Peer struct {
	ID   string `json:"id"`
	Role string `json:"role"`
	Host string `json:"host"`
	Addr string `json:"addr,omitempty"` // where it accepts data connections
}

// Start starts the host's roles at AtUnixNano on the agent's clock (the
// controller converts with the clock offset it measured).
type Start struct {
	RunID      string `json:"run_id"`
	AtUnixNano int64  `json:"at_unix_nano"`
	Peers      []Peer `json:"peers"`
}

// Heartbeat keeps both sides live. The controller sends SentNS on its clock;
// the agent answers with EchoNS = that value and SentNS on its own clock,
// which gives the controller RTT and clock-offset samples.
type Heartbeat struct {
	Seq    uint64 `json:"seq"`
	SentNS int64  `json:"sent_ns"`
	EchoNS int64  `json:"echo_ns,omitempty"`
	Phase  string `json:"phase,omitempty"` // agent: idle, prepared, waiting, running, reporting
}

// RoleResult is what one role instance produced.
type RoleResult struct {
	ID         string             `json:"id"`
	Role       string             `json:"role"`
	Status     string             `json:"status"` // "ok" or "error"
	Error      string             `json:"error,omitempty"`
	StartedNS  int64              `json:"started_ns"`  // agent clock, Unix ns
	FinishedNS int64              `json:"finished_ns"` // agent clock, Unix ns
	Metrics    map[string]float64 `json:"metrics,omitempty"`
	Detail     json.RawMessage    `json:"detail,omitempty"`
	Notes      []string           `json:"notes,omitempty"`
}

// Result is a host's results (agent -> controller).
type Result struct {
	RunID    string          `json:"run_id"`
	Roles    []RoleResult    `json:"roles"`
	Counters json.RawMessage `json:"counters,omitempty"` // a counters.Report
	Notes    []string        `json:"notes,omitempty"`
}

// Abort stops a run (controller -> agent); the agent cancels its roles and
// still uploads what they produced.
type Abort struct {
	RunID  string `json:"run_id"`
	Reason string `json:"reason"`
}

// ErrorMsg refuses something; the sender closes the connection after it.
type ErrorMsg struct {
	Code   string `json:"code"` // short identifier: auth, busy, protocol, role, ...
	Reason string `json:"reason"`
}

func (*Hello) Type() Type         { return TypeHello }
func (*Challenge) Type() Type     { return TypeChallenge }
func (*Auth) Type() Type          { return TypeAuth }
func (*Welcome) Type() Type       { return TypeWelcome }
func (*Scenario) Type() Type      { return TypeScenario }
func (*Assign) Type() Type        { return TypeAssign }
func (*Ready) Type() Type         { return TypeReady }
func (*Start) Type() Type         { return TypeStart }
func (*Heartbeat) Type() Type     { return TypeHeartbeat }
func (*Result) Type() Type        { return TypeResult }
func (*Abort) Type() Type         { return TypeAbort }
func (*ErrorMsg) Type() Type      { return TypeError }
func (m *ErrorMsg) Error() string { return fmt.Sprintf("peer refused (%s): %s", m.Code, m.Reason) }

func newMessage(t Type) Message {
	switch t {
	case TypeHello:
		return new(Hello)
	case TypeChallenge:
		return new(Challenge)
	case TypeAuth:
		return new(Auth)
	case TypeWelcome:
		return new(Welcome)
	case TypeScenario:
		return new(Scenario)
	case TypeAssign:
		return new(Assign)
	case TypeReady:
		return new(Ready)
	case TypeStart:
		return new(Start)
	case TypeHeartbeat:
		return new(Heartbeat)
	case TypeResult:
		return new(Result)
	case TypeAbort:
		return new(Abort)
	case TypeError:
		return new(ErrorMsg)
	}
	return nil
}

func (m *Hello) Validate() error {
	if m.Version != Version {
		return fmt.Errorf("version %d, this build speaks %d", m.Version, Version)
	}
	if err := checkText("controller", m.Controller, MaxAddr); err != nil {
		return err
	}
	return checkBytes("nonce", m.Nonce, NonceSize)
}

func (m *Challenge) Validate() error {
	if m.Version != Version {
		return fmt.Errorf("version %d, this build speaks %d", m.Version, Version)
	}
	if err := CheckName("agent", m.Agent); err != nil {
		return err
	}
	if err := checkBytes("nonce", m.Nonce, NonceSize); err != nil {
		return err
	}
	return checkBytes("proof", m.Proof, MACSize)
}

func (m *Auth) Validate() error { return checkBytes("mac", m.MAC, MACSize) }

func (m *Welcome) Validate() error {
	a := m.Agent
	if err := CheckName("agent.name", a.Name); err != nil {
		return err
	}
	for what, s := range map[string]string{"agent.hostname": a.Hostname, "agent.version": a.Version,
		"agent.go_version": a.GoVersion, "agent.os": a.OS, "agent.arch": a.Arch, "agent.listen": a.Listen} {
		if err := checkText(what, s, MaxAddr); err != nil {
			return err
		}
	}
	if a.PID < 0 {
		return fmt.Errorf("agent.pid %d", a.PID)
	}
	return checkNames("agent.roles", a.Roles, MaxRoles)
}

func (m *Scenario) Validate() error {
	if err := checkRunID(m.RunID); err != nil {
		return err
	}
	if err := CheckName("name", m.Name); err != nil {
		return err
	}
	if err := checkText("file", m.File, MaxAddr); err != nil {
		return err
	}
	if len(m.Raw) > MaxScenario {
		return fmt.Errorf("raw: %d bytes, at most %d", len(m.Raw), MaxScenario)
	}
	if err := checkBytes("sha256", m.SHA256, 32); err != nil {
		return err
	}
	// The digest is what the controller records for the run: the agent
	// runs exactly those bytes or nothing.
	if sum := sha256.Sum256(m.Raw); !bytes.Equal(sum[:], m.SHA256) {
		return fmt.Errorf("sha256: %x is not the digest of the %d raw bytes sent (%x)", m.SHA256, len(m.Raw), sum)
	}
	if err := checkDuration("duration_ns", m.DurationNS, false); err != nil {
		return err
	}
	return checkDuration("grace_ns", m.GraceNS, true)
}

// Validate checks one role instance.
func (s *RoleSpec) Validate() error {
	if err := CheckName("id", s.ID); err != nil {
		return err
	}
	if err := CheckName("role", s.Role); err != nil {
		return err
	}
	if err := checkNames("peers", s.Peers, MaxPeers); err != nil {
		return err
	}
	if err := CheckAddr("bind", s.Bind); err != nil {
		return err
	}
	if err := checkNames("from", s.From, MaxPeers); err != nil {
		return err
	}
	if len(s.Params) > MaxParams {
		return fmt.Errorf("params: %d entries, at most %d", len(s.Params), MaxParams)
	}
	for k, v := range s.Params {
		if err := CheckName("params key", k); err != nil {
			return err
		}
		if err := checkText("params."+k, v, MaxParamValue); err != nil {
			return err
		}
	}
	return nil
}

func (m *Assign) Validate() error {
	if err := checkRunID(m.RunID); err != nil {
		return err
	}
	if err := CheckName("host", m.Host); err != nil {
		return err
	}
	if err := CheckAddr("data_addr", m.DataAddr); err != nil {
		return err
	}
	if len(m.Roles) == 0 || len(m.Roles) > MaxRoles {
		return fmt.Errorf("roles: %d entries, want 1..%d", len(m.Roles), MaxRoles)
	}
	seen := map[string]bool{}
	for i := range m.Roles {
		if err := m.Roles[i].Validate(); err != nil {
			return fmt.Errorf("roles[%d]: %w", i, err)
		}
		if seen[m.Roles[i].ID] {
			return fmt.Errorf("roles: id %q twice", m.Roles[i].ID)
		}
		seen[m.Roles[i].ID] = true
	}
	if err := checkDevices("counters.netdevs", m.Counters.Netdevs, 64, MaxNetdev); err != nil {
		return err
	}
	return checkDevices("counters.rdma_devices", m.Counters.RDMADevices, 64, MaxRDMADevice)
}

func (m *Ready) Validate() error {
	if err := checkRunID(m.RunID); err != nil {
		return err
	}
	if len(m.Bound) > MaxRoles {
		return fmt.Errorf("bound: %d entries, at most %d", len(m.Bound), MaxRoles)
	}
	for id, a := range m.Bound {
		if err := CheckName("bound id", id); err != nil {
			return err
		}
		if a != "" {
			if err := CheckAddr("bound."+id, a); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *Start) Validate() error {
	if err := checkRunID(m.RunID); err != nil {
		return err
	}
	if m.AtUnixNano <= 0 {
		return fmt.Errorf("at_unix_nano %d", m.AtUnixNano)
	}
	if len(m.Peers) > MaxPeers {
		return fmt.Errorf("peers: %d entries, at most %d", len(m.Peers), MaxPeers)
	}
	seen := make(map[string]bool, len(m.Peers))
	for i, p := range m.Peers {
		if err := CheckName(fmt.Sprintf("peers[%d].id", i), p.ID); err != nil {
			return err
		}
		if seen[p.ID] {
			return fmt.Errorf("peers: id %q twice", p.ID)
		}
		seen[p.ID] = true
		if err := CheckName(fmt.Sprintf("peers[%d].role", i), p.Role); err != nil {
			return err
		}
		if err := CheckName(fmt.Sprintf("peers[%d].host", i), p.Host); err != nil {
			return err
		}
		if p.Addr != "" {
			if err := CheckAddr(fmt.Sprintf("peers[%d].addr", i), p.Addr); err != nil {
				return err
			}
		}
	}
	return nil
}

// Agent phases reported in heartbeats.
var phases = map[string]bool{"": true, "idle": true, "prepared": true, "waiting": true, "running": true, "reporting": true}

func (m *Heartbeat) Validate() error {
	if m.SentNS < 0 || m.EchoNS < 0 {
		return errors.New("negative time")
	}
	if !phases[m.Phase] {
		return fmt.Errorf("phase %q unknown", clip(m.Phase))
	}
	return nil
}

// Validate checks one role result.
func (r *RoleResult) Validate() error {
	if err := CheckName("id", r.ID); err != nil {
		return err
	}
	if err := CheckName("role", r.Role); err != nil {
		return err
	}
	if r.Status != "ok" && r.Status != "error" {
		return fmt.Errorf("status %q, want ok or error", clip(r.Status))
	}
	if err := checkText("error", r.Error, MaxText); err != nil {
		return err
	}
	if r.StartedNS < 0 || r.FinishedNS < 0 {
		return errors.New("negative time")
	}
	if len(r.Metrics) > MaxMetrics {
		return fmt.Errorf("metrics: %d entries, at most %d", len(r.Metrics), MaxMetrics)
	}
	for k, v := range r.Metrics {
		if err := CheckName("metric", k); err != nil {
			return err
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("metric %s is %v", k, v)
		}
	}
	if len(r.Detail) > MaxDetail {
		return fmt.Errorf("detail: %d bytes, at most %d", len(r.Detail), MaxDetail)
	}
	if len(r.Detail) > 0 && !json.Valid(r.Detail) {
		return errors.New("detail: not valid JSON")
	}
	return checkNotes("notes", r.Notes)
}

func (m *Result) Validate() error {
	if err := checkRunID(m.RunID); err != nil {
		return err
	}
	if len(m.Roles) > MaxRoles {
		return fmt.Errorf("roles: %d entries, at most %d", len(m.Roles), MaxRoles)
	}
	for i := range m.Roles {
		if err := m.Roles[i].Validate(); err != nil {
			return fmt.Errorf("roles[%d]: %w", i, err)
		}
	}
	if len(m.Counters) > MaxCounters {
		return fmt.Errorf("counters: %d bytes, at most %d", len(m.Counters), MaxCounters)
	}
	if len(m.Counters) > 0 && !json.Valid(m.Counters) {
		return errors.New("counters: not valid JSON")
	}
	return checkNotes("notes", m.Notes)
}

func (m *Abort) Validate() error {
	if err := checkRunID(m.RunID); err != nil {
		return err
	}
	return checkText("reason", m.Reason, MaxText)
}

func (m *ErrorMsg) Validate() error {
	if err := CheckName("code", m.Code); err != nil {
		return err
	}
	return checkText("reason", m.Reason, MaxText)
}
