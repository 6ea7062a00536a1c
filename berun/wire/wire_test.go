package wire

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func n32(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func sum(b []byte) []byte { s := sha256.Sum256(b); return s[:] }

// samples returns one valid message of every type.
func samples() []Message {
	return []Message{
		&Hello{Version: Version, Controller: "ctl-1", Nonce: n32(1)},
		&Challenge{Version: Version, Agent: "h1", Nonce: n32(2), Proof: n32(3)},
		&Auth{MAC: n32(4)},
		&Welcome{Agent: AgentInfo{Name: "h1", Hostname: "box", Version: "dev", GoVersion: "go1.26", OS: "linux", Arch: "amd64", PID: 42, Listen: "127.0.0.1:7000", Roles: []string{"tcp-bulk", "tcp-echo"}}},
		&Scenario{RunID: "r1", Name: "smoke", File: "smoke.yaml", Raw: []byte("name: smoke\n"), SHA256: sum([]byte("name: smoke\n")), DurationNS: int64(time.Second), GraceNS: int64(5 * time.Second)},
		&Assign{RunID: "r1", Host: "h1", DataAddr: "127.0.0.1:0", Roles: []RoleSpec{{ID: "sink", Role: "tcp-bulk", Bind: "127.0.0.1:0", From: []string{"send"}, Params: map[string]string{"mode": "sink"}}}, Counters: CounterConfig{Netdevs: []string{"eth0"}}},
		&Ready{RunID: "r1", Bound: map[string]string{"sink": "127.0.0.1:4000", "send": ""}},
		&Start{RunID: "r1", AtUnixNano: 1, Peers: []Peer{{ID: "sink", Role: "tcp-bulk", Host: "h2", Addr: "10.0.0.2:4000"}}},
		&Heartbeat{Seq: 7, SentNS: 100, EchoNS: 99, Phase: "running"},
		&Result{RunID: "r1", Roles: []RoleResult{{ID: "sink", Role: "tcp-bulk", Status: "ok", StartedNS: 1, FinishedNS: 2, Metrics: map[string]float64{"bytes": 1e9}, Detail: json.RawMessage(`{"peers":{"send":3}}`), Notes: []string{"n"}}}, Counters: json.RawMessage(`{"absent":{"infiniband":"no /sys/class/infiniband"}}`)},
		&Abort{RunID: "r1", Reason: "operator interrupt"},
		&ErrorMsg{Code: "busy", Reason: "another controller holds this agent"},
	}
}

func TestRoundTrip(t *testing.T) {
	var stream bytes.Buffer
	for _, m := range samples() {
		b, err := Encode(m)
		if err != nil {
			t.Fatalf("%v: %v", m.Type(), err)
		}
		got, n, err := Decode(b)
		if err != nil || n != len(b) {
			t.Fatalf("%v: decode: n=%d/%d %v", m.Type(), n, len(b), err)
		}
		b2, _ := Encode(got)
		if !bytes.Equal(b, b2) {
			t.Fatalf("%v: re-encoding differs:\n%s\n%s", m.Type(), b, b2)
		}
		stream.Write(b)
	}
	d := NewDecoder(&stream)
	for _, want := range samples() {
		m, err := d.Next()
		if err != nil || m.Type() != want.Type() {
			t.Fatalf("stream: %v %v, want %v", m, err, want.Type())
		}
	}
	if _, err := d.Next(); err != io.EOF {
		t.Fatalf("end of stream: %v, want io.EOF", err)
	}
}

// failReader fails the test if more than limit bytes are read.
type failReader struct {
	t     *testing.T
	r     io.Reader
	limit int
}

func (f *failReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	f.limit -= n
	if f.limit < 0 {
		f.t.Fatalf("decoder read %d bytes past the header", -f.limit)
	}
	return n, err
}

func frame(magic string, ver byte, t Type, n uint32, payload string) []byte {
	b := append([]byte(magic), ver, byte(t))
	b = append(b, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	return append(b, payload...)
}

func TestRefusals(t *testing.T) {
	hello, _ := Encode(samples()[0])
	cases := []struct {
		name  string
		in    []byte
		only  []Type
		want  error
		words string
	}{
		{"magic", frame("XX", 1, TypeHello, 2, "{}"), nil, ErrBadMagic, "magic"},
		{"version", frame("BR", 9, TypeHello, 2, "{}"), nil, ErrVersion, "version 9"},
		{"unknown type", frame("BR", 1, 99, 2, "{}"), nil, ErrUnknownType, "99"},
		{"oversize hello", frame("BR", 1, TypeHello, 4<<10+1, ""), nil, ErrOversize, "at most 4096"},
		{"oversize result", frame("BR", 1, TypeResult, MaxPayload+1, ""), nil, ErrOversize, "at most"},
		{"max uint32", frame("BR", 1, TypeResult, 0xffffffff, ""), nil, ErrOversize, ""},
		{"not allowed before auth", frame("BR", 1, TypeResult, 1000, ""), []Type{TypeHello}, ErrNotAllowed, "result"},
		{"unknown field", frame("BR", 1, TypeAbort, 29, `{"run_id":"r","reason":"","x":1}`[:29]), nil, ErrMalformed, ""},
		{"unknown field2", frame("BR", 1, TypeAbort, 34, `{"run_id":"r","reason":"","x":1}  `), nil, ErrMalformed, "unknown field"},
		{"trailing", frame("BR", 1, TypeAbort, 30, `{"run_id":"r","reason":""} {} `), nil, ErrMalformed, "after the message"},
		{"bad nonce", frame("BR", 1, TypeAuth, 14, `{"mac":"AAAA"}`), nil, ErrMalformed, "mac: 3 bytes"},
		{"bad run id", frame("BR", 1, TypeAbort, 27, `{"run_id":"../x","reason":""}`[:27]), nil, ErrMalformed, ""},
		{"truncated payload", hello[:len(hello)-3], nil, ErrMalformed, "inside"},
		{"truncated header", hello[:5], nil, ErrMalformed, "header"},
		{"not json", frame("BR", 1, TypeHeartbeat, 3, "abc"), nil, ErrMalformed, ""},
		{"negative duration", frame("BR", 1, TypeScenario, 0, ""), nil, ErrMalformed, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := NewDecoder(&failReader{t: t, r: bytes.NewReader(c.in), limit: max(len(c.in), HeaderSize) + 1})
			if c.want == ErrOversize || c.want == ErrNotAllowed {
				d = NewDecoder(&failReader{t: t, r: bytes.NewReader(append(c.in, make([]byte, 64)...)), limit: HeaderSize})
			}
			d.Only(c.only...)
			_, err := d.Next()
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			if !strings.Contains(err.Error(), c.words) {
				t.Fatalf("reason %q does not say %q", err, c.words)
			}
			if c.only == nil {
				if _, _, err2 := Decode(c.in); !errors.Is(err2, c.want) {
					t.Fatalf("Decode: %v, stream decoder said %v", err2, err)
				}
			}
		})
	}
}

func TestValidateBounds(t *testing.T) {
	long := strings.Repeat("a", MaxName+1)
	bad := []Message{
		&Hello{Version: 2, Nonce: n32(1)},
		&Hello{Version: 1, Nonce: n32(1)[:31]},
		&Challenge{Version: 1, Agent: long, Nonce: n32(1), Proof: n32(1)},
		&Scenario{RunID: "r", Name: "n", SHA256: sum(nil), DurationNS: 0},
		&Scenario{RunID: "r", Name: "n", SHA256: sum(nil), DurationNS: int64(25 * time.Hour)},
		&Scenario{RunID: "r", Name: "n", SHA256: sum(make([]byte, MaxScenario+1)), DurationNS: 1, Raw: make([]byte, MaxScenario+1)},
		// The digest must be the raw bytes' own.
		&Scenario{RunID: "r", Name: "n", SHA256: n32(1), DurationNS: 1, Raw: []byte("name: n\n")},
		&Scenario{RunID: "r", Name: "n", SHA256: sum([]byte("name: m\n")), DurationNS: 1, Raw: []byte("name: n\n")},
		// Device names are plain: they become sysfs path components.
		&Assign{RunID: "r", Host: "h", DataAddr: "1.2.3.4:1", Roles: []RoleSpec{{ID: "a", Role: "b", Bind: "1.2.3.4:0"}},
			Counters: CounterConfig{Netdevs: []string{"../../../tmp/x"}}},
		&Assign{RunID: "r", Host: "h", DataAddr: "1.2.3.4:1", Roles: []RoleSpec{{ID: "a", Role: "b", Bind: "1.2.3.4:0"}},
			Counters: CounterConfig{Netdevs: []string{"eth0/ecn"}}},
		&Assign{RunID: "r", Host: "h", DataAddr: "1.2.3.4:1", Roles: []RoleSpec{{ID: "a", Role: "b", Bind: "1.2.3.4:0"}},
			Counters: CounterConfig{Netdevs: []string{".."}}},
		&Assign{RunID: "r", Host: "h", DataAddr: "1.2.3.4:1", Roles: []RoleSpec{{ID: "a", Role: "b", Bind: "1.2.3.4:0"}},
			Counters: CounterConfig{Netdevs: []string{"a-name-longer-than-15"}}},
		&Assign{RunID: "r", Host: "h", DataAddr: "1.2.3.4:1", Roles: []RoleSpec{{ID: "a", Role: "b", Bind: "1.2.3.4:0"}},
			Counters: CounterConfig{RDMADevices: []string{"mlx5_0/../../x"}}},
		&Assign{RunID: "r", Host: "h", DataAddr: "nohost", Roles: []RoleSpec{{ID: "a", Role: "b", Bind: "1.2.3.4:0"}}},
		&Assign{RunID: "r", Host: "h", DataAddr: "1.2.3.4:99999", Roles: []RoleSpec{{ID: "a", Role: "b", Bind: "1.2.3.4:0"}}},
		&Assign{RunID: "r", Host: "h", DataAddr: "1.2.3.4:1", Roles: nil},
		&Assign{RunID: "r", Host: "h", DataAddr: "1.2.3.4:1", Roles: []RoleSpec{{ID: "a", Role: "b", Bind: "1.2.3.4:0"}, {ID: "a", Role: "b", Bind: "1.2.3.4:0"}}},
		&Assign{RunID: "r", Host: "h", DataAddr: "1.2.3.4:1", Roles: []RoleSpec{{ID: "a", Role: "b", Bind: "1.2.3.4:0", Params: map[string]string{"k": strings.Repeat("v", MaxParamValue+1)}}}},
		&Start{RunID: "r", AtUnixNano: 0},
		&Heartbeat{Phase: "dancing"},
		&Result{RunID: "r", Roles: []RoleResult{{ID: "a", Role: "b", Status: "maybe"}}},
		&Result{RunID: "r", Roles: []RoleResult{{ID: "a", Role: "b", Status: "ok", Detail: json.RawMessage("{")}}},
		&ErrorMsg{Code: "", Reason: "x"},
		&ErrorMsg{Code: "c", Reason: "\xff"},
	}
	for _, m := range bad {
		if err := m.Validate(); err == nil {
			t.Errorf("%v %+v: accepted", m.Type(), m)
		}
		if _, err := Encode(m); err == nil {
			t.Errorf("%v: Encode accepted an invalid message", m.Type())
		}
	}
}

func pipe(t *testing.T) (*Conn, *Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ch := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		ch <- c
	}()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b := <-ch
	t.Cleanup(func() { a.Close(); b.Close() })
	return NewConn(a), NewConn(b)
}

