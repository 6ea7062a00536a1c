package wire

import (
	"bytes"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to the frame decoder. It must never
// panic or read past the declared length; whatever it accepts must satisfy
// its bounds and re-encode to a frame that decodes to the same encoding.
func FuzzDecode(f *testing.F) {
	for _, m := range samples() {
		b, err := Encode(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
		bad := bytes.Clone(b)
		bad[HeaderSize+1] ^= 0x20
		f.Add(bad)
	}
	f.Add([]byte{})
	f.Add(frame("BR", 1, TypeHello, 0xffffffff, ""))
	f.Add(frame("BR", 1, TypeResult, 2, "{}"))
	f.Add(frame("BR", 1, TypeAssign, 4, "null"))
	f.Add(frame("BR", 1, TypeReady, 33, `{"run_id":"r","bound":{"a":"::1"}}`))
	f.Add(frame("BR", 1, TypeHeartbeat, 21, `{"seq":-1,"phase":""}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, n, err := Decode(data)
		if err != nil {
			if m != nil || n != 0 {
				t.Fatalf("error %v with message %v, n %d", err, m, n)
			}
			return
		}
		if n < HeaderSize || n > len(data) || n-HeaderSize > m.Type().MaxPayload() {
			t.Fatalf("used %d of %d bytes for a %v", n, len(data), m.Type())
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("accepted an invalid %v: %v", m.Type(), err)
		}
		b1, err := Encode(m)
		if err != nil {
			t.Fatalf("cannot re-encode accepted %v: %v", m.Type(), err)
		}
		m2, n2, err := Decode(b1)
		if err != nil || n2 != len(b1) {
			t.Fatalf("re-encoded %v does not decode: %v", m.Type(), err)
		}
		b2, err := Encode(m2)
		if err != nil || !bytes.Equal(b1, b2) {
			t.Fatalf("%v encoding not stable:\n%q\n%q", m.Type(), b1, b2)
		}
		// The stream decoder agrees with Decode.
		sm, err := NewDecoder(bytes.NewReader(data)).Next()
		if err != nil || sm.Type() != m.Type() {
			t.Fatalf("stream decoder: %v %v, Decode said %v", sm, err, m.Type())
		}
	})
}
