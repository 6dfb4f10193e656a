// Package auth decides who a hello speaks for: in dev mode the hello names
// its user; in token mode an HMAC-signed token with an expiry does, unless
// the user's tokens were revoked since it was minted.
package auth

import (
	"context"

	"github.com/imcore/im/protocol"
)

// Identity is who a hello authenticated as.
type Identity struct {
	User string
	// TokenEpoch is the epoch the hello's token was minted in (token mode;
	// 0 in dev mode): a revocation moves the user's epoch past it.
	TokenEpoch int64
}

// Authenticator returns the identity a hello authenticates, or an
// unauthorized error.
type Authenticator interface {
	Authenticate(ctx context.Context, h *protocol.Hello) (Identity, *protocol.Error)
}

// Revocations reports the revocations made since a revision, for
// authenticators whose identities can be revoked while connected.
type Revocations interface {
	// RevokedSince returns the users whose tokens were revoked after
	// revision since (0: every revocation ever made), with their new
	// epochs, and the newest revision, to pass as since next time.
	RevokedSince(ctx context.Context, since int64) ([]Revocation, int64, error)
	// Revalidate checks an identity authenticated earlier against the
	// revocations made since: unauthorized when its token was revoked.
	Revalidate(ctx context.Context, id Identity) *protocol.Error
}

// Revocation is a user whose tokens minted before Epoch are revoked.
type Revocation struct {
	User  string
	Epoch int64
}

// Dev trusts the hello's user field. It is only for servers on loopback.
type Dev struct{}

// Authenticate implements Authenticator.
func (Dev) Authenticate(_ context.Context, h *protocol.Hello) (Identity, *protocol.Error) {
	if !protocol.ValidUser(h.User) {
		return Identity{}, protocol.Errorf(protocol.CodeUnauthorized, "user must be 1-32 characters of [a-z0-9_.-] starting with a letter or digit")
	}
	return Identity{User: h.User}, nil
}
