package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/imcore/im/internal/testservices"
	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server"
	"github.com/imcore/im/server/auth"
	"github.com/imcore/im/server/servertest"
)

// TestServeOnMissingTablesSaysToMigrate: a node started before its tables
// exist refuses and names the command; migrate takes a node's whole
// command line, creates every table once, and nothing the second time.
func TestServeOnMissingTablesSaysToMigrate(t *testing.T) {
	prefix := testservices.Prefix(t)
	store := []string{"-store", "dynamodb", "-dynamodb-endpoint", testservices.DynamoDB(t), "-table-prefix", prefix}
	node := append([]string{"-redis", testservices.Redis(t), "-listen", "127.0.0.1:0", "-data", t.TempDir(), "-auth", "token", "-max-body", "100"}, store...)

	_, errOut, code := runCommand(t, nil, append([]string{"serve"}, node...)...)
	if code == 0 || !strings.Contains(errOut, `imserver migrate`) {
		t.Fatalf("serve on missing tables: exit %d, stderr %q; want a refusal naming imserver migrate", code, errOut)
	}

	out, errOut, code := runCommand(t, nil, append([]string{"migrate"}, node...)...)
	if code != 0 {
		t.Fatalf("migrate with a node's flags: exit %d: %s", code, errOut)
	}
	for _, table := range []string{"messages", "message_ids", "conversations", "message_status", "pending_deliveries", "sessions", "users"} {
		if !strings.Contains(out, "created "+prefix+table+"\n") {
			t.Errorf("migrate did not say it created %s%s:\n%s", prefix, table, out)
		}
	}
	out, errOut, code = runCommand(t, nil, append([]string{"migrate"}, store...)...)
	if code != 0 || strings.Contains(out, "created") || !strings.Contains(out, "nothing to do") {
		t.Fatalf("second migrate: exit %d, %q %q; want nothing created", code, out, errOut)
	}
}

// TestTokensOfTheScaledOutDeployment: imserver token works on the tables
// with the shared secret file, refuses without one, and what it mints is
// what every node verifies (the secret file, the epochs in the tables);
// a revocation through the tables makes it unauthorized.
func TestTokensOfTheScaledOutDeployment(t *testing.T) {
	so := servertest.ScaledOut(t)
	secretFile := filepath.Join(t.TempDir(), "token.secret")
	if err := os.WriteFile(secretFile, []byte(strings.Repeat("5a", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := []string{"-store", "dynamodb", "-dynamodb-endpoint", so.DynamoDBEndpoint, "-table-prefix", so.TablePrefix, "-redis", so.RedisURL}

	if _, errOut, code := runCommand(t, nil, append(append([]string{"token"}, flags...), "alice")...); code == 0 || !strings.Contains(errOut, "-token-secret-file") {
		t.Fatalf("token without the secret file: exit %d, %q", code, errOut)
	}
	out, errOut, code := runCommand(t, nil, append(append([]string{"token", "-token-secret-file", secretFile}, flags...), "alice")...)
	if code != 0 {
		t.Fatalf("token: exit %d: %s", code, errOut)
	}
	token := strings.TrimSpace(out)

	secret, err := auth.LoadSecretFile(secretFile)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tables, closeTables, err := so.OpenStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer closeTables()
	node := &auth.Tokens{Secret: secret, Epochs: tables}
	if id, perr := node.Authenticate(ctx, &protocol.Hello{Protocol: protocol.Version, Token: token, Device: "d"}); perr != nil || id.User != "alice" {
		t.Fatalf("a node verifying the minted token: %+v, %v", id, perr)
	}
	if _, errOut, code := runCommand(t, nil, append(append([]string{"token", "revoke"}, flags...), "alice")...); code != 0 {
		t.Fatalf("revoke: exit %d: %s", code, errOut)
	}
	if _, perr := node.Authenticate(ctx, &protocol.Hello{Protocol: protocol.Version, Token: token, Device: "d"}); perr == nil || perr.Code != protocol.CodeUnauthorized {
		t.Fatalf("a revoked token: %v, want unauthorized", perr)
	}
}

// TestStatusCommandListsTheNodes: two nodes started from their command
// lines name themselves in every log line; imserver status, on the store
// flags alone, lists both with the services' health, and a node stopped is
// no longer listed.
func TestStatusCommandListsTheNodes(t *testing.T) {
	so := servertest.ScaledOut(t)
	store := []string{"-store", "dynamodb", "-dynamodb-endpoint", so.DynamoDBEndpoint, "-table-prefix", so.TablePrefix, "-redis", so.RedisURL}
	node := func(id string) *process {
		return startServer(t, append([]string{"-data", t.TempDir(), "-node-id", id}, store...)...)
	}
	a, b := node("node-1"), node("node-2")
	for _, p := range []*process{a, b} {
		if line := p.logs.String(); !regexp.MustCompile(`msg=listening addr=\S+ .* node=node-[12]`).MatchString(line) {
			t.Fatalf("the listening line does not name its node:\n%s", line)
		}
	}

	out, errOut, code := runCommand(t, nil, append([]string{"status"}, store...)...)
	if code != 0 {
		t.Fatalf("status: exit %d: %s\n%s", code, errOut, out)
	}
	for _, want := range []string{"nodes: 2 listed, 2 ready", "node-1  " + a.addr, "node-2  " + b.addr, "redis ", "dynamodb ", " ok "} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}

	if err := b.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("node-2 at SIGTERM: %v", err)
	}
	out, errOut, code = runCommand(t, nil, append([]string{"status", "-format", "json"}, store...)...)
	if code != 0 {
		t.Fatalf("status -format json: exit %d: %s", code, errOut)
	}
	var st server.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status -format json: %v\n%s", err, out)
	}
	if len(st.Nodes) != 1 || st.Nodes[0].ID != "node-1" {
		t.Fatalf("after node-2 stopped: %+v; want node-1 alone", st.Nodes)
	}

	// Every node down: the services are still checked.
	if err := a.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("node-1 at SIGTERM: %v", err)
	}
	out, errOut, code = runCommand(t, nil, append([]string{"status"}, store...)...)
	if code != 0 || !strings.Contains(out, "nodes: 0 listed") || !strings.Contains(out, "dynamodb ") {
		t.Fatalf("status with every node down: exit %d, %s\n%s", code, errOut, out)
	}
	// An engine that does not answer fails the command.
	down := append(append([]string{"status"}, store...), "-dynamodb-endpoint", "http://127.0.0.1:1")
	out, _, code = runCommand(t, nil, down...)
	if code == 0 || !strings.Contains(out, "FAILING") {
		t.Fatalf("status with DynamoDB unreachable: exit %d\n%s", code, out)
	}
}

// TestEmbeddedServerNamesItselfOnlyWhenAsked: the embedded server logs
// no node unless given -node-id.
func TestEmbeddedServerNamesItselfOnlyWhenAsked(t *testing.T) {
	if logs := startServer(t, "-data", t.TempDir()).logs.String(); strings.Contains(logs, "node=") {
		t.Errorf("an embedded server without -node-id names a node:\n%s", logs)
	}
	if logs := startServer(t, "-data", t.TempDir(), "-node-id", "solo").logs.String(); !strings.Contains(logs, "node=solo") {
		t.Errorf("an embedded server with -node-id solo does not name it:\n%s", logs)
	}
}
