package ibv

import (
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/besim/besim/verbs"
)

// exchangeMagic prefixes every QP info message, so that a connection to
// the wrong service fails loudly instead of yielding a garbage QP number.
const exchangeMagic = "BEQ1"

// ExchangeSize is the fixed size of one QP info message on the wire: a
// 4-byte magic and verbs.QPInfoSize bytes.
const ExchangeSize = len(exchangeMagic) + verbs.QPInfoSize

// DefaultExchangeTimeout bounds ExchangeQPInfo.
const DefaultExchangeTimeout = 10 * time.Second

// ExchangeQPInfo sends local to the peer and returns the peer's QPInfo,
// like perftest's out-of-band exchange: both sides call it on a connected
// stream (TCP), in any order. It reads exactly ExchangeSize bytes and
// gives up after DefaultExchangeTimeout.
func ExchangeQPInfo(conn net.Conn, local verbs.QPInfo) (verbs.QPInfo, error) {
	return ExchangeQPInfoTimeout(conn, local, DefaultExchangeTimeout)
}

// ExchangeQPInfoTimeout is ExchangeQPInfo with its own bound. It sets a
// deadline on conn and clears it before returning.
func ExchangeQPInfoTimeout(conn net.Conn, local verbs.QPInfo, timeout time.Duration) (verbs.QPInfo, error) {
	var none verbs.QPInfo
	payload := local.Marshal()
	if _, err := verbs.UnmarshalQPInfo(payload); err != nil {
		return none, fmt.Errorf("ibv: QP info exchange: local info: %w", err)
	}
	if timeout <= 0 {
		return none, errors.New("ibv: QP info exchange: timeout must be positive")
	}
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return none, fmt.Errorf("ibv: QP info exchange: %w", err)
	}
	defer conn.SetDeadline(time.Time{})

	var out [ExchangeSize]byte
	copy(out[:], exchangeMagic)
	copy(out[len(exchangeMagic):], payload)
	// Write concurrently with the read: on a synchronous stream (net.Pipe)
	// two peers that both write first would otherwise wait for each other.
	werr := make(chan error, 1)
	go func() {
		_, err := conn.Write(out[:])
		werr <- err
	}()
	var in [ExchangeSize]byte
	_, rerr := io.ReadFull(conn, in[:])
	if rerr != nil {
		// Unblock the writer now rather than at the deadline.
		_ = conn.SetDeadline(time.Now())
	}
	if err := <-werr; err != nil && rerr == nil {
		return none, fmt.Errorf("ibv: QP info exchange: write: %w", err)
	}
	if rerr != nil {
		return none, fmt.Errorf("ibv: QP info exchange: read %d-byte message: %w", ExchangeSize, rerr)
	}
	if string(in[:len(exchangeMagic)]) != exchangeMagic {
		return none, fmt.Errorf("ibv: QP info exchange: peer sent %q, not a QP info message", in[:len(exchangeMagic)])
	}
	remote, err := verbs.UnmarshalQPInfo(in[len(exchangeMagic):])
	if err != nil {
		return none, fmt.Errorf("ibv: QP info exchange: peer info: %w", err)
	}
	return remote, nil
}
