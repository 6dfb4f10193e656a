package ownership

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/imcore/im/internal/testservices"
)

// durableFlag is what a deployment records outside Redis: whether its
// leases were ever used (Config.FirstUse).
type durableFlag struct {
	mu      sync.Mutex
	used    bool
	failing bool // the store that keeps it refuses (a DynamoDB outage)
}

func (d *durableFlag) firstUse(context.Context) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failing {
		return false, errors.New("injected: the first-use record is unreadable")
	}
	first := !d.used
	d.used = true
	return first, nil
}

func startNodeUsing(t *testing.T, rdb *redis.Client, prefix, id string, ttl time.Duration, flag *durableFlag, hooks Hooks) *Manager {
	t.Helper()
	m, err := Start(context.Background(), Config{
		Redis: rdb, Prefix: prefix, Node: Node{ID: id, Addr: id + ":1"},
		LeaseTTL: ttl, FirstUse: flag.firstUse, Hooks: hooks, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatalf("start %s: %v", id, err)
	}
	t.Cleanup(m.Stop)
	return m
}

// forgetAll deletes every key of the deployment: what a FLUSHALL does to
// it.
func forgetAll(t *testing.T, rdb *redis.Client, prefix string) {
	t.Helper()
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) > 0 {
		if err := rdb.Del(ctx, keys...).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRedisLosingTheLeasesKeepsTheirHolders: when Redis loses every key
// of the deployment, no node takes a shard another still trusts it holds:
// a grace of one lease TTL starts, in which the holders put their leases
// back; nobody loses a shard, and the epochs taken after it are above
// those before.
func TestRedisLosingTheLeasesKeepsTheirHolders(t *testing.T) {
	rdb, prefix := testservices.RedisClient(t)
	// A lease long enough that a busy machine's stall does not expire one
	// by itself: the test is about the loss of Redis's data, not of time.
	ttl := 3 * time.Second
	flag := &durableFlag{}
	var ha, hb hookLog
	a := startNodeUsing(t, rdb, prefix, "a", ttl, flag, ha.hooks())
	b := startNodeUsing(t, rdb, prefix, "b", ttl, flag, hb.hooks())
	settled(t, 10*time.Second, a, b)
	before := map[Shard]Fence{}
	for s := range Shard(Shards) {
		if f, ok := a.Held(s); ok {
			before[s] = f
		} else if f, ok := b.Held(s); ok {
			before[s] = f
		}
	}

	forgetAll(t, rdb, prefix)
	ctx := context.Background()
	// The next rounds notice the loss, open the grace and put the leases
	// back.
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err := rdb.Exists(ctx, prefix+"owners/sentinel").Result()
		if err != nil {
			t.Fatal(err)
		}
		back := 0
		for s := range Shard(Shards) {
			if node, _, err := a.Leases().Holder(ctx, s); err == nil && node != "" {
				back++
			}
		}
		if n == 1 && back == Shards {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the loss: sentinel %d, %d of %d leases back", n, back, Shards)
		}
		select {
		case <-a.Changed():
		case <-time.After(20 * time.Millisecond):
		}
	}
	settled(t, 10*time.Second, a, b)
	for s, f := range before {
		m := a
		if _, ok := b.Held(s); ok {
			m = b
		}
		if got, ok := m.Held(s); !ok || got != f {
			t.Fatalf("shard %d: held %v at %+v, want %+v as before the loss", s, ok, got, f)
		}
	}
	if n := ha.count("lost") + hb.count("lost"); n != 0 {
		t.Fatalf("%d shards lost by their holders", n)
	}

	// b leaves; a takes its shards at epochs above those before the loss.
	if err := b.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	settled(t, 10*time.Second, a)
	for s, f := range before {
		got, ok := a.Held(s)
		if !ok || got.Epoch < f.Epoch {
			t.Fatalf("shard %d after b left: %+v, %v; want held at an epoch not below %d", s, got, ok, f.Epoch)
		}
	}
}

// TestFreshDeploymentHasNoGrace: the first node of a deployment takes its
// shards at once (there were no leases to lose).
func TestFreshDeploymentHasNoGrace(t *testing.T) {
	rdb, prefix := testservices.RedisClient(t)
	a := startNodeUsing(t, rdb, prefix, "a", time.Second, &durableFlag{}, Hooks{})
	if got := len(a.HeldShards()); got != Shards {
		t.Fatalf("the first node holds %d shards after its first round, want %d", got, Shards)
	}
	if a.InGrace() {
		t.Fatal("a fresh deployment in grace")
	}
}

// TestRedisLosingTheLeasesWhileTheFirstUseIsUnreadableKeepsTheirHolders:
// a FLUSHALL during a DynamoDB outage, where the deployment's first-use
// record lives. The nodes learnt at their start that the deployment had
// used its leases, so the grace still opens and nobody loses a shard; it
// used to need the record's answer, and without it every holder lost
// every lease at once (the cluster fault run showed a node serving
// nothing for 7 s).
func TestRedisLosingTheLeasesWhileTheFirstUseIsUnreadableKeepsTheirHolders(t *testing.T) {
	rdb, prefix := testservices.RedisClient(t)
	ttl := 3 * time.Second
	flag := &durableFlag{}
	var ha hookLog
	a := startNodeUsing(t, rdb, prefix, "a", ttl, flag, ha.hooks())
	settled(t, 10*time.Second, a)
	held := len(a.HeldShards())

	flag.mu.Lock()
	flag.failing = true
	flag.mu.Unlock()
	forgetAll(t, rdb, prefix)
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for {
		back := 0
		for s := range Shard(Shards) {
			if node, _, err := a.Leases().Holder(ctx, s); err == nil && node == "a" {
				back++
			}
		}
		if back == held {
			break
		}
		if n := ha.count("lost"); n != 0 {
			t.Fatalf("%d shards lost by their holder after Redis lost its data", n)
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the loss: %d of %d leases back", back, held)
		}
		select {
		case <-a.Changed():
		case <-time.After(20 * time.Millisecond):
		}
	}
	if n := ha.count("lost"); n != 0 {
		t.Fatalf("%d shards lost by their holder after Redis lost its data", n)
	}
}
