package server_test

import (
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server"
	"github.com/imcore/im/server/auth"
	"github.com/imcore/im/server/servertest"
	"github.com/imcore/im/server/store/sqlitestore"
)

// scrape reads /metrics and returns each sample's value by its name and
// labels as written ("im_frames_in_total{type=\"send\"}").
func scrape(t *testing.T, env *servertest.Env) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + env.Addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d %s", resp.StatusCode, body)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// /metrics counts what the server does: connections, frames by type, sends
// and their latency, commits, pending rows, rate limits, disconnects.
func TestMetricsFollowTraffic(t *testing.T) {
	env := servertest.Start(t, servertest.OnSQLite, func(c *server.Config) { // the commit metrics are SQLite's
		c.Gateway.RateLimit = 0.001
		c.Gateway.RateBurst = 6
		c.Gateway.RateWait = 0
		c.MetricsCache = time.Nanosecond // count the pending rows at every scrape
	})
	before := scrape(t, env)
	alice := env.Dial(t, "alice", "laptop")
	for i := range 3 {
		alice.Send("d:alice:bob", "m"+itoa(i), "hello")
	}
	alice.RequestOK(&protocol.History{Conv: "d:alice:bob"})
	alice.RequestOK(&protocol.History{Conv: "d:alice:bob"})
	alice.RequestOK(&protocol.History{Conv: "d:alice:bob"})
	alice.RequestError(&protocol.History{Conv: "d:alice:bob"}, protocol.CodeRateLimited)
	after := scrape(t, env)
	grew := func(name string, by float64) {
		t.Helper()
		if d := after[name] - before[name]; d < by {
			t.Errorf("%s went from %v to %v, want +%v", name, before[name], after[name], by)
		}
	}
	grew(`im_connections`, 1)
	grew(`im_frames_in_total{type="send"}`, 3)
	grew(`im_frames_in_total{type="hello"}`, 1)
	grew(`im_frames_out_total{type="sent"}`, 3)
	grew(`im_frames_out_total{type="welcome"}`, 1)
	grew(`im_send_duration_seconds_count`, 3)
	grew(`im_commit_batch_ops_count`, 1)
	grew(`im_commit_duration_seconds_count`, 1)
	// Bob has not had them delivered. The rows are written behind the
	// sends' answers: the gauge shows them once they are.
	env.WaitFor("the pending row on /metrics", func() bool {
		return scrape(t, env)["im_pending_deliveries"]-before["im_pending_deliveries"] >= 1
	})
	grew(`im_rate_limited_total{scope="frames"}`, 1)
	if after["process_resident_memory_bytes"] <= 0 {
		t.Error("no process_resident_memory_bytes")
	}
	// Bob's delivered mark takes his pending row away.
	bob := env.Dial(t, "bob", "laptop")
	bob.RequestOK(&protocol.Delivered{Marks: []protocol.Mark{{Conv: "d:alice:bob", Seq: 3}}})
	if got := scrape(t, env)["im_pending_deliveries"]; got != before["im_pending_deliveries"] {
		t.Errorf("pending rows after the delivered mark: %v, want %v", got, before["im_pending_deliveries"])
	}
}

