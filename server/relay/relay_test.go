package relay

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/imcore/im/internal/testservices"
	"github.com/imcore/im/server/gateway"
	"github.com/imcore/im/server/hub"
	"github.com/imcore/im/server/metrics"
)

var _ gateway.Registry = (*Relay)(nil)

// wait bounds every wait for an event; tests never sleep.
const wait = 10 * time.Second

// device is a connected device that keeps what it is pushed.
type device struct {
	user   string
	pushes chan hub.Push
}

func newDevice(user string) *device { return &device{user: user, pushes: make(chan hub.Push, 16)} }

func (d *device) User() string { return d.user }

func (d *device) Name() string { return "phone" }

// named is a device under another name.
type named struct {
	*device
	name string
}

func (n named) Name() string { return n.name }

func (d *device) Deliver(p hub.Push) bool {
	select {
	case d.pushes <- p:
		return true
	default:
		return false
	}
}

// expectPush waits for d's next push and checks it is want.
func expectPush(t *testing.T, d *device, want hub.Push) {
	t.Helper()
	select {
	case got := <-d.pushes:
		if !bytes.Equal(got.Frame, want.Frame) || got.Conv != want.Conv || got.Seq != want.Seq {
			t.Fatalf("%s got %+v, want %+v", d.user, got, want)
		}
	case <-time.After(wait):
		t.Fatalf("%s got no push within %v, want %+v", d.user, wait, want)
	}
}

// expectNothing checks d holds no push. Call it after a barrier that
// proves any push that could have come has come.
func expectNothing(t *testing.T, d *device) {
	t.Helper()
	select {
	case got := <-d.pushes:
		t.Fatalf("%s got %+v, want nothing", d.user, got)
	default:
	}
}

// cluster is relays on one Redis, each node's pushes to another reaching
// that node's hub at once, as the node links deliver them.
type cluster struct {
	t      *testing.T
	rdb    *redis.Client
	prefix string
	mu     sync.Mutex
	hubs   map[string]*hub.Hub // by node id
}

// relayDB is the Redis database of these tests: they empty it (FLUSHDB),
// and the tests of other packages, running beside them on the same Redis,
// keep their keys in database 0.
const relayDB = 15

func newCluster(t *testing.T) *cluster {
	opts, err := redis.ParseURL(testservices.Redis(t))
	if err != nil {
		t.Fatal(err)
	}
	opts.DB = relayDB
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { rdb.Close() })
	return &cluster{t: t, rdb: rdb, prefix: testservices.Prefix(t), hubs: map[string]*hub.Hub{}}
}

// send delivers batch to node's hub, as the node links do.
func (c *cluster) send(_ context.Context, node string, batch []hub.Delivery) error {
	c.mu.Lock()
	h := c.hubs[node]
	c.mu.Unlock()
	if h == nil {
		return fmt.Errorf("no node %s", node)
	}
	for _, d := range batch {
		h.Deliver(d)
	}
	return nil
}

// node starts a relay named id; adjust may change its options.
func (c *cluster) node(id string, adjust ...func(*Options)) *Relay {
	c.t.Helper()
	opts := Options{Redis: c.rdb, NodeID: id, Prefix: c.prefix, Local: hub.New(), Send: c.send}
	for _, f := range adjust {
		f(&opts)
	}
	c.mu.Lock()
	c.hubs[id] = opts.Local
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	r, err := New(ctx, opts)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() {
		if err := r.Close(); err != nil {
			c.t.Error(err)
		}
	})
	return r
}

// flush waits until r has routed every push made before.
func flush(t *testing.T, r *Relay) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := r.flush(ctx); err != nil {
		t.Fatal(err)
	}
}

func nodes(t *testing.T, r *Relay, user string) []string {
	t.Helper()
	got, err := r.Nodes(context.Background(), user)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	return got
}

func expectNodes(t *testing.T, r *Relay, user string, want ...string) {
	t.Helper()
	if got := nodes(t, r, user); !slices.Equal(got, want) {
		t.Fatalf("presence of %s = %v, want %v", user, got, want)
	}
}

