package realtime

import (
	"bytes"
	"testing"

	"github.com/besim/besim/byteexpress"
)

// FuzzReadRequest: the exchange decoder never panics, never reads past
// what a request may hold, and round-trips what the dialer writes.
func FuzzReadRequest(f *testing.F) {
	good := append([]byte(exchangeMagic), 1, 'a')
	good = append(good, make([]byte, byteexpress.ConnInfoSize)...)
	f.Add(good)
	f.Add([]byte("BEX1\xff"))
	f.Add([]byte("GET / HTTP/1.0\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		from, _, err := readRequest(r)
		if read := len(b) - r.Len(); read > len(exchangeMagic)+1+maxAddr+byteexpress.ConnInfoSize {
			t.Fatalf("read %d bytes", read)
		}
		if err == nil && (len(from) == 0 || len(from) > maxAddr) {
			t.Fatalf("accepted address %q", from)
		}
		_, _ = readReply(bytes.NewReader(b))
	})
}
