package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Frame layout constants.
const (
	// HeaderSize is the fixed frame header: magic (2), version (1), type
	// (1), payload length (4, big-endian).
	HeaderSize = 8
	// Version is the protocol version this build speaks.
	Version = 1
	// MaxPayload is the hard bound on any frame's payload; each type has a
	// smaller or equal bound of its own (Type.MaxPayload).
	MaxPayload = 8 << 20
)

const magic0, magic1 = 'B', 'R'

// Type is a message type.
type Type uint8

// Message types, in the order a run uses them.
const (
	TypeHello     Type = 1  // controller -> agent: start of the handshake
	TypeChallenge Type = 2  // agent -> controller: nonce and the agent's proof
	TypeAuth      Type = 3  // controller -> agent: the controller's answer
	TypeWelcome   Type = 4  // agent -> controller: authenticated, agent info
	TypeScenario  Type = 5  // controller -> agent: the run's file and timing
	TypeAssign    Type = 6  // controller -> agent: the roles this host runs
	TypeReady     Type = 7  // agent -> controller: roles prepared, bound addresses
	TypeStart     Type = 8  // controller -> agent: start at time T, with peers
	TypeHeartbeat Type = 9  // both ways: liveness and clock-offset samples
	TypeResult    Type = 10 // agent -> controller: per-role results and counters
	TypeAbort     Type = 11 // controller -> agent: stop the run now
	TypeError     Type = 12 // either way: a refusal with a reason, then close
)

var typeInfo = map[Type]struct {
	name string
	max  int
}{
	TypeHello:     {"hello", 4 << 10},
	TypeChallenge: {"challenge", 4 << 10},
	TypeAuth:      {"auth", 4 << 10},
	TypeWelcome:   {"welcome", 64 << 10},
	TypeScenario:  {"scenario", 2 << 20},
	TypeAssign:    {"assign", 1 << 20},
	TypeReady:     {"ready", 256 << 10},
	TypeStart:     {"start", 1 << 20},
	TypeHeartbeat: {"heartbeat", 1 << 10},
	TypeResult:    {"result", MaxPayload},
	TypeAbort:     {"abort", 8 << 10},
	TypeError:     {"error", 8 << 10},
}

func (t Type) String() string {
	if i, ok := typeInfo[t]; ok {
		return i.name
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// MaxPayload is the largest payload a frame of type t may carry (0 for an
// unknown type).
func (t Type) MaxPayload() int { return typeInfo[t].max }

// Reasons a frame is refused. Errors returned by this package wrap one of
// them with the specifics.
var (
	ErrBadMagic    = errors.New("wire: not a berun control frame (bad magic)")
	ErrVersion     = errors.New("wire: protocol version mismatch")
	ErrUnknownType = errors.New("wire: unknown message type")
	ErrNotAllowed  = errors.New("wire: message type not allowed here")
	ErrOversize    = errors.New("wire: frame larger than allowed")
	ErrMalformed   = errors.New("wire: malformed message")
)

// parseHeader checks a frame header and returns the type and payload length.
func parseHeader(h []byte, allow func(Type) bool) (Type, int, error) {
	if h[0] != magic0 || h[1] != magic1 {
		return 0, 0, fmt.Errorf("%w: got %#02x %#02x", ErrBadMagic, h[0], h[1])
	}
	if h[2] != Version {
		return 0, 0, fmt.Errorf("%w: peer speaks version %d, this build %d", ErrVersion, h[2], Version)
	}
	t := Type(h[3])
	max := t.MaxPayload()
	if max == 0 {
		return 0, 0, fmt.Errorf("%w: %d", ErrUnknownType, h[3])
	}
	if allow != nil && !allow(t) {
		return 0, 0, fmt.Errorf("%w: %v", ErrNotAllowed, t)
	}
	n := binary.BigEndian.Uint32(h[4:8])
	if uint64(n) > uint64(max) {
		return 0, 0, fmt.Errorf("%w: %v frame of %d bytes, at most %d", ErrOversize, t, n, max)
	}
	return t, int(n), nil
}

// AppendHeader appends a frame header for a payload of n bytes of type t.
func AppendHeader(dst []byte, t Type, n int) []byte {
	dst = append(dst, magic0, magic1, Version, byte(t))
	return binary.BigEndian.AppendUint32(dst, uint32(n))
}

// Encode validates m and returns it as one frame.
func Encode(m Message) ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("wire: refusing to send an invalid %v: %w", m.Type(), err)
	}
	p, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("wire: encode %v: %w", m.Type(), err)
	}
	if len(p) > m.Type().MaxPayload() {
		return nil, fmt.Errorf("%w: %v payload of %d bytes, at most %d", ErrOversize, m.Type(), len(p), m.Type().MaxPayload())
	}
	out := make([]byte, 0, HeaderSize+len(p))
	out = AppendHeader(out, m.Type(), len(p))
	return append(out, p...), nil
}

