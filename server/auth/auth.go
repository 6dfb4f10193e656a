// Package auth decides who a hello speaks for: in dev mode the hello names
// its user; in token mode an HMAC-signed token with an expiry does.
package auth

import (
	"github.com/imcore/im/protocol"
)

// Authenticator returns the user a hello authenticates, or an unauthorized
// error.
type Authenticator interface {
	Authenticate(h *protocol.Hello) (user string, err *protocol.Error)
}

// Dev trusts the hello's user field. It is only for servers on loopback.
type Dev struct{}

// Authenticate implements Authenticator.
func (Dev) Authenticate(h *protocol.Hello) (string, *protocol.Error) {
	if !protocol.ValidUser(h.User) {
		return "", protocol.Errorf(protocol.CodeUnauthorized, "user must be 1-32 characters of [a-z0-9_.-] starting with a letter or digit")
	}
	return h.User, nil
}
