package main

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/imcore/im/server/auth"
)

func TestTokenCommandMintsAVerifiableToken(t *testing.T) {
	dir := t.TempDir()
	out, errOut, code := runCommand(t, nil, "token", "-data", dir, "-ttl", "1h", "alice")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	secret, err := auth.LoadOrCreateSecret(dir)
	if err != nil {
		t.Fatal(err)
	}
	tokens := &auth.Tokens{Secret: secret}
	id, err := tokens.Verify(strings.TrimSpace(out))
	if err != nil || id.User != "alice" {
		t.Fatalf("Verify(%q) = %+v, %v", out, id, err)
	}
	// Expires after its lifetime.
	tokens.Now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	if _, err := tokens.Verify(strings.TrimSpace(out)); err != auth.ErrExpiredToken {
		t.Fatalf("after its ttl: %v, want expired", err)
	}
	if info, err := os.Stat(dir + "/" + auth.SecretFile); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("secret file: %v %v, want mode 0600", info, err)
	}
}

func TestTokenCommandErrors(t *testing.T) {
	for _, args := range [][]string{
		{"token", "-data", t.TempDir()},
		{"token", "-data", t.TempDir(), "Not A User"},
		{"token", "-data", t.TempDir(), "-ttl", "-1h", "alice"},
	} {
		if _, errOut, code := runCommand(t, nil, args...); code == 0 || errOut == "" {
			t.Errorf("%v: exit %d, stderr %q: want a failure with a message", args, code, errOut)
		}
	}
}

func TestDevModeRefusesNonLoopbackUnlessAllowed(t *testing.T) {
	_, errOut, code := runCommand(t, nil, "-listen", "0.0.0.0:0", "-data", t.TempDir())
	if code == 0 || !strings.Contains(errOut, "loopback") {
		t.Fatalf("exit %d, stderr %q: want a refusal naming loopback", code, errOut)
	}
	p := startServer(t, "-data", t.TempDir(), "-listen", "0.0.0.0:0", "-dev-allow-remote")
	if !strings.Contains(p.addr, "::") && !strings.HasPrefix(p.addr, "0.0.0.0") {
		t.Fatalf("listening on %s", p.addr)
	}
}

func TestFlagsFromEnvironment(t *testing.T) {
	_, errOut, code := runCommand(t, []string{"IM_LISTEN=0.0.0.0:0", "IM_DATA=" + t.TempDir()})
	if code == 0 || !strings.Contains(errOut, "loopback") {
		t.Fatalf("IM_LISTEN was not used: exit %d, %q", code, errOut)
	}
	_, errOut, code = runCommand(t, []string{"IM_AUTH=ldap", "IM_DATA=" + t.TempDir()})
	if code == 0 || !strings.Contains(errOut, "ldap") {
		t.Fatalf("IM_AUTH was not used: exit %d, %q", code, errOut)
	}
}

func TestUnknownCommandAndFlag(t *testing.T) {
	if _, errOut, code := runCommand(t, nil, "launch"); code != 2 || !strings.Contains(errOut, "unknown command") {
		t.Errorf("unknown command: exit %d, %q", code, errOut)
	}
	if _, errOut, code := runCommand(t, nil, "-no-such-flag"); code == 0 || !strings.Contains(errOut, "no-such-flag") {
		t.Errorf("unknown flag: exit %d, %q", code, errOut)
	}
}

func TestSIGTERMShutsDownGracefully(t *testing.T) {
	p := startServer(t, "-data", t.TempDir())
	c := dialHello(t, p.addr, "alice", "laptop")
	defer c.ws.Close()
	if err := p.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, p.logs)
	}
	if !strings.Contains(p.logs.String(), "msg=stopped") {
		t.Fatalf("no clean stop in the log:\n%s", p.logs)
	}
}

func TestAccountCommand(t *testing.T) {
	dir := t.TempDir()
	out, errOut, code := runCommand(t, nil, "account", "set", "-data", dir, "-category", "promotions", "-sub-biz", "shop", "acme")
	if code != 0 || !strings.Contains(out, "promotions") {
		t.Fatalf("exit %d, out %q, err %q", code, out, errOut)
	}
	// The user may also come first, as in "account set acme -category x".
	out, errOut, code = runCommand(t, nil, "account", "set", "acme", "-data", dir, "-category", "deals")
	if code != 0 || !strings.Contains(out, `"deals"`) {
		t.Fatalf("user first: exit %d, out %q, err %q", code, out, errOut)
	}
	for _, args := range [][]string{
		{"account"},
		{"account", "set", "-data", dir},
		{"account", "set", "acme", "-data", dir, "other"},
		{"account", "set", "-data", dir, "-sub-biz", "Not Valid", "acme"},
		{"account", "set", "-data", dir, "Bad User"},
	} {
		if _, errOut, code := runCommand(t, nil, args...); code == 0 || errOut == "" {
			t.Errorf("%v: exit %d, stderr %q: want a failure with a message", args, code, errOut)
		}
	}
}
