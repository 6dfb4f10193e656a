package main

import (
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/imcore/im/protocol"
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

// -coordination locks named the locked path, which is gone: refused,
// saying so; -coordination owners is what runs anyway.
func TestCoordinationLocksIsRefused(t *testing.T) {
	_, errOut, code := runCommand(t, nil, "-coordination", "locks", "-data", t.TempDir())
	if code == 0 || !strings.Contains(errOut, "locked path") || !strings.Contains(errOut, "removed") {
		t.Fatalf("-coordination locks: exit %d, %q; want a refusal saying the locked path was removed", code, errOut)
	}
	p := startServer(t, "-data", t.TempDir(), "-coordination", "owners")
	if err := p.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, p.logs)
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

// imserver token revoke, run beside a server: the user's live connection
// is closed, its old token refused, a new token works.
func TestTokenRevokeCommand(t *testing.T) {
	dir := t.TempDir()
	p := startServer(t, "-data", dir, "-auth", "token")
	mint := func() string {
		out, errOut, code := runCommand(t, nil, "token", "-data", dir, "alice")
		if code != 0 {
			t.Fatalf("token: %s", errOut)
		}
		return strings.TrimSpace(out)
	}
	hello := func(token string) (*wsClient, error) {
		ws, _, err := websocket.DefaultDialer.Dial("ws://"+p.addr+"/ws", nil)
		if err != nil {
			t.Fatal(err)
		}
		c := &wsClient{ws: ws}
		_, err = c.request(&protocol.Hello{Ref: protocol.Ref{ID: "h"}, Protocol: 1, Device: "d", Token: token}, "h")
		return c, err
	}
	old := mint()
	live, err := hello(old)
	if err != nil {
		t.Fatalf("hello: %v", err)
	}
	out, errOut, code := runCommand(t, nil, "token", "revoke", "-data", dir, "alice")
	if code != 0 || !strings.Contains(out, "revoked") {
		t.Fatalf("token revoke: exit %d, %q %q", code, out, errOut)
	}
	live.ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		_, _, err := live.ws.ReadMessage()
		if err == nil {
			continue
		}
		if ce, ok := err.(*websocket.CloseError); !ok || ce.Text != "token revoked" {
			t.Fatalf("the live connection after revoke: %v, want close 1008 token revoked", err)
		}
		break
	}
	if _, err := hello(old); err == nil || !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("hello with the revoked token: %v", err)
	}
	if _, err := hello(mint()); err != nil {
		t.Fatalf("hello with a token minted after: %v", err)
	}
	if _, errOut, code := runCommand(t, nil, "token", "-data", dir, "-ttl", "2000000h", "alice"); code == 0 || !strings.Contains(errOut, "-max-token-ttl") {
		t.Fatalf("a token of 2,000,000 h: exit %d, %q", code, errOut)
	}
}

// Every flag of serve has its environment variable and is listed in
// docs/OPERATIONS.md's flag table with its default.
func TestEveryServeFlagIsDocumented(t *testing.T) {
	out, errOut, code := runCommand(t, nil, "serve", "-help")
	if code != 0 {
		t.Fatalf("serve -help: exit %d", code)
	}
	doc, err := os.ReadFile("../../docs/OPERATIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	flags := regexp.MustCompile(`(?m)^  -([a-z-]+) \((IM_[A-Z_]+)\)`).FindAllStringSubmatch(out+errOut, -1)
	if len(flags) < 30 {
		t.Fatalf("serve -help lists %d flags:\n%s%s", len(flags), out, errOut)
	}
	for _, f := range flags {
		if want := envName(f[1]); f[2] != want {
			t.Errorf("-%s is read from %s, want %s", f[1], f[2], want)
		}
		if !strings.Contains(string(doc), "`-"+f[1]+"`") {
			t.Errorf("-%s is not in docs/OPERATIONS.md's flag table", f[1])
		}
	}
	// A limit set through its variable is checked like the flag.
	if _, errOut, code := runCommand(t, []string{"IM_QUEUE_BYTES=0", "IM_DATA=" + t.TempDir()}, "serve"); code == 0 || !strings.Contains(errOut, "-queue-bytes must be positive") {
		t.Errorf("IM_QUEUE_BYTES=0: exit %d, %q", code, errOut)
	}
}

// The edit window is read from -edit-window or IM_EDIT_WINDOW, and a
// negative one is refused before the server starts.
func TestEditWindowNegativeRefused(t *testing.T) {
	for _, run := range []struct {
		env  []string
		args []string
	}{
		{nil, []string{"serve", "-data", t.TempDir(), "-edit-window", "-1h"}},
		{[]string{"IM_EDIT_WINDOW=-1h", "IM_DATA=" + t.TempDir()}, []string{"serve"}},
	} {
		if _, errOut, code := runCommand(t, run.env, run.args...); code == 0 || !strings.Contains(errOut, "-edit-window cannot be negative") {
			t.Errorf("%v %v: exit %d, %q; want the negative window refused", run.env, run.args, code, errOut)
		}
	}
}