// Decode decodes the one frame at the start of b and returns the message and
// the number of bytes it used. It never reads past the declared length and
// refuses a frame whose length exceeds its type's bound without looking at
// the payload.
func Decode(b []byte) (Message, int, error) {
	if len(b) < HeaderSize {
		return nil, 0, fmt.Errorf("%w: %d bytes, a header is %d", ErrMalformed, len(b), HeaderSize)
	}
	t, n, err := parseHeader(b[:HeaderSize], nil)
	if err != nil {
		return nil, 0, err
	}
	if len(b)-HeaderSize < n {
		return nil, 0, fmt.Errorf("%w: %v frame declares %d payload bytes, %d present", ErrMalformed, t, n, len(b)-HeaderSize)
	}
	m, err := Unmarshal(t, b[HeaderSize:HeaderSize+n])
	if err != nil {
		return nil, 0, err
	}
	return m, HeaderSize + n, nil
}

// Unmarshal decodes and validates the payload of a frame of type t.
func Unmarshal(t Type, p []byte) (Message, error) {
	m := newMessage(t)
	if m == nil {
		return nil, fmt.Errorf("%w: %d", ErrUnknownType, uint8(t))
	}
	if len(p) > t.MaxPayload() {
		return nil, fmt.Errorf("%w: %v payload of %d bytes, at most %d", ErrOversize, t, len(p), t.MaxPayload())
	}
	dec := json.NewDecoder(bytes.NewReader(p))
	dec.DisallowUnknownFields()
	if err := dec.Decode(m); err != nil {
		return nil, fmt.Errorf("%w: %v payload: %v", ErrMalformed, t, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: %v payload has data after the message", ErrMalformed, t)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v: %v", ErrMalformed, t, err)
	}
	return m, nil
}

// Decoder reads frames from a stream.
type Decoder struct {
	r     io.Reader
	hdr   [HeaderSize]byte
	allow func(Type) bool
}

// NewDecoder reads frames from r.
func NewDecoder(r io.Reader) *Decoder { return &Decoder{r: r} }

// Only restricts the types the decoder accepts from now on; a frame of
// another type is refused after its header, before its payload is read. No
// arguments lifts the restriction.
func (d *Decoder) Only(types ...Type) {
	if len(types) == 0 {
		d.allow = nil
		return
	}
	set := map[Type]bool{}
	for _, t := range types {
		set[t] = true
	}
	d.allow = func(t Type) bool { return set[t] }
}

// Next reads and decodes one message. io.EOF means the stream ended cleanly
// between frames; any other error leaves the stream unusable.
func (d *Decoder) Next() (Message, error) {
	if _, err := io.ReadFull(d.r, d.hdr[:]); err != nil {
		if err == io.ErrUnexpectedEOF {
			return nil, fmt.Errorf("%w: stream ended inside a frame header", ErrMalformed)
		}
		return nil, err
	}
	t, n, err := parseHeader(d.hdr[:], d.allow)
	if err != nil {
		return nil, err
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(d.r, p); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, fmt.Errorf("%w: stream ended inside a %v payload", ErrMalformed, t)
		}
		return nil, err
	}
	return Unmarshal(t, p)
}

// IsRefusal reports whether err is a refused frame (as opposed to an I/O
// error), whose reason should be logged and sent back.
func IsRefusal(err error) bool {
	for _, e := range []error{ErrBadMagic, ErrVersion, ErrUnknownType, ErrNotAllowed, ErrOversize, ErrMalformed} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