// /readyz answers 503, and says why, once the store cannot commit (here a
// full disk: the database capped at its size); /healthz still answers 200.
func TestReadyzWhenTheStoreFails(t *testing.T) {
	var logs syncBuffer
	env := servertest.Start(t, servertest.OnSQLite, func(c *server.Config) {
		c.StoreMaxPages = 40
		c.Gateway.RateLimit = 1e9
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + env.Addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get("/readyz"); code != 200 {
		t.Fatalf("/readyz of a fresh server: %d %s", code, body)
	}
	alice := env.Dial(t, "alice", "laptop")
	body := strings.Repeat("x", 4000)
	failed := false
	for i := 0; i < 1000 && !failed; i++ {
		answer := alice.Request(&protocol.Send{Conv: "d:alice:bob", MsgID: "m" + itoa(i), Body: body})
		if e, ok := answer.(*protocol.ErrorFrame); ok {
			if e.Code != protocol.CodeInternal {
				t.Fatalf("send on a full disk: %+v, want internal", e)
			}
			failed = true
		}
	}
	if !failed {
		t.Fatal("1000 sends of 4 KB fitted in a database capped at 40 pages")
	}
	code, text := get("/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(text, "full") {
		t.Fatalf("/readyz after a failed commit: %d %q, want 503 saying the disk is full", code, text)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Fatalf("/healthz = %d, want 200 (the process is alive)", code)
	}
	if log := logs.String(); !strings.Contains(log, "the store is failing") || !strings.Contains(log, "full") {
		t.Fatalf("the log does not say the store is failing, and why:\n%s", log)
	}
}

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// revocableServer is a token-auth server whose tokens can be revoked,
// checking live connections every 50ms.
func revocableServer(t *testing.T) (*servertest.Env, *auth.Tokens, *sqlitestore.Backend) {
	t.Helper()
	env := servertest.Start(t, servertest.OnSQLite, func(c *server.Config) { // epochs are kept by the SQLite store
		c.Auth = server.AuthToken
		c.Gateway.RevokeCheck = 50 * time.Millisecond
	})
	secret, err := auth.LoadOrCreateSecret(env.Config.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	st := env.Server.Backend().(*sqlitestore.Backend)
	return env, &auth.Tokens{Secret: secret, Epochs: st}, st
}

// Revoking a user's tokens refuses them at the next hello and closes the
// connections they opened; a token minted afterwards works, and other
// users are not touched.
func TestRevokedTokensAreUnauthorized(t *testing.T) {
	env, tokens, st := revocableServer(t)
	old := mint(t, tokens, "alice", time.Now().Add(time.Hour))
	live := env.DialRaw(t)
	live.Hello(&protocol.Hello{Protocol: 1, Device: "laptop", Token: old})
	bob := env.DialRaw(t)
	bob.Hello(&protocol.Hello{Protocol: 1, Device: "laptop", Token: mint(t, tokens, "bob", time.Now().Add(time.Hour))})

	if _, err := st.RevokeTokens(t.Context(), "alice"); err != nil {
		t.Fatal(err)
	}
	err := live.ExpectClosed()
	if ce, ok := err.(*websocket.CloseError); !ok || ce.Code != websocket.ClosePolicyViolation || ce.Text != "token revoked" {
		t.Fatalf("alice's live connection: %v, want close 1008 token revoked", err)
	}
	again := env.DialRaw(t)
	again.Write(&protocol.Hello{Ref: protocol.Ref{ID: "h"}, Protocol: 1, Device: "laptop", Token: old})
	e := again.ExpectType("error").(*protocol.ErrorFrame)
	if e.Code != protocol.CodeUnauthorized || !strings.Contains(e.Message, "revoked") {
		t.Fatalf("hello with a revoked token: %+v", e)
	}
	fresh := env.DialRaw(t)
	fresh.Hello(&protocol.Hello{Protocol: 1, Device: "laptop", Token: mint(t, tokens, "alice", time.Now().Add(time.Hour))})
	fresh.Send("d:alice:bob", "m1", "with a new token")
	bob.ExpectMsg("d:alice:bob") // bob's connection is still up
}

// A token that expires further ahead than the server's maximum lifetime is
// refused, however validly signed.
func TestOverlongTokenIsUnauthorized(t *testing.T) {
	env, tokens := tokenServer(t)
	forever := mint(t, tokens, "alice", time.Now().Add(2_000_000*time.Hour))
	c := env.DialRaw(t)
	c.Write(&protocol.Hello{Ref: protocol.Ref{ID: "h"}, Protocol: 1, Device: "laptop", Token: forever})
	e := c.ExpectType("error").(*protocol.ErrorFrame)
	if e.Code != protocol.CodeUnauthorized || !regexp.MustCompile(`lifetime exceeds`).MatchString(e.Message) {
		t.Fatalf("a token valid for 2,000,000 h: %+v, want unauthorized", e)
	}
	c.ExpectClosed()
	// Within the maximum (30 days by default) it is fine.
	ok := env.DialRaw(t)
	ok.Hello(&protocol.Hello{Protocol: 1, Device: "laptop", Token: mint(t, tokens, "alice", time.Now().Add(29*24*time.Hour))})
}
