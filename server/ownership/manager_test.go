package ownership

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/imcore/im/internal/testservices"
)

// hookLog records the hooks a manager called, in order.
type hookLog struct {
	mu     sync.Mutex
	events []string
}

func (h *hookLog) add(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, fmt.Sprintf(format, args...))
}

func (h *hookLog) count(prefix string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, e := range h.events {
		if len(e) >= len(prefix) && e[:len(prefix)] == prefix {
			n++
		}
	}
	return n
}

func (h *hookLog) hooks() Hooks {
	return Hooks{
		Acquired:  func(_ context.Context, s Shard, f Fence) error { h.add("acquired %d", s); return nil },
		Releasing: func(_ context.Context, s Shard) { h.add("releasing %d", s) },
		Lost:      func(s Shard) { h.add("lost %d", s) },
	}
}

func startNode(t *testing.T, rdb *redis.Client, prefix, id string, ttl time.Duration, hooks Hooks) *Manager {
	t.Helper()
	m, err := Start(context.Background(), Config{
		Redis: rdb, Prefix: prefix, Node: Node{ID: id, Addr: id + ":1"},
		LeaseTTL: ttl, Hooks: hooks, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatalf("start %s: %v", id, err)
	}
	t.Cleanup(m.Stop)
	return m
}

// settled waits until every shard is held by exactly the node placement
// puts it on, among managers, and the managers agree on the live nodes.
func settled(t *testing.T, within time.Duration, managers ...*Manager) {
	t.Helper()
	deadline := time.Now().Add(within)
	var why string
	for time.Now().Before(deadline) {
		why = unsettled(managers)
		if why == "" {
			return
		}
		// Wait for any manager's next change (or a round).
		select {
		case <-managers[0].Changed():
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("ownership not settled within %v: %s", within, why)
}

func unsettled(managers []*Manager) string {
	ids := make([]string, len(managers))
	for i, m := range managers {
		ids[i] = m.NodeID()
	}
	for _, m := range managers {
		seen := make([]string, 0, len(managers))
		for _, n := range m.Nodes() {
			seen = append(seen, n.ID)
		}
		if !slices.Equal(slices.Sorted(slices.Values(seen)), slices.Sorted(slices.Values(ids))) {
			return fmt.Sprintf("%s sees nodes %v", m.NodeID(), seen)
		}
	}
	for s := range Shard(Shards) {
		holders := 0
		want := Place(s, ids)
		for _, m := range managers {
			if _, ok := m.Held(s); ok {
				holders++
				if m.NodeID() != want {
					return fmt.Sprintf("shard %d held by %s, placed on %s", s, m.NodeID(), want)
				}
			}
		}
		if holders != 1 {
			return fmt.Sprintf("shard %d held by %d nodes", s, holders)
		}
	}
	return ""
}

func TestOneNodeHoldsEveryShard(t *testing.T) {
	rdb, prefix := testservices.RedisClient(t)
	var h hookLog
	a := startNode(t, rdb, prefix, "a", time.Second, h.hooks())
	if got := len(a.HeldShards()); got != Shards {
		t.Fatalf("a lone node holds %d shards after its first round, want %d", got, Shards)
	}
	if got := h.count("acquired"); got != Shards {
		t.Fatalf("Acquired called %d times, want %d", got, Shards)
	}
	f, ok := a.Held(ShardOfConv("d:alice:bob"))
	if !ok || f.Epoch <= 0 {
		t.Fatalf("Held = %+v, %v; want it held at an epoch", f, ok)
	}
}

// TestJoinAndLeaveHandOver: a node joining takes its shards from the
// others (who drain them first), a node leaving gives all of its own to
// the rest, and every shard has one holder once settled.
func TestJoinAndLeaveHandOver(t *testing.T) {
	rdb, prefix := testservices.RedisClient(t)
	var ha, hb, hc hookLog
	ttl := time.Second
	a := startNode(t, rdb, prefix, "a", ttl, ha.hooks())
	b := startNode(t, rdb, prefix, "b", ttl, hb.hooks())
	settled(t, 10*time.Second, a, b)
	if ha.count("releasing") == 0 {
		t.Fatal("a handed shards to b without draining them (no Releasing)")
	}
	c := startNode(t, rdb, prefix, "c", ttl, hc.hooks())
	settled(t, 10*time.Second, a, b, c)

	// b leaves: a and c take its shards without waiting for expiry.
	bShards := b.HeldShards()
	epochs := map[Shard]int64{}
	for _, s := range bShards {
		f, _ := b.Held(s)
		epochs[s] = f.Epoch
	}
	left := time.Now()
	if err := b.Leave(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := hb.count("releasing"); got < len(bShards) {
		t.Fatalf("b drained %d shards when leaving, it held %d", got, len(bShards))
	}
	settled(t, 10*time.Second, a, c)
	t.Logf("settled %v after b left", time.Since(left))
	for _, s := range bShards {
		var f Fence
		var ok bool
		if f, ok = a.Held(s); !ok {
			f, ok = c.Held(s)
		}
		if !ok || f.Epoch <= epochs[s] {
			t.Fatalf("shard %d: taken at epoch %d after b held it at %d", s, f.Epoch, epochs[s])
		}
	}
}

// TestDeadNodesShardsAreTakenAfterTheLease: a node that stops refreshing
// (dies) keeps its shards until its leases expire, then the others take
// them.
func TestDeadNodesShardsAreTakenAfterTheLease(t *testing.T) {
	rdb, prefix := testservices.RedisClient(t)
	ttl := time.Second
	a := startNode(t, rdb, prefix, "a", ttl, Hooks{})
	b := startNode(t, rdb, prefix, "b", ttl, Hooks{})
	settled(t, 10*time.Second, a, b)
	b.Stop() // dies: no hand-over, its leases and announcement expire
	died := time.Now()
	settled(t, 10*time.Second, a)
	if took := time.Since(died); took < ttl/2 {
		t.Fatalf("a took a dead node's shards after %v, before its leases could expire (%v)", took, ttl)
	}
}

func TestSetFencedRefusesAStaleEpoch(t *testing.T) {
	rdb, prefix := testservices.RedisClient(t)
	ctx := context.Background()
	old := NewLeases(rdb, prefix, "old", time.Second)
	l1, err := old.Take(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.SetFenced(ctx, l1.Fence(), prefix+"row", "old"); err != nil {
		t.Fatalf("the holder's fenced write: %v", err)
	}
	if _, err := NewLeases(rdb, prefix, "new", time.Second).Take(ctx, 7); err != ErrHeld {
		t.Fatalf("taking a held lease: %v, want ErrHeld", err)
	}
	// The old holder's lease goes (expired, or taken over).
	if err := old.Release(ctx, l1); err != nil {
		t.Fatal(err)
	}
	fresh := NewLeases(rdb, prefix, "new", time.Second)
	l2, err := fresh.Take(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	if l2.Epoch <= l1.Epoch {
		t.Fatalf("epoch %d after %d", l2.Epoch, l1.Epoch)
	}
	if err := fresh.SetFenced(ctx, l2.Fence(), prefix+"row", "new"); err != nil {
		t.Fatal(err)
	}
	if err := old.SetFenced(ctx, l1.Fence(), prefix+"row", "stale"); err != ErrFenced {
		t.Fatalf("a stale holder's write: %v, want ErrFenced", err)
	}
	if v := rdb.Get(ctx, prefix+"row").Val(); v != "new" {
		t.Fatalf("row = %q after a stale write, want the successor's", v)
	}
	if node, epoch, err := fresh.Holder(ctx, 7); err != nil || node != "new" || epoch != l2.Epoch {
		t.Fatalf("Holder = %q, %d, %v; want new, %d", node, epoch, err, l2.Epoch)
	}
}

// TestRoundsTakeWhileShardsDrain: a node whose handovers are still
// draining keeps running rounds, and takes the shards placed on it
// meanwhile (those of a node that left): an operation draining on a shard
// handed over may be waiting for exactly such a shard.
func TestRoundsTakeWhileShardsDrain(t *testing.T) {
	rdb, prefix := testservices.RedisClient(t)
	ttl := time.Second
	var hanging atomic.Bool     // set: a's drains wait for hang
	hang := make(chan struct{}) // closed: they end
	var inDrain atomic.Int64
	a := startNode(t, rdb, prefix, "a", ttl, Hooks{Releasing: func(context.Context, Shard) {
		if hanging.Load() {
			inDrain.Add(1)
			defer inDrain.Add(-1)
			<-hang
		}
	}})
	b := startNode(t, rdb, prefix, "b", ttl, Hooks{})
	settled(t, 10*time.Second, a, b)

	hanging.Store(true)
	released := false
	release := func() {
		if !released {
			released = true
			close(hang)
		}
	}
	defer release()
	c := startNode(t, rdb, prefix, "c", ttl, Hooks{})
	waitUntil(t, "a hands shards over to c", func() bool { return inDrain.Load() > 0 })
	if err := b.Leave(context.Background()); err != nil {
		t.Fatal(err)
	}
	// a takes every shard placement over a and c gives it, its drains
	// still hanging.
	ids := []string{"a", "c"}
	waitUntil(t, "a takes b's shards placed on it", func() bool {
		for s := range Shard(Shards) {
			if _, held := a.Held(s); Place(s, ids) == "a" && !held {
				return false
			}
		}
		return true
	})
	if inDrain.Load() == 0 {
		t.Fatal("a's drains ended before the check: the test shows nothing")
	}
	release()
	settled(t, 10*time.Second, a, c)
}

// waitUntil polls cond until it holds, failing after 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10 s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDrainIsBounded: a drain that never ends by itself (an operation in
// flight hangs) is cut after its bound (a lease lifetime), and the
// shard's lease given back for its new owner to take.
func TestDrainIsBounded(t *testing.T) {
	rdb, prefix := testservices.RedisClient(t)
	ttl := time.Second
	var cut atomic.Int64
	a := startNode(t, rdb, prefix, "a", ttl, Hooks{Releasing: func(ctx context.Context, _ Shard) {
		<-ctx.Done()
		cut.Add(1)
	}})
	joined := time.Now()
	b := startNode(t, rdb, prefix, "b", ttl, Hooks{})
	settled(t, 10*time.Second, a, b)
	if cut.Load() == 0 {
		t.Fatal("no drain was cut: the test shows nothing")
	}
	if took, bound := time.Since(joined), a.drainLimit(); took < bound {
		t.Fatalf("settled after %v, before the drains' bound of %v", took, bound)
	}
}

// TestANodeRestartedUnderItsIdTakesItsShardsAtOnce: a node that died (its
// rounds stopped, its leases left to expire) and starts again under its
// id holds its shards after its first round, at higher epochs, rather
// than after its earlier life's leases expire.
func TestANodeRestartedUnderItsIdTakesItsShardsAtOnce(t *testing.T) {
	rdb, prefix := testservices.RedisClient(t)
	const ttl = time.Minute // far beyond the test: only a release frees them
	first := startNode(t, rdb, prefix, "a", ttl, Hooks{})
	epochs := map[Shard]int64{}
	for _, s := range first.HeldShards() {
		epochs[s], _ = first.Epoch(s)
	}
	first.Stop() // killed: nothing handed over, nothing released
	again := startNode(t, rdb, prefix, "a", ttl, Hooks{})
	held := again.HeldShards()
	if len(held) != Shards {
		t.Fatalf("restarted under its id, the node holds %d shards after its first round, want %d", len(held), Shards)
	}
	for _, s := range held {
		if e, _ := again.Epoch(s); e <= epochs[s] {
			t.Fatalf("shard %d taken back at epoch %d, not above its earlier life's %d", s, e, epochs[s])
		}
	}
}

// TestANodeReleasesOnlyItsOwnEarlierLeases: another node's leases stay
// with it when a node starts.
func TestANodeReleasesOnlyItsOwnEarlierLeases(t *testing.T) {
	rdb, prefix := testservices.RedisClient(t)
	const ttl = time.Minute
	b := startNode(t, rdb, prefix, "b", ttl, Hooks{})
	if len(b.HeldShards()) != Shards {
		t.Fatalf("b holds %d shards alone", len(b.HeldShards()))
	}
	n, err := NewLeases(rdb, prefix, "a", ttl).ReleaseEarlier(context.Background())
	if err != nil || n != 0 {
		t.Fatalf("a's release of its earlier leases = %d, %v; want none of b's", n, err)
	}
	if len(b.HeldShards()) != Shards {
		t.Fatalf("b holds %d shards after a's release", len(b.HeldShards()))
	}
	for s := range Shard(Shards) {
		if node, _, err := b.Leases().Holder(context.Background(), s); err != nil || node != "b" {
			t.Fatalf("shard %d's holder = %q, %v; want b", s, node, err)
		}
	}
}

// lineCounter is a log handler counting the records of each message.
type lineCounter struct {
	mu    sync.Mutex
	lines map[string][]string // message → each record's attributes
}

func (c *lineCounter) Enabled(context.Context, slog.Level) bool { return true }
func (c *lineCounter) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *lineCounter) WithGroup(string) slog.Handler            { return c }
func (c *lineCounter) Handle(_ context.Context, r slog.Record) error {
	var attrs []string
	r.Attrs(func(a slog.Attr) bool {
		attrs = append(attrs, a.String())
		return true
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lines == nil {
		c.lines = map[string][]string{}
	}
	c.lines[r.Message] = append(c.lines[r.Message], fmt.Sprint(attrs))
	return nil
}

func (c *lineCounter) get(msg string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.lines[msg])
}

// TestARoundLogsOneLineForItsShards: taking or handing over many shards
// is one line a round, saying how many and from or to which node, not a
// line per shard (a node that died once drowned the line an operator
// needed in a hundred of them).
func TestARoundLogsOneLineForItsShards(t *testing.T) {
	rdb, prefix := testservices.RedisClient(t)
	var la, lb lineCounter
	start := func(id string, log *lineCounter) *Manager {
		m, err := Start(context.Background(), Config{
			Redis: rdb, Prefix: prefix, Node: Node{ID: id, Addr: id + ":1"},
			LeaseTTL: time.Second, Logger: slog.New(log),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Stop)
		return m
	}
	a := start("a", &la)
	if got := la.get("took shards"); len(got) != 1 || !strings.Contains(got[0], "shards=256") || !strings.Contains(got[0], "from=nobody:256") {
		t.Fatalf("a alone logged %q, want one line for its 256 shards", got)
	}
	b := start("b", &lb)
	settled(t, 10*time.Second, a, b)
	moved := len(b.HeldShards())
	if got := la.get("handing shards over"); len(got) != 1 || !strings.Contains(got[0], fmt.Sprintf("to=b:%d", moved)) {
		t.Fatalf("a logged %q handing %d shards to b, want one line", got, moved)
	}
	var took int
	for _, line := range lb.get("took shards") {
		var n int
		if _, err := fmt.Sscanf(line[strings.Index(line, "shards=")+len("shards="):], "%d", &n); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		took += n
		if !strings.Contains(line, "from=a:") {
			t.Fatalf("b logged %q, want the shards from a", line)
		}
	}
	if took != moved || len(lb.get("took shards")) > 3 {
		t.Fatalf("b logged %q for %d shards, want a few lines summing to them", lb.get("took shards"), moved)
	}
}
