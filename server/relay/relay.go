// Package relay makes every device of a user reachable from every node when
// imserver runs as several nodes. It wraps the node's own hub: a device
// registers locally and the node records in Redis that it holds devices
// of that user (presence, with expiry); a push is delivered to the local
// devices at once and sent, over the node links (Options.Send), to every
// other node presence lists for the user, which delivers it to its own
// devices. Redis holds where devices are connected; the pushes themselves
// travel on the links, the one channel between nodes.
//
// Pushes are hints: the store is the truth, and what a push fails to
// deliver reaches the device by a pull path (pending deliveries on hello,
// session sync). So the relay never makes a caller wait for another node:
// the remote part goes through a bounded queue, and a full queue drops it
// and counts.
//
// Redis keys, under Options.Prefix:
//
//	presence:<user>    sorted set: member node id, score expiry (Unix ms)
//	node:<id>:users    set: the users this node has recorded presence for
//
// Expiry scores use each node's clock: clocks must agree to well within
// PresenceTTL.
package relay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/imcore/im/server/chat"
	"github.com/imcore/im/server/hub"
)

// Defaults of Options.
const (
	DefaultPrefix      = "im:"
	DefaultPresenceTTL = 30 * time.Second
	DefaultQueueLen    = 8192
	DefaultQueueBytes  = 16 << 20
)

// redisTimeout bounds one Redis exchange the relay makes (a presence
// write, a batch of lookups and publishes, the cleanup at Close).
const redisTimeout = 5 * time.Second

// Options configure a Relay.
type Options struct {
	// Redis is shared by every node. Required.
	Redis redis.UniversalClient
	// NodeID names this process among the live nodes (two live processes
	// must never share one); DefaultNodeID() when
	// empty. A process started with the NodeID of one that is gone takes
	// over (and first clears) what that one recorded.
	NodeID string
	// Prefix starts every Redis key and channel name; DefaultPrefix when
	// empty. Nodes that push to each other share it.
	Prefix string
	// Local is this process's registry of devices. Required.
	Local *hub.Hub
	// Send delivers a batch of pushes to the devices of another node (by
	// its id), over the node links. Required.
	Send func(ctx context.Context, node string, batch []hub.Delivery) error
	// Logger receives the relay's errors; slog.Default() when nil.
	Logger *slog.Logger
	// PresenceTTL is how long a node stays listed for a user without
	// refreshing; it refreshes every PresenceTTL/3. DefaultPresenceTTL
	// when zero.
	PresenceTTL time.Duration
	// QueueLen bounds the pushes waiting to be published to other nodes;
	// DefaultQueueLen when zero.
	QueueLen int
	// QueueBytes bounds the frame bytes of those pushes;
	// DefaultQueueBytes when zero.
	QueueBytes int

	// Lost, when set, is called with the users of this node's devices
	// after Redis lost the node's presence (a restart without
	// persistence, FLUSHALL) and the relay recorded it again: pushes to
	// them may have been lost meanwhile, so their devices should be told
	// to sync. It runs on the relay's own goroutine.
	Lost func(users []string)

	// now is the clock of presence expiry (time.Now when nil), and
	// afterRefresh is called after each refresh pass: for tests.
	now          func() time.Time
	afterRefresh func()
}

// Relay is the device registry and pusher of one node among several. It
// implements chat.Pusher and the gateway's registry.
type Relay struct {
	rdb     redis.UniversalClient
	node    string
	prefix  string
	local   *hub.Hub
	log     *slog.Logger
	ttl     time.Duration
	now     func() time.Time
	refresh func() // afterRefresh, or nothing
	lost    func(users []string)

	// userLocks serialise the presence writes of one user, so that a
	// register and an unregister racing reach Redis in the order they
	// changed the local hub.
	userLocks [64]sync.Mutex

	queue       chan outgoing
	queuedBytes atomic.Int64 // frame bytes in queue
	maxBytes    int64
	send        func(ctx context.Context, node string, batch []hub.Delivery) error
	stop        chan struct{}
	wg          sync.WaitGroup
	closed      atomic.Bool

	published, dropped, routed atomic.Int64
}

