package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/imcore/im/protocol"
)

// SecretFile is the name of the signing secret in the data directory.
const SecretFile = "token.secret"

// Token format versions: v1 tokens (no epoch) are still accepted, as epoch
// 0; v2 is what Mint writes.
const (
	tokenV1 = "v1"
	tokenV2 = "v2"
)

// DefaultMaxTTL is the default bound on a token's remaining lifetime.
const DefaultMaxTTL = 30 * 24 * time.Hour

// Errors of token verification.
var (
	ErrMalformedToken = errors.New("malformed token")
	ErrBadSignature   = errors.New("token signature does not match")
	ErrExpiredToken   = errors.New("token expired")
	ErrTokenTooLong   = errors.New("token lifetime exceeds the server's maximum")
	ErrRevokedToken   = errors.New("token revoked")
)

// Epochs keeps each user's token epoch: revoking a user's tokens moves it
// on, and a token minted in an earlier epoch is refused.
type Epochs interface {
	// TokenEpoch returns user's current epoch (0 until a first revocation).
	TokenEpoch(ctx context.Context, user string) (int64, error)
	// RevokedSince is Revocations.RevokedSince.
	RevokedSince(ctx context.Context, since int64) ([]Revocation, int64, error)
}

// Tokens mints and verifies tokens "v2:<user>:<epoch>:<expiry ms>:<signature>",
// signed with HMAC-SHA256.
type Tokens struct {
	Secret []byte
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// MaxTTL refuses a token that expires further than this from now (0:
	// no bound), so that a token minted with a huge lifetime, or under
	// another server's longer maximum, does not live on.
	MaxTTL time.Duration
	// Epochs, when set, makes tokens revocable; nil: every epoch is valid.
	Epochs Epochs
}

var _ Authenticator = (*Tokens)(nil)

// Mint returns a token for user valid until expiry, in the user's current
// epoch.
func (t *Tokens) Mint(user string, expiry time.Time) (string, error) {
	if !protocol.ValidUser(user) {
		return "", fmt.Errorf("%q is not a valid user id", user)
	}
	if t.MaxTTL > 0 && expiry.Sub(t.now()) > t.MaxTTL {
		return "", fmt.Errorf("a lifetime of %v is over the maximum of %v", expiry.Sub(t.now()).Round(time.Second), t.MaxTTL)
	}
	var epoch int64
	if t.Epochs != nil {
		var err error
		if epoch, err = t.Epochs.TokenEpoch(context.Background(), user); err != nil {
			return "", fmt.Errorf("read %s's token epoch: %w", user, err)
		}
	}
	payload := tokenV2 + ":" + user + ":" + strconv.FormatInt(epoch, 10) + ":" + strconv.FormatInt(expiry.UnixMilli(), 10)
	return payload + ":" + t.sign(payload), nil
}

// Verify checks a token's signature, expiry and lifetime and returns the
// user and epoch it names; it does not look at revocations (Authenticate
// does).
func (t *Tokens) Verify(token string) (Identity, error) {
	parts := strings.Split(token, ":")
	var id Identity
	var expiryText string
	switch {
	case len(parts) == 4 && parts[0] == tokenV1:
		id.User, expiryText = parts[1], parts[2]
	case len(parts) == 5 && parts[0] == tokenV2:
		epoch, err := strconv.ParseInt(parts[2], 10, 64)
		if err != nil || epoch < 0 {
			return Identity{}, ErrMalformedToken
		}
		id.User, id.TokenEpoch, expiryText = parts[1], epoch, parts[3]
	default:
		return Identity{}, ErrMalformedToken
	}
	if !protocol.ValidUser(id.User) {
		return Identity{}, ErrMalformedToken
	}
	expiry, err := strconv.ParseInt(expiryText, 10, 64)
	if err != nil {
		return Identity{}, ErrMalformedToken
	}
	payload := strings.Join(parts[:len(parts)-1], ":")
	if !hmac.Equal([]byte(parts[len(parts)-1]), []byte(t.sign(payload))) {
		return Identity{}, ErrBadSignature
	}
	now := t.now().UnixMilli()
	if now >= expiry {
		return Identity{}, ErrExpiredToken
	}
	if t.MaxTTL > 0 && expiry-now > t.MaxTTL.Milliseconds() {
		return Identity{}, ErrTokenTooLong
	}
	return id, nil
}

// Authenticate implements Authenticator: the token names the user, who
// must not have revoked it since; a user field, if present, must match.
func (t *Tokens) Authenticate(ctx context.Context, h *protocol.Hello) (Identity, *protocol.Error) {
	if h.Token == "" {
		return Identity{}, protocol.Errorf(protocol.CodeUnauthorized, "this server requires a token")
	}
	id, err := t.Verify(h.Token)
	if err != nil {
		return Identity{}, protocol.Errorf(protocol.CodeUnauthorized, "%v", err)
	}
	if h.User != "" && h.User != id.User {
		return Identity{}, protocol.Errorf(protocol.CodeUnauthorized, "the token is not for user %q", h.User)
	}
	if perr := t.Revalidate(ctx, id); perr != nil {
		return Identity{}, perr
	}
	return id, nil
}

// Revalidate implements Revocations: the identity's token must not have
// been revoked since it was minted.
func (t *Tokens) Revalidate(ctx context.Context, id Identity) *protocol.Error {
	if t.Epochs == nil {
		return nil
	}
	current, err := t.Epochs.TokenEpoch(ctx, id.User)
	if err != nil {
		return protocol.Errorf(protocol.CodeInternal, "could not check the token; try again")
	}
	if id.TokenEpoch < current {
		return protocol.Errorf(protocol.CodeUnauthorized, "%v", ErrRevokedToken)
	}
	return nil
}

// RevokedSince implements Revocations through Epochs (none without).
func (t *Tokens) RevokedSince(ctx context.Context, since int64) ([]Revocation, int64, error) {
	if t.Epochs == nil {
		return nil, since, nil
	}
	return t.Epochs.RevokedSince(ctx, since)
}

func (t *Tokens) sign(payload string) string {
	mac := hmac.New(sha256.New, t.Secret)
	mac.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

func (t *Tokens) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

// LoadOrCreateSecret reads the signing secret from dir, generating a new
// random one (readable by the owner only) on first use.
func LoadOrCreateSecret(dir string) ([]byte, error) {
	path := filepath.Join(dir, SecretFile)
	data, err := os.ReadFile(path)
	if err == nil {
		secret, err := hex.DecodeString(strings.TrimSpace(string(data)))
		if err != nil || len(secret) < 16 {
			return nil, fmt.Errorf("%s is not a valid secret (want hex, at least 16 bytes)", path)
		}
		return secret, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read secret: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("generate secret: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return LoadOrCreateSecret(dir) // another process created it first
	}
	if err != nil {
		return nil, fmt.Errorf("create secret: %w", err)
	}
	if _, err := f.WriteString(hex.EncodeToString(secret) + "\n"); err != nil {
		f.Close()
		return nil, fmt.Errorf("write secret: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("write secret: %w", err)
	}
	return secret, nil
}