func TestHandshake(t *testing.T) {
	tok := []byte("0123456789abcdef-shared")
	welcome := &Welcome{Agent: AgentInfo{Name: "h1"}}
	for _, c := range []struct {
		name        string
		ctl, agent  []byte
		wantCtlErr  bool
		wantSrvAuth bool
	}{
		{"same token", tok, tok, false, false},
		{"controller wrong", []byte("wrong-token-000000"), tok, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl, sv := pipe(t)
			srvErr := make(chan error, 1)
			go func() {
				_, err := sv.ServerHandshake(c.agent, "h1", welcome, 2*time.Second)
				srvErr <- err
			}()
			w, err := cl.ClientHandshake(c.ctl, "ctl", 2*time.Second)
			if c.wantCtlErr {
				if !errors.Is(err, ErrAuth) {
					t.Fatalf("controller: %v, want ErrAuth", err)
				}
				// The agent's proof fails at the controller first, so the
				// agent only sees the connection go away.
				cl.Close()
				if err := <-srvErr; err == nil {
					t.Fatal("agent accepted a controller with a different token")
				}
				return
			}
			if err != nil || w.Agent.Name != "h1" {
				t.Fatalf("controller: %v %v", w, err)
			}
			if err := <-srvErr; err != nil {
				t.Fatalf("agent: %v", err)
			}
		})
	}
}