var _ chat.Pusher = (*Relay)(nil)

// New starts the relay of node opts.NodeID: it clears the presence a
// previous process with the same id left behind and starts refreshing
// presence. ctx bounds only the start; the relay runs until Close.
func New(ctx context.Context, opts Options) (*Relay, error) {
	if opts.Redis == nil || opts.Local == nil || opts.Send == nil {
		return nil, errors.New("relay: Redis, Local and Send are required")
	}
	r := &Relay{
		rdb:     opts.Redis,
		node:    opts.NodeID,
		prefix:  opts.Prefix,
		local:   opts.Local,
		log:     opts.Logger,
		ttl:     opts.PresenceTTL,
		now:     opts.now,
		refresh: opts.afterRefresh,
		lost:    opts.Lost,
		send:    opts.Send,
		stop:    make(chan struct{}),
	}
	if r.node == "" {
		r.node = DefaultNodeID()
	}
	if r.prefix == "" {
		r.prefix = DefaultPrefix
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	r.log = r.log.With("node", r.node)
	if r.ttl <= 0 {
		r.ttl = DefaultPresenceTTL
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.refresh == nil {
		r.refresh = func() {}
	}
	queueLen := opts.QueueLen
	if queueLen <= 0 {
		queueLen = DefaultQueueLen
	}
	r.queue = make(chan outgoing, queueLen)
	r.maxBytes = int64(opts.QueueBytes)
	if r.maxBytes <= 0 {
		r.maxBytes = DefaultQueueBytes
	}

	if err := r.clearNode(ctx, nil); err != nil {
		return nil, fmt.Errorf("relay: clear the presence of a previous %s: %w", r.node, err)
	}
	if err := r.recordAll(ctx, nil); err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	r.wg.Add(3)
	go r.publishLoop()
	go r.refreshLoop()
	go r.watchLoop()
	return r, nil
}

// DefaultNodeID returns an id no other process has: host name, process id
// and a random suffix.
func DefaultNodeID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "node"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// NodeID returns the id this relay runs as.
func (r *Relay) NodeID() string { return r.node }

// Register makes d reachable by pushes to its user from every node. The
// first device of a user on this node records the node's presence before
// Register returns, so that a push sent after it reaches d from any node
// (when Redis answers; otherwise the next refresh records it).
func (r *Relay) Register(d hub.Device) {
	user := d.User()
	mu := r.userLock(user)
	mu.Lock()
	defer mu.Unlock()
	r.local.Register(d)
	if r.closed.Load() || len(r.local.DevicesOf(user)) != 1 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
	defer cancel()
	if err := r.assertPresence(ctx, []string{user}); err != nil {
		r.log.Warn("relay: presence not recorded; the next refresh retries", "user", user, "err", err)
	}
}

// Unregister removes d; once it returns, no push reaches d. The last
// device of a user on this node withdraws the node's presence.
func (r *Relay) Unregister(d hub.Device) {
	user := d.User()
	mu := r.userLock(user)
	mu.Lock()
	defer mu.Unlock()
	had := len(r.local.DevicesOf(user))
	r.local.Unregister(d)
	if r.closed.Load() || had == 0 || len(r.local.DevicesOf(user)) != 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
	defer cancel()
	if err := r.withdrawPresence(ctx, []string{user}); err != nil {
		r.log.Warn("relay: presence not withdrawn; it expires", "user", user, "err", err)
	}
}

// Devices returns every device registered on this node.
func (r *Relay) Devices() []hub.Device { return r.local.Devices() }

// DevicesOf returns user's devices registered on this node.
func (r *Relay) DevicesOf(user string) []hub.Device { return r.local.DevicesOf(user) }

// Push delivers p to every device of user on this node but skip, and
// queues it for every other node presence lists for the user, without
// waiting for Redis or the links. A skip that stands for a device of
// another node (hub.Elsewhere) is skipped there. It returns how many
// devices of this node took it: deliveries on other nodes happen later
// and are not counted (see Stats).
func (r *Relay) Push(user string, p hub.Push, skip hub.Device) int {
	n := r.local.Push(user, p, skip)
	if r.closed.Load() {
		return n
	}
	size := int64(len(p.Frame))
	if r.queuedBytes.Add(size) > r.maxBytes {
		r.queuedBytes.Add(-size)
		r.dropped.Add(1)
		return n
	}
	select {
	case r.queue <- outgoing{user: user, push: p, skip: skipElsewhere(skip)}:
	default:
		r.queuedBytes.Add(-size)
		r.dropped.Add(1)
	}
	return n
}

// Stats counts what crossed between nodes since New.
type Stats struct {
	// Routed is the pushes whose nodes were looked up in presence.
	Routed int64
	// Published is the pushes sent to other nodes (one per push and
	// node).
	Published int64
	// Dropped is what this node failed to pass on: pushes that found the
	// queue full or whose presence lookup failed, and those whose node's
	// link failed.
	Dropped int64
}

// Stats returns the counters.
func (r *Relay) Stats() Stats {
	return Stats{
		Routed:    r.routed.Load(),
		Published: r.published.Load(),
		Dropped:   r.dropped.Load(),
	}
}

// Close publishes what is queued, stops the relay and withdraws this
// node's presence. Call it after the gateway has closed its connections;
// pushes after Close reach only local devices.
func (r *Relay) Close() error {
	if r.closed.Swap(true) {
		return nil
	}
	flushCtx, cancelFlush := context.WithTimeout(context.Background(), redisTimeout)
	defer cancelFlush()
	if err := r.flush(flushCtx); err != nil {
		r.log.Warn("relay: pushes still queued at close are dropped", "err", err)
	}
	r.stopLoops()
	ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
	defer cancel()
	if err := r.clearNode(ctx, usersOf(r.local.Devices())); err != nil {
		return fmt.Errorf("relay: withdraw presence of %s: %w", r.node, err)
	}
	return nil
}

// abandon stops the relay without touching Redis, as a crash would.
func (r *Relay) abandon() {
	r.closed.Store(true)
	r.stopLoops()
}

func (r *Relay) stopLoops() {
	close(r.stop)
	r.wg.Wait()
}

func (r *Relay) userLock(user string) *sync.Mutex {
	h := fnv.New32a()
	h.Write([]byte(user))
	return &r.userLocks[h.Sum32()%uint32(len(r.userLocks))]
}

func (r *Relay) presenceKey(user string) string { return r.prefix + "presence:" + user }
func (r *Relay) nodeUsersKey(node string) string {
	return r.prefix + "node:" + node + ":users"
}

// nodeRecordedKey is set by each pass that records the presence of all
// the node's users (recordAll), and by nothing else: Redis lost what the
// node recorded when it is missing. The node's set of users cannot tell,
// since one device's Register brings it back.
func (r *Relay) nodeRecordedKey(node string) string {
	return r.prefix + "node:" + node + ":recorded"
}

// skipElsewhere is the device of another node that skip stands for, if it
// does.
func skipElsewhere(skip hub.Device) hub.Elsewhere {
	if e, ok := skip.(hub.Elsewhere); ok {
		return e
	}
	return hub.Elsewhere{}
}

// usersOf returns the distinct users of devices.
func usersOf(devices []hub.Device) []string {
	seen := make(map[string]struct{}, len(devices))
	var users []string
	for _, d := range devices {
		if _, ok := seen[d.User()]; !ok {
			seen[d.User()] = struct{}{}
			users = append(users, d.User())
		}
	}
	return users
}
