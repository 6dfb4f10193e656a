package client

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/imcore/im/internal/fakeserver"
	"github.com/imcore/im/server/servertest"
)

// runUntil runs p's client until it returns or d passes; ok is false when
// it was still running.
func runUntil(p *profile, d time.Duration) (err error, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	err = p.client.Run(ctx)
	return err, ctx.Err() == nil
}

// TestWrongPathIsNotRetried checks that a URL the server answers with
// HTTP 404 (no WebSocket endpoint there) is a mistake to report, not an
// outage to wait out.
func TestWrongPathIsNotRetried(t *testing.T) {
	srv := fakeserver.Start(t, fakeserver.Options{})
	p := newProfile(t, strings.TrimSuffix(srv.URL, "/ws")+"/wrong", "alice", "")
	err, ok := runUntil(p, waitTimeout)
	if !ok {
		t.Fatalf("Run still retried a 404 after %v", waitTimeout)
	}
	if !errors.Is(err, ErrNoEndpoint) || !strings.Contains(err.Error(), "404") {
		t.Fatalf("Run = %v, want ErrNoEndpoint with the status", err)
	}
}

// TestServerErrorIsRetried checks that a 5xx answer to the upgrade is an
// outage: Run keeps trying.
func TestServerErrorIsRetried(t *testing.T) {
	srv := fakeserver.Start(t, fakeserver.Options{Status: http.StatusServiceUnavailable})
	p := newProfile(t, srv.URL, "alice", "")
	if err, ok := runUntil(p, 300*time.Millisecond); ok {
		t.Fatalf("Run gave up on a 503: %v", err)
	}
}

// TestTokenOnADevServerSaysToGiveTheUser checks that a token-only hello
// to a server that names users itself (dev auth) is refused because the
// hello names no user; the error says so instead of repeating the
// server's rule about user ids.
func TestTokenOnADevServerSaysToGiveTheUser(t *testing.T) {
	env := servertest.Start(t)
	p := newProfile(t, env.URL, "alice", "", func(c *Config) { c.User, c.Token = "", "v1:alice:9999999999999:c2lnbmF0dXJl" })
	err, ok := runUntil(p, waitTimeout)
	if !ok {
		t.Fatal("Run did not stop")
	}
	if !errors.Is(err, ErrNeedsUser) {
		t.Fatalf("Run = %v, want ErrNeedsUser", err)
	}
}