// TestHandshakeForgedAuth plays a controller that does not know the token
// and answers with a guessed MAC: the agent must refuse with an auth error.
func TestHandshakeForgedAuth(t *testing.T) {
	cl, sv := pipe(t)
	srvErr := make(chan error, 1)
	go func() {
		_, err := sv.ServerHandshake([]byte("0123456789abcdef-shared"), "h1", &Welcome{Agent: AgentInfo{Name: "h1"}}, 2*time.Second)
		srvErr <- err
	}()
	if err := cl.Send(&Hello{Version: Version, Nonce: n32(9)}); err != nil {
		t.Fatal(err)
	}
	if m, err := cl.Recv(time.Second, TypeChallenge); err != nil || m.Type() != TypeChallenge {
		t.Fatalf("challenge: %v %v", m, err)
	}
	if err := cl.Send(&Auth{MAC: n32(7)}); err != nil {
		t.Fatal(err)
	}
	m, err := cl.Recv(time.Second)
	if e, ok := m.(*ErrorMsg); err != nil || !ok || e.Code != "auth" {
		t.Fatalf("want an auth ErrorMsg, got %v %v", m, err)
	}
	if err := <-srvErr; !errors.Is(err, ErrAuth) {
		t.Fatalf("agent: %v, want ErrAuth", err)
	}
}

