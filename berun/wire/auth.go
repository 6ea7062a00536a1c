package wire

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"
)

// ErrAuth is wrapped by every handshake failure caused by a wrong token.
var ErrAuth = errors.New("wire: authentication failed")

const (
	labelAgent      = "berun-agent-proof-v1"
	labelController = "berun-controller-auth-v1"
)

func mac(token []byte, label string, a, b []byte) []byte {
	h := hmac.New(sha256.New, token)
	h.Write([]byte(label))
	h.Write([]byte{0})
	h.Write(a)
	h.Write(b)
	return h.Sum(nil)
}

func nonce() ([]byte, error) {
	b := make([]byte, NonceSize)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("wire: random nonce: %w", err)
	}
	return b, nil
}

func (c *Conn) withDeadline(timeout time.Duration, f func() error) error {
	if err := c.nc.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	err := f()
	if derr := c.nc.SetDeadline(time.Time{}); err == nil {
		err = derr
	}
	return err
}

// ClientHandshake runs the controller's side of the handshake within
// timeout and returns the agent's Welcome. The agent must prove it holds
// the token before the controller answers.
func (c *Conn) ClientHandshake(token []byte, controller string, timeout time.Duration) (*Welcome, error) {
	var w *Welcome
	err := c.withDeadline(timeout, func() error {
		cn, err := nonce()
		if err != nil {
			return err
		}
		if err := c.Send(&Hello{Version: Version, Controller: clip(controller), Nonce: cn}); err != nil {
			return err
		}
		m, err := c.dec.nextOnly(TypeChallenge, TypeError)
		if err != nil {
			return err
		}
		ch, ok := m.(*Challenge)
		if !ok {
			return m.(*ErrorMsg)
		}
		if !hmac.Equal(ch.Proof, mac(token, labelAgent, cn, ch.Nonce)) {
			return fmt.Errorf("%w: agent %q did not prove it holds the token (different tokens on the two sides?)", ErrAuth, ch.Agent)
		}
		if err := c.Send(&Auth{MAC: mac(token, labelController, ch.Nonce, cn)}); err != nil {
			return err
		}
		m, err = c.dec.nextOnly(TypeWelcome, TypeError)
		if err != nil {
			return err
		}
		if e, ok := m.(*ErrorMsg); ok {
			if e.Code == "auth" {
				return fmt.Errorf("%w: %v", ErrAuth, e)
			}
			return e
		}
		w = m.(*Welcome)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("handshake with %v: %w", c.RemoteAddr(), err)
	}
	return w, nil
}

// ServerHandshake runs the agent's side within timeout. It reads at most a
// Hello and an Auth frame (4 KiB each) from the unauthenticated peer. On a
// wrong answer it sends ErrorMsg{Code: "auth"} and returns an error wrapping
// ErrAuth; the caller closes the connection.
func (c *Conn) ServerHandshake(token []byte, agent string, welcome *Welcome, timeout time.Duration) (controller string, err error) {
	err = c.withDeadline(timeout, func() error {
		m, err := c.dec.nextOnly(TypeHello)
		if err != nil {
			return err
		}
		h := m.(*Hello)
		controller = h.Controller
		sn, err := nonce()
		if err != nil {
			return err
		}
		if err := c.Send(&Challenge{Version: Version, Agent: agent, Nonce: sn, Proof: mac(token, labelAgent, h.Nonce, sn)}); err != nil {
			return err
		}
		m, err = c.dec.nextOnly(TypeAuth)
		if err != nil {
			return err
		}
		if !hmac.Equal(m.(*Auth).MAC, mac(token, labelController, sn, h.Nonce)) {
			_ = c.Send(&ErrorMsg{Code: "auth", Reason: "authentication failed"})
			return fmt.Errorf("%w: wrong answer to the challenge (controller %q holds a different token)", ErrAuth, clip(controller))
		}
		return c.Send(welcome)
	})
	if err != nil {
		return controller, fmt.Errorf("handshake with %v: %w", c.RemoteAddr(), err)
	}
	return controller, nil
}

func (d *Decoder) nextOnly(types ...Type) (Message, error) {
	d.Only(types...)
	defer d.Only()
	return d.Next()
}
