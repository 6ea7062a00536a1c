package wire

import (
	"bytes"
	"fmt"
	"os"

	"github.com/besim/besim/internal/fileio"
)

// Token bounds and source.
const (
	EnvToken    = "BERUN_TOKEN"
	MinTokenLen = 16
	MaxTokenLen = 4096
)

// Token is the shared secret of controller and agents.
type Token struct {
	Secret []byte
	// Source says where it came from: "file PATH" or "$BERUN_TOKEN".
	Source string
	// Warning is non-empty when the source is risky (a token file that
	// others can read).
	Warning string
}

// LoadToken reads the token from file, or from $BERUN_TOKEN when file is
// empty. Surrounding white space (a trailing newline) is dropped; the rest
// must be MinTokenLen..MaxTokenLen bytes.
func LoadToken(file string) (*Token, error) {
	t := &Token{}
	if file != "" {
		// Stat first (a FIFO would block the open) and read a regular
		// file only, up to a bound.
		st, err := os.Stat(file)
		if err != nil {
			return nil, fmt.Errorf("token file: %w", err)
		}
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("token file %s is not a regular file", file)
		}
		if st.Mode().Perm()&0o077 != 0 {
			t.Warning = fmt.Sprintf("token file %s is readable by others (mode %v); chmod 600 it", file, st.Mode().Perm())
		}
		b, err := fileio.ReadFile(file, 4*MaxTokenLen, "token file")
		if err != nil {
			return nil, fmt.Errorf("token file: %w", err)
		}
		t.Secret, t.Source = bytes.TrimSpace(b), "file "+file
	} else {
		v, ok := os.LookupEnv(EnvToken)
		if !ok {
			return nil, fmt.Errorf("no token: give --token-file FILE or set %s (at least %d bytes; e.g. head -c 32 /dev/urandom | base64 > berun.token)", EnvToken, MinTokenLen)
		}
		t.Secret, t.Source = bytes.TrimSpace([]byte(v)), "$"+EnvToken
	}
	if n := len(t.Secret); n < MinTokenLen || n > MaxTokenLen {
		return nil, fmt.Errorf("token from %s is %d bytes, want %d..%d", t.Source, n, MinTokenLen, MaxTokenLen)
	}
	return t, nil
}
