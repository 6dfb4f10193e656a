package server_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server"
	"github.com/imcore/im/server/auth"
	"github.com/imcore/im/server/servertest"
)

func tokenServer(t *testing.T) (*servertest.Env, *auth.Tokens) {
	t.Helper()
	env := servertest.Start(t, func(c *server.Config) { c.Auth = server.AuthToken })
	secret, err := auth.LoadOrCreateSecret(env.Config.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	return env, &auth.Tokens{Secret: secret}
}

func mint(t *testing.T, tokens *auth.Tokens, user string, expiry time.Time) string {
	t.Helper()
	tok, err := tokens.Mint(user, expiry)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestTokenLogsIn(t *testing.T) {
	env, tokens := tokenServer(t)
	c := env.DialRaw(t)
	c.Hello(&protocol.Hello{Protocol: 1, Device: "laptop", Token: mint(t, tokens, "alice", time.Now().Add(time.Hour))})
	if c.User != "alice" {
		t.Fatalf("welcome user = %q", c.User)
	}
	c.Send("d:alice:bob", "m", "signed in")
	// A matching user field is accepted too.
	c2 := env.DialRaw(t)
	c2.Hello(&protocol.Hello{Protocol: 1, User: "alice", Device: "phone", Token: mint(t, tokens, "alice", time.Now().Add(time.Hour))})
}

func TestBadTokensAreUnauthorized(t *testing.T) {
	env, tokens := tokenServer(t)
	valid := mint(t, tokens, "alice", time.Now().Add(time.Hour))
	other := &auth.Tokens{Secret: []byte("a different secret of enough length")}
	cases := map[string]*protocol.Hello{
		"no token":       {Protocol: 1, User: "alice", Device: "d"},
		"expired":        {Protocol: 1, Device: "d", Token: mint(t, tokens, "alice", time.Now().Add(-time.Second))},
		"forged":         {Protocol: 1, Device: "d", Token: mint(t, other, "alice", time.Now().Add(time.Hour))},
		"tampered user":  {Protocol: 1, Device: "d", Token: strings.Replace(valid, ":alice:", ":mallory:", 1)},
		"garbage":        {Protocol: 1, Device: "d", Token: "let-me-in"},
		"user mismatch":  {Protocol: 1, User: "bob", Device: "d", Token: valid},
		"dev-style user": {Protocol: 1, User: "alice", Device: "d", Token: ""},
	}
	for name, h := range cases {
		c := env.DialRaw(t)
		h.ID = "h"
		c.Write(h)
		e, ok := c.ExpectType("error").(*protocol.ErrorFrame)
		if !ok || e.Code != protocol.CodeUnauthorized || e.ID != "h" {
			t.Errorf("%s: got %+v, want unauthorized", name, e)
		}
		c.ExpectClosed()
	}
}

func TestDevAuthRefusesNonLoopback(t *testing.T) {
	srv, err := server.New(server.Config{DataDir: t.TempDir(), Auth: server.AuthDev})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(t.Context())
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = srv.Serve(ln)
	if err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("Serve on %s = %v, want a refusal naming loopback", ln.Addr(), err)
	}
}

func TestDevAuthOnNonLoopbackWhenAllowed(t *testing.T) {
	srv, err := server.New(server.Config{DataDir: t.TempDir(), Auth: server.AuthDev, AllowRemoteDev: true})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	port := ln.Addr().(*net.TCPAddr).Port
	if code := httpStatus(t, "http://127.0.0.1:"+itoa(port)+"/healthz"); code != 200 {
		t.Fatalf("healthz = %d", code)
	}
	if err := srv.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

func TestUnknownAuthMode(t *testing.T) {
	if _, err := server.New(server.Config{DataDir: t.TempDir(), Auth: "ldap"}); err == nil {
		t.Fatal("auth mode ldap accepted")
	}
}
