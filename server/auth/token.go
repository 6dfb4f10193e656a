package auth

import (
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

// tokenPrefix versions the token format.
const tokenPrefix = "v1"

// Errors of token verification.
var (
	ErrMalformedToken = errors.New("malformed token")
	ErrBadSignature   = errors.New("token signature does not match")
	ErrExpiredToken   = errors.New("token expired")
)

// Tokens mints and verifies tokens "v1:<user>:<expiry ms>:<signature>",
// signed with HMAC-SHA256.
type Tokens struct {
	Secret []byte
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

var _ Authenticator = (*Tokens)(nil)

// Mint returns a token for user valid until expiry.
func (t *Tokens) Mint(user string, expiry time.Time) (string, error) {
	if !protocol.ValidUser(user) {
		return "", fmt.Errorf("%q is not a valid user id", user)
	}
	payload := tokenPrefix + ":" + user + ":" + strconv.FormatInt(expiry.UnixMilli(), 10)
	return payload + ":" + t.sign(payload), nil
}

// Verify returns the user a token names if its signature holds and it has
// not expired.
func (t *Tokens) Verify(token string) (string, error) {
	parts := strings.Split(token, ":")
	if len(parts) != 4 || parts[0] != tokenPrefix || !protocol.ValidUser(parts[1]) {
		return "", ErrMalformedToken
	}
	expiry, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return "", ErrMalformedToken
	}
	payload := strings.Join(parts[:3], ":")
	if !hmac.Equal([]byte(parts[3]), []byte(t.sign(payload))) {
		return "", ErrBadSignature
	}
	if t.now().UnixMilli() >= expiry {
		return "", ErrExpiredToken
	}
	return parts[1], nil
}

// Authenticate implements Authenticator: the token names the user; a user
// field, if present, must match it.
func (t *Tokens) Authenticate(h *protocol.Hello) (string, *protocol.Error) {
	if h.Token == "" {
		return "", protocol.Errorf(protocol.CodeUnauthorized, "this server requires a token")
	}
	user, err := t.Verify(h.Token)
	if err != nil {
		return "", protocol.Errorf(protocol.CodeUnauthorized, "%v", err)
	}
	if h.User != "" && h.User != user {
		return "", protocol.Errorf(protocol.CodeUnauthorized, "the token is not for user %q", h.User)
	}
	return user, nil
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