func TestPushReachesEveryNodeOfTheUser(t *testing.T) {
	c := newCluster(t)
	a, b := c.node("a"), c.node("b")
	a1, a2, b1 := newDevice("alice"), newDevice("alice"), newDevice("alice")
	a.Register(a1)
	a.Register(a2)
	b.Register(b1)
	expectNodes(t, a, "alice", "a", "b")

	p := hub.Push{Frame: []byte(`{"type":"msg"}`), Conv: "dm:alice:bob", Seq: 7}
	if n := a.Push("alice", p, a1); n != 1 {
		t.Fatalf("Push counted %d local deliveries, want 1", n)
	}
	expectPush(t, a2, p)
	expectPush(t, b1, p)
	flush(t, a)
	expectNothing(t, a1) // skipped here, and never sent back to its own node
	if s := a.Stats(); s.Published != 1 || s.Routed != 1 || s.Dropped != 0 {
		t.Fatalf("a's stats %+v, want one push published once", s)
	}

	// The other way round, a frame that is not a message.
	q := hub.Push{Frame: []byte(`{"type":"status"}`)}
	if n := b.Push("alice", q, nil); n != 1 {
		t.Fatalf("Push counted %d local deliveries, want 1", n)
	}
	expectPush(t, b1, q)
	expectPush(t, a1, q)
	expectPush(t, a2, q)
}

func TestNoDeviceAnywhereNoPublish(t *testing.T) {
	c := newCluster(t)
	a, b := c.node("a"), c.node("b")
	b.Register(newDevice("bob"))

	if n := a.Push("carol", hub.Push{Frame: []byte("x")}, nil); n != 0 {
		t.Fatalf("Push counted %d deliveries for a user with no device, want 0", n)
	}
	flush(t, a)
	if s := a.Stats(); s.Routed != 1 || s.Published != 0 {
		t.Fatalf("a's stats %+v, want one push routed and none published", s)
	}
	expectNodes(t, a, "carol")
}

func TestUnregisterLastDeviceWithdrawsPresence(t *testing.T) {
	c := newCluster(t)
	a, b := c.node("a"), c.node("b")
	d1, d2 := newDevice("alice"), newDevice("alice")
	a.Register(d1)
	a.Register(d2)
	expectNodes(t, b, "alice", "a")

	a.Unregister(d1)
	expectNodes(t, b, "alice", "a")
	a.Unregister(d1) // twice, as a connection cut off may do
	expectNodes(t, b, "alice", "a")
	a.Unregister(d2)
	expectNodes(t, b, "alice")

	b.Push("alice", hub.Push{Frame: []byte("x")}, nil)
	flush(t, b)
	if s := b.Stats(); s.Published != 0 {
		t.Fatalf("b's stats %+v, want nothing published to a node without devices", s)
	}
	if n, err := c.rdb.SCard(context.Background(), a.nodeUsersKey("a")).Result(); err != nil || n != 0 {
		t.Fatalf("a's own set holds %d users (err %v), want 0", n, err)
	}
}

func TestCloseWithdrawsPresence(t *testing.T) {
	c := newCluster(t)
	a, b := c.node("a"), c.node("b")
	a.Register(newDevice("alice"))
	a.Register(newDevice("bob"))
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	expectNodes(t, b, "alice")
	expectNodes(t, b, "bob")
	if n, err := c.rdb.Exists(context.Background(), a.nodeUsersKey("a")).Result(); err != nil || n != 0 {
		t.Fatalf("a's own set still exists (%d, err %v)", n, err)
	}
}

func TestRestartWithTheSameIDTakesOverPresence(t *testing.T) {
	c := newCluster(t)
	a, b := c.node("a"), c.node("b")
	a.Register(newDevice("alice"))
	a.Register(newDevice("bob"))
	a.abandon() // killed: nothing withdrawn
	expectNodes(t, b, "alice", "a")

	a2 := c.node("a")
	expectNodes(t, b, "alice")
	expectNodes(t, b, "bob")

	d := newDevice("alice")
	a2.Register(d)
	expectNodes(t, b, "alice", "a")
	p := hub.Push{Frame: []byte("hello again"), Conv: "dm:alice:bob", Seq: 3}
	b.Push("alice", p, nil)
	expectPush(t, d, p)
}