// TestHandshakeSilentPeer: a peer that connects and sends nothing is
// dropped after the handshake timeout.
func TestHandshakeSilentPeer(t *testing.T) {
	_, sv := pipe(t)
	// Returning with an error is the check; how fast is not asserted.
	_, err := sv.ServerHandshake([]byte("0123456789abcdef"), "h1", &Welcome{Agent: AgentInfo{Name: "h1"}}, 200*time.Millisecond)
	if err == nil {
		t.Fatal("silent peer: no error")
	}
}

func TestLoadToken(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "tok")
	os.WriteFile(good, []byte("  0123456789abcdef0123\n"), 0o600)
	open := filepath.Join(dir, "open")
	os.WriteFile(open, []byte("0123456789abcdef0123"), 0o644)
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("abc\n"), 0o600)

	tk, err := LoadToken(good)
	if err != nil || string(tk.Secret) != "0123456789abcdef0123" || tk.Warning != "" {
		t.Fatalf("good: %+v %v", tk, err)
	}
	if tk, err := LoadToken(open); err != nil || tk.Warning == "" {
		t.Fatalf("world-readable: want a warning, got %+v %v", tk, err)
	}
	if _, err := LoadToken(short); err == nil || !strings.Contains(err.Error(), "3 bytes") {
		t.Fatalf("short: %v", err)
	}
	if _, err := LoadToken(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("missing file accepted")
	}
	t.Setenv(EnvToken, "env-token-0123456789")
	if tk, err := LoadToken(""); err != nil || string(tk.Secret) != "env-token-0123456789" || tk.Source != "$BERUN_TOKEN" {
		t.Fatalf("env: %+v %v", tk, err)
	}
	os.Unsetenv(EnvToken)
	if _, err := LoadToken(""); err == nil || !strings.Contains(err.Error(), "--token-file") {
		t.Fatalf("no token: %v", err)
	}
}

func TestDeviceNamesAndWildcards(t *testing.T) {
	for _, ok := range []string{"eth0", "enp1s0f0np0", "ib0.8001", "mlx5_0", "bond-1"} {
		if err := CheckDevice("netdev", ok, MaxNetdev); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "../x", "eth0/ecn", "/sys", "-eth", ".eth", "eth 0", "eth0:1", "abcdefghijklmnop"} {
		if err := CheckDevice("netdev", bad, MaxNetdev); err == nil || !strings.Contains(err.Error(), "plain device name") {
			t.Errorf("%q: %v, want refused as not a plain device name", bad, err)
		}
	}
	for h, want := range map[string]bool{"": true, "0.0.0.0": true, "::": true, "0:0::0": true, "127.0.0.1": false, "10.0.0.1": false, "::1": false, "example.com": false} {
		if IsWildcard(h) != want {
			t.Errorf("IsWildcard(%q) = %v", h, !want)
		}
	}
}