func TestDeadNodeIsNotPublishedToAfterExpiry(t *testing.T) {
	c := newCluster(t)
	const ttl = time.Minute
	var ahead atomic.Int64 // how far a's clock runs ahead
	a := c.node("a", func(o *Options) {
		o.PresenceTTL = ttl
		o.now = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	})
	b := c.node("b", func(o *Options) { o.PresenceTTL = ttl })
	b.Register(newDevice("alice"))
	b.abandon()

	a.Push("alice", hub.Push{Frame: []byte("x")}, nil)
	flush(t, a)
	if s := a.Stats(); s.Published != 1 {
		t.Fatalf("a's stats %+v, want one publish while b is listed", s)
	}

	ahead.Store(int64(ttl + time.Second))
	expectNodes(t, a, "alice")
	a.Push("alice", hub.Push{Frame: []byte("y")}, nil)
	flush(t, a)
	if s := a.Stats(); s.Published != 1 || s.Routed != 2 {
		t.Fatalf("a's stats %+v, want nothing more published once b's presence expired", s)
	}
}

func TestPushesResumeAfterRedisLostPresence(t *testing.T) {
	c := newCluster(t)
	const ttl = 300 * time.Millisecond
	refreshed := make(chan struct{}, 1)
	a := c.node("a", func(o *Options) {
		o.PresenceTTL = ttl
		o.afterRefresh = func() {
			select {
			case refreshed <- struct{}{}:
			default:
			}
		}
	})
	b := c.node("b", func(o *Options) { o.PresenceTTL = ttl })
	a1, b1 := newDevice("alice"), newDevice("alice")
	a.Register(a1)
	b.Register(b1)
	expectNodes(t, b, "alice", "a", "b")

	ctx := context.Background()
	if err := c.rdb.FlushDB(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	// A refresh pass that started before the flush may end after it, so
	// wait for the one after it.
	select {
	case <-refreshed:
	default:
	}
	for range 2 {
		select {
		case <-refreshed:
		case <-time.After(wait):
			t.Fatal("a did not refresh its presence")
		}
	}
	expectNodes(t, b, "alice", "a", "b")

	p := hub.Push{Frame: []byte("after the flush"), Conv: "dm:alice:bob", Seq: 9}
	b.Push("alice", p, nil)
	expectPush(t, b1, p)
	expectPush(t, a1, p)
}

func TestFullQueueDropsAndCounts(t *testing.T) {
	c := newCluster(t)
	a := c.node("a", func(o *Options) { o.QueueLen = 2 })
	d := newDevice("alice")
	a.Register(d)
	a.stopLoops() // nothing takes from the queue any more
	defer a.closed.Store(true)

	for range 3 {
		if n := a.Push("alice", hub.Push{Frame: []byte("x")}, nil); n != 1 {
			t.Fatalf("Push counted %d local deliveries, want 1: a full queue must not cost the local devices", n)
		}
	}
	if s := a.Stats(); s.Dropped != 1 {
		t.Fatalf("stats %+v, want one push dropped", s)
	}
}

func TestQueueBytesBoundDropsAndCounts(t *testing.T) {
	c := newCluster(t)
	a := c.node("a", func(o *Options) { o.QueueBytes = 10 })
	a.Register(newDevice("alice"))
	a.stopLoops() // nothing takes from the queue any more
	defer a.closed.Store(true)

	a.Push("alice", hub.Push{Frame: make([]byte, 6)}, nil)
	a.Push("alice", hub.Push{Frame: make([]byte, 6)}, nil) // over the bound
	a.Push("alice", hub.Push{Frame: make([]byte, 4)}, nil) // fits again
	if s := a.Stats(); s.Dropped != 1 || len(a.queue) != 2 {
		t.Fatalf("stats %+v with %d queued, want one push dropped and two queued", s, len(a.queue))
	}
}

func TestDefaultNodeIDsDiffer(t *testing.T) {
	if a, b := DefaultNodeID(), DefaultNodeID(); a == b || a == "" {
		t.Fatalf("DefaultNodeID gave %q and %q", a, b)
	}
}

// TestPushSkipsTheSendingDeviceOnlyOnItsNode: a push made on behalf of a
// device of another node (its frame forwarded to this one) skips that
// device there, and only there.
func TestPushSkipsTheSendingDeviceOnlyOnItsNode(t *testing.T) {
	c := newCluster(t)
	a, b := c.node("a"), c.node("b")
	a1, b1 := newDevice("alice"), newDevice("alice")
	a.Register(a1)
	b.Register(b1)
	c1 := &device{user: "carol", pushes: make(chan hub.Push, 16)}
	b.Register(named{c1, b1.Name()})
	p := hub.Push{Frame: []byte(`{"type":"msg"}`), Conv: "g:team", Seq: 3}
	sender := hub.Elsewhere{UserID: "alice", DeviceName: b1.Name(), Node: "b"}
	a.Push("alice", p, sender)
	a.Push("carol", p, sender)
	expectPush(t, a1, p) // the same name on another node is another device
	expectPush(t, c1, p) // and another user's device of that name too
	flush(t, a)
	expectNothing(t, b1)
}

func TestMetricsCountWhatStatsCounts(t *testing.T) {
	c := newCluster(t)
	a, b := c.node("a"), c.node("b")
	b.Register(newDevice("alice"))
	a.Push("alice", hub.Push{Frame: []byte("x")}, nil)
	flush(t, a)

	m := metrics.New()
	a.RegisterMetrics(m)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, line := range []string{"im_relay_routed_total 1", "im_relay_published_total 1", "im_relay_dropped_total 0"} {
		if !strings.Contains(rec.Body.String(), "\n"+line+"\n") {
			t.Errorf("/metrics lacks %q", line)
		}
	}
}

// TestLostPresenceIsReportedThoughADeviceComesRightAfter: Redis loses a
// node's presence and a device connects to the node before the watch
// looks. The device's own record brings back the node's set of users, but
// not alice's and carol's presence: the loss is still seen and reported,
// so that their devices, which stay connected and may have missed pushes,
// are told to sync. (Judged by the node's set alone, it went unseen; in a
// fault run a device then missed its pushes and nudges for good.)
func TestLostPresenceIsReportedThoughADeviceComesRightAfter(t *testing.T) {
	w := newWatchedNode(t)
	w.flush(t)
	w.a.Register(newDevice("dave"))
	w.expectLost(t, "alice", "carol", "dave")
}

// TestLostPresenceIsRestoredAndReported flushes Redis under a node whose
// refresh is far off: the watch records the presence again within a
// second or so and reports the node's users, whose devices may have
// missed pushes meanwhile.
func TestLostPresenceIsRestoredAndReported(t *testing.T) {
	w := newWatchedNode(t)
	select {
	case users := <-w.lost:
		t.Fatalf("presence reported lost before Redis lost it: %v", users)
	default:
	}
	w.flush(t)
	w.expectLost(t, "alice", "carol")
}

// watchedNode is node a, whose presence is never refreshed in a test and
// whose reports of a lost presence go to lost, with alice's and carol's
// devices; b is another node, to look at presence from.
type watchedNode struct {
	c    *cluster
	a, b *Relay
	lost chan []string
}

func newWatchedNode(t *testing.T) *watchedNode {
	w := &watchedNode{c: newCluster(t), lost: make(chan []string, 4)}
	w.a = w.c.node("a", func(o *Options) {
		o.PresenceTTL = time.Hour // no refresh during the test
		o.Lost = func(users []string) { w.lost <- users }
	})
	w.b = w.c.node("b")
	w.a.Register(newDevice("alice"))
	w.a.Register(newDevice("carol"))
	expectNodes(t, w.b, "alice", "a")
	return w
}

// flush loses everything Redis holds.
func (w *watchedNode) flush(t *testing.T) {
	t.Helper()
	if err := w.c.rdb.FlushDB(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
}

// expectLost waits for a's report of a lost presence, naming users, then
// for alice's and carol's presence recorded again.
func (w *watchedNode) expectLost(t *testing.T, users ...string) {
	t.Helper()
	select {
	case got := <-w.lost:
		slices.Sort(got)
		if !slices.Equal(got, users) {
			t.Fatalf("reported lost: %v, want %v", got, users)
		}
	case <-time.After(wait):
		t.Fatal("the lost presence was never reported")
	}
	expectNodes(t, w.b, "alice", "a")
	expectNodes(t, w.b, "carol", "a")
}
