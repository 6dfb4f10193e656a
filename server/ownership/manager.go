package ownership

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"
)

// Hooks are what a Manager tells the engine that owns shards.
type Hooks struct {
	// Acquired is called when the node took shard's lease, before it
	// serves the shard: the owner rebuilds what it needs of it (repairs
	// what a dead owner left). An error gives the lease back, to be taken
	// again on a later round.
	Acquired func(ctx context.Context, shard Shard, fence Fence) error
	// Releasing is called before the node gives up a shard it still holds
	// (placement moved it, or the node leaves): the owner waits for the
	// operations in flight on it and for their rows to be written. The
	// shard is already no longer served here when it is called. ctx ends
	// within a bound (a lease lifetime, or a Leave's deadline): the
	// shard is then handed over with operations still in flight, whose
	// rows the owner must keep from landing after the lease goes (package
	// routing seals the shard: its writer drops them, and their effects
	// are applied again at the new owner).
	Releasing func(ctx context.Context, shard Shard)
	// Lost is called when the node can no longer prove it holds shard
	// (its lease expired or was taken): the owner forgets what it held.
	Lost func(shard Shard)
	// HandedOver is called as soon as a shard is handed over (each on its
	// own, not once the round's handovers are all done: an operation
	// still draining on one may wait for another's new owner), so that
	// their new owners can be told to take them now (Wake) rather than
	// at their next round.
	HandedOver func(shards []Shard)
}

// Config is what a Manager runs with.
type Config struct {
	Redis  redis.UniversalClient
	Prefix string
	// Node is this node: its id (unique among live nodes) and address.
	Node Node
	// LeaseTTL is the leases' and announcements' lifetime;
	// DefaultLeaseTTL when zero. Rounds run five times per TTL.
	LeaseTTL time.Duration
	// FirstUse reports whether the deployment never held a lease before,
	// and records that it now does, durably (outside Redis): when Redis
	// lost its keys, no free shard is taken for a lease TTL unless this
	// is the first use (see Leases.Grace). Nil: always a first use.
	FirstUse func(ctx context.Context) (bool, error)
	Hooks    Hooks
	Logger   *slog.Logger
}

// Manager keeps one node's shards: it announces the node, follows the set
// of live nodes, takes the leases of the shards placed on the node, hands
// over those placed elsewhere, and refreshes what it holds.
type Manager struct {
	cfg      Config
	leases   *Leases
	registry *Registry
	log      *slog.Logger
	round    time.Duration

	mu      sync.Mutex
	grace   bool // the last round found the leases' grace (Redis lost them)
	held    map[Shard]*Lease
	epochs  map[Shard]int64 // the epoch each shard was last taken at here
	nodes   []Node
	leaving bool
	changed chan struct{} // closed and replaced when held or nodes change

	wake chan struct{}
	stop context.CancelFunc
	done chan struct{}

	// Handovers run beside the rounds (see startHandOver): draining names
	// the shards being drained, drains counts them, and stopDrains cuts
	// them short (Stop, or a Leave past its deadline).
	draining map[Shard]bool
	handing  map[Shard]*Lease // the leases of shards being drained, still refreshed
	// placedOn is the node each shard was last placed on while it was
	// not placed here (rounds only), for the log.
	placedOn   [Shards]string
	drains     sync.WaitGroup
	drainCtx   context.Context
	stopDrains context.CancelFunc
}

// Start runs the node's first round (so that it knows the live nodes and
// holds the shards no other node holds) and keeps running rounds until
// Leave or Stop.
func Start(ctx context.Context, cfg Config) (*Manager, error) {
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	m := &Manager{
		cfg:      cfg,
		leases:   NewLeases(cfg.Redis, cfg.Prefix, cfg.Node.ID, cfg.LeaseTTL),
		registry: NewRegistry(cfg.Redis, cfg.Prefix, cfg.LeaseTTL),
		log:      cfg.Logger,
		round:    cfg.LeaseTTL / 5,
		held:     make(map[Shard]*Lease),
		epochs:   make(map[Shard]int64),
		changed:  make(chan struct{}),
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
		draining: make(map[Shard]bool),
		handing:  make(map[Shard]*Lease),
	}
	m.drainCtx, m.stopDrains = context.WithCancel(context.WithoutCancel(ctx))
	released, err := m.leases.ReleaseEarlier(ctx)
	if err != nil {
		m.stopDrains()
		return nil, err
	}
	if released > 0 {
		m.log.Info("released the leases this node's earlier life held, to take its shards at once", "shards", released)
	}
	if err := m.runRound(ctx); err != nil {
		m.stopDrains()
		return nil, err
	}
	loopCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	m.stop = stop
	go m.loop(loopCtx)
	return m, nil
}

// Leases returns the manager's leases (for fenced writes and status).
func (m *Manager) Leases() *Leases { return m.leases }

// NodeID is this node's id.
func (m *Manager) NodeID() string { return m.cfg.Node.ID }

// NodeAddr is where other nodes reach this one.
func (m *Manager) NodeAddr() string { return m.cfg.Node.Addr }

// Held returns the fence of shard if this node holds it and may serve it
// now.
func (m *Manager) Held(shard Shard) (Fence, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.held[shard]
	if !l.Valid(time.Now()) {
		return Fence{}, false
	}
	return l.Fence(), true
}

// TrustedUntil returns when this node stops trusting its lease of shard
// unless it is refreshed first: the deadline of a write of the shard's
// rows (false: it holds no valid lease of the shard). A shard being
// handed over keeps its lease, refreshed, until its drain is done.
func (m *Manager) TrustedUntil(shard Shard) (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.held[shard]
	if l == nil {
		l = m.handing[shard]
	}
	if !l.Valid(time.Now()) {
		return time.Time{}, false
	}
	return l.TrustedUntil(), true
}

// Epoch returns the epoch this node last took shard at, whether it still
// holds it or not (false: it never took it). It is the fence of the rows
// the node writes of the shard: rows put while the node held the shard
// are still written after a lease that looked expired for a moment (a
// busy machine, a slow Redis) and was renewed, and the tables refuse them
// once a successor, at a higher epoch, wrote (see Fence).
func (m *Manager) Epoch(shard Shard) (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.epochs[shard]
	return e, ok
}

// Owner returns the node shard is placed on, among the live nodes as this
// node last saw them.
func (m *Manager) Owner(shard Shard) Node {
	m.mu.Lock()
	defer m.mu.Unlock()
	ids := make([]string, len(m.nodes))
	for i, n := range m.nodes {
		ids[i] = n.ID
	}
	id := Place(shard, ids)
	for _, n := range m.nodes {
		if n.ID == id {
			return n
		}
	}
	return Node{}
}

// Nodes returns the live nodes as this node last saw them.
func (m *Manager) Nodes() []Node {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.nodes)
}

// HeldShards returns the shards this node holds now, sorted.
func (m *Manager) HeldShards() []Shard {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	var out []Shard
	for s, l := range m.held {
		if l.Valid(now) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// Changed returns a channel closed at the next change of the shards held
// or of the live nodes.
func (m *Manager) Changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changed
}

// Await waits until this node holds shard, or until placement puts it on
// another node; it returns the fence when held here.
func (m *Manager) Await(ctx context.Context, shard Shard) (Fence, bool, error) {
	for {
		changed := m.Changed()
		if f, ok := m.Held(shard); ok {
			return f, true, nil
		}
		if m.Owner(shard).ID != m.cfg.Node.ID {
			return Fence{}, false, nil
		}
		m.nudge()
		select {
		case <-ctx.Done():
			return Fence{}, false, ctx.Err()
		case <-changed:
		case <-time.After(m.round):
		}
	}
}

func (m *Manager) setGrace(on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.grace = on
}

// InGrace reports whether the last round found the deployment in the grace
// after Redis lost the leases: shards without a holder wait for it.
func (m *Manager) InGrace() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.grace
}

// Leave hands every shard over (Releasing, then the lease given back) and
// withdraws the node, so that the others take its shards at once; then
// the rounds stop. Drains still running at ctx's end are cut short: their
// leases expire.
func (m *Manager) Leave(ctx context.Context) error {
	m.mu.Lock()
	m.leaving = true
	m.mu.Unlock()
	m.halt()
	err := m.registry.Withdraw(ctx, m.cfg.Node.ID)
	return errors.Join(err, m.runRound(ctx))
}

// Stop ends the rounds without handing anything over: the leases expire
// by themselves (what a node that dies leaves).
func (m *Manager) Stop() {
	m.halt()
	m.stopDrains()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.held = make(map[Shard]*Lease)
	m.notifyLocked()
}

func (m *Manager) halt() {
	if m.stop != nil {
		m.stop()
		<-m.done
		m.stop = nil
	}
}

// Wake runs a round now: another node has just handed shards over.
func (m *Manager) Wake() { m.nudge() }

func (m *Manager) nudge() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

func (m *Manager) loop(ctx context.Context) {
	defer close(m.done)
	t := time.NewTicker(m.round)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-m.wake:
		}
		if err := m.runRound(ctx); err != nil && ctx.Err() == nil {
			m.log.Warn("ownership round", "err", err)
		}
	}
}

// runRound is one round: announce, read the live nodes, refresh what is
// held, give up what is placed elsewhere, take what is placed here.
func (m *Manager) runRound(ctx context.Context) error {
	m.mu.Lock()
	leaving := m.leaving
	m.mu.Unlock()
	if !leaving {
		if err := m.registry.Announce(ctx, m.cfg.Node); err != nil {
			m.refresh(ctx) // still keep what is held while Redis answers leases
			return err
		}
	}
	nodes, err := m.registry.Live(ctx)
	if err != nil {
		m.refresh(ctx)
		return err
	}
	if leaving {
		nodes = slices.DeleteFunc(nodes, func(n Node) bool { return n.ID == m.cfg.Node.ID })
	}
	ids := make([]string, len(nodes))
	for i, n := range nodes {
		ids[i] = n.ID
	}
	// Before the refreshes: a holder puts back a lease Redis lost only
	// within the grace its loss opens. A node leaving takes nothing, so
	// the grace is not its concern: it hands its shards over even when the
	// grace cannot be read (its first-use record is in DynamoDB, which may
	// be refusing just then).
	var grace time.Duration
	if !leaving {
		var err error
		if grace, err = m.leases.Grace(ctx, m.cfg.FirstUse); err != nil {
			m.refresh(ctx)
			return err
		}
		m.setGrace(grace > 0)
	}
	m.mu.Lock()
	if !slices.Equal(m.nodes, nodes) {
		m.nodes = nodes
		m.notifyLocked()
	}
	m.mu.Unlock()

	m.refresh(ctx)
	var moving []Shard
	for _, s := range m.heldList() {
		if Place(s, ids) != m.cfg.Node.ID || leaving {
			moving = append(moving, s)
		}
	}
	for _, s := range moving {
		m.startHandOver(s)
	}
	if len(moving) > 0 {
		m.log.Info("handing shards over", "shards", len(moving), "to", countBy(moving, func(s Shard) string { return Place(s, ids) }))
	}
	if leaving {
		return m.awaitDrains(ctx)
	}
	if grace > 0 {
		return nil // Redis lost the leases: their holders may still serve
	}
	var (
		g     errgroup.Group
		mu    sync.Mutex
		errs  []error
		taken []Shard
	)
	// Every shard at once: the owner rebuilding one (Acquired) may need
	// another this round takes too (a conversation's repair reaches its
	// members' sessions); a bound would let those it holds back wait on
	// those it runs.
	for s := range Shard(Shards) {
		if Place(s, ids) != m.cfg.Node.ID {
			continue
		}
		if _, ok := m.Held(s); ok || m.isDraining(s) {
			continue
		}
		g.Go(func() error {
			err := m.take(ctx, s)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				taken = append(taken, s)
			case !errors.Is(err, ErrHeld):
				errs = append(errs, err)
			}
			return nil
		})
	}
	m.refreshingWhile(ctx, func() { _ = g.Wait() })
	if len(taken) > 0 {
		// One line a round, whatever the number of shards: from the node
		// each was last placed on, as this node saw it (at its start, the
		// one it would be on but for this node).
		others := slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id == m.cfg.Node.ID })
		m.log.Info("took shards", "shards", len(taken), "from", countBy(taken, func(s Shard) string {
			from := m.placedOn[s]
			if from == "" || from == m.cfg.Node.ID {
				from = Place(s, others)
			}
			if from == "" {
				return "nobody"
			}
			return from
		}))
	}
	m.notePlacement(ids)
	return errors.Join(errs...)
}

// notePlacement records where each shard not placed here is placed now,
// for the log line of a later taking.
func (m *Manager) notePlacement(ids []string) {
	for s := range Shard(Shards) {
		if owner := Place(s, ids); owner != m.cfg.Node.ID {
			m.placedOn[s] = owner
		}
	}
}

// countBy counts shards by the name key gives each, for a log line.
func countBy(shards []Shard, key func(Shard) string) string {
	counts := map[string]int{}
	for _, s := range shards {
		counts[key(s)]++
	}
	names := slices.Sorted(maps.Keys(counts))
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s:%d", n, counts[n])
	}
	return strings.Join(parts, ",")
}

func (m *Manager) heldList() []Shard {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Shard, 0, len(m.held))
	for s := range m.held {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// refresh extends every lease held, and gives up those it cannot.
func (m *Manager) refresh(ctx context.Context) {
	m.mu.Lock()
	leases := make([]*Lease, 0, len(m.held))
	for _, l := range m.held {
		leases = append(leases, l)
	}
	m.mu.Unlock()
	var (
		g       errgroup.Group
		mu      sync.Mutex
		failed  []Shard
		lastErr error
	)
	g.SetLimit(16)
	for _, l := range leases {
		g.Go(func() error {
			if err := m.leases.Refresh(ctx, l); err != nil && !errors.Is(err, ErrLost) {
				mu.Lock()
				failed, lastErr = append(failed, l.Shard), err
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait()
	if len(failed) > 0 {
		m.log.Warn("refreshing leases failed", "shards", len(failed), "err", lastErr)
	}
	// A lease lost, or not refreshed in time, is lost.
	now := time.Now()
	var lost []Shard
	for _, l := range leases {
		if !l.Valid(now) && m.lose(l) {
			lost = append(lost, l.Shard)
		}
	}
	if len(lost) > 0 {
		m.log.Warn("lost leases: their shards are no longer served here", "shards", len(lost))
	}
}

// lose forgets a lease this node can no longer prove it holds, and
// reports whether it still held it.
func (m *Manager) lose(l *Lease) bool {
	m.mu.Lock()
	if m.held[l.Shard] != l {
		m.mu.Unlock()
		return false
	}
	delete(m.held, l.Shard)
	m.notifyLocked()
	m.mu.Unlock()
	if m.cfg.Hooks.Lost != nil {
		m.cfg.Hooks.Lost(l.Shard)
	}
	return true
}

// drainLimit bounds the drain of a shard handed over: a lease lifetime,
// what a dead node's shards wait before they are taken. Past it the shard
// goes with operations still in flight: they end here, and the session
// rows they still put are dropped and their effects applied again at the
// new owner (the caller's seal: see Hooks.Releasing). Half a lease was
// tried: joins settled sooner, but the cluster fault run then ended with
// a gap in a conversation's seqs — more appends cut off in flight, whose
// seq the old owner gave while the new one gave its own.
func (m *Manager) drainLimit() time.Duration { return m.cfg.LeaseTTL }

// startHandOver hands shard over in the background. A drain waits for the
// operations in flight on the shard, and they may wait for shards that
// only a later round takes (another node's, that left or died, or one
// this handover's new owner has not taken yet): a round that waited for
// its drains would take nothing meanwhile, and the node's drains and the
// shards they wait for would wait on each other until the operations
// gave up. The shard's new owner is told as soon as it is released.
func (m *Manager) startHandOver(s Shard) {
	m.mu.Lock()
	if m.draining[s] {
		m.mu.Unlock()
		return
	}
	m.draining[s] = true
	m.mu.Unlock()
	m.drains.Add(1)
	go func() {
		defer m.drains.Done()
		m.handOver(m.drainCtx, s)
		m.mu.Lock()
		delete(m.draining, s)
		m.mu.Unlock()
		if m.cfg.Hooks.HandedOver != nil {
			m.cfg.Hooks.HandedOver([]Shard{s})
		}
	}()
}

// isDraining reports whether shard is being handed over from this node.
func (m *Manager) isDraining(s Shard) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.draining[s]
}

// awaitDrains waits for every handover running, and cuts short those still
// running when ctx ends.
func (m *Manager) awaitDrains(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		m.drains.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		m.stopDrains()
		<-done
		return fmt.Errorf("handing shards over: %w", ctx.Err())
	}
}

// handOver stops serving shard, lets its owner drain it, and gives its
// lease back.
func (m *Manager) handOver(ctx context.Context, s Shard) {
	m.mu.Lock()
	l := m.held[s]
	delete(m.held, s)
	if l != nil {
		m.handing[s] = l
	}
	m.notifyLocked()
	m.mu.Unlock()
	if l == nil {
		return
	}
	defer func() {
		m.mu.Lock()
		delete(m.handing, s)
		m.mu.Unlock()
	}()
	if m.cfg.Hooks.Releasing != nil {
		// The lease is kept while its owner drains the shard: a successor
		// must not take it before the rows of the operations in flight
		// are written. For a while only: an operation that waits longer
		// is retried by its client at the new owner, and what it still
		// writes here is fenced (see Hooks.Releasing).
		drainCtx, cancel := context.WithTimeout(ctx, m.drainLimit())
		m.keepingWhile(drainCtx, l, func() { m.cfg.Hooks.Releasing(drainCtx, s) })
		cancel()
	}
	// Given back even after a drain cut short, unless the node stops (Stop,
	// or a Leave past its deadline): then the lease expires by itself.
	releaseCtx, cancel := context.WithTimeout(ctx, m.cfg.LeaseTTL)
	defer cancel()
	if err := m.leases.Release(releaseCtx, l); err != nil {
		m.log.Warn("giving a shard's lease back", "shard", s, "err", err)
	}
}

// take takes shard's lease and, once its owner rebuilt it, serves it.
func (m *Manager) take(ctx context.Context, s Shard) error {
	l, err := m.leases.Take(ctx, s)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.epochs[s] = l.Epoch
	m.mu.Unlock()
	if m.cfg.Hooks.Acquired != nil {
		if err := m.cfg.Hooks.Acquired(ctx, s, l.Fence()); err != nil {
			_ = m.leases.Release(context.WithoutCancel(ctx), l)
			return err
		}
		// Rebuilding took part of the lease: start it afresh.
		if err := m.leases.Refresh(ctx, l); err != nil {
			return err
		}
	}
	m.mu.Lock()
	m.held[s] = l
	m.notifyLocked()
	m.mu.Unlock()
	return nil
}

// keepingWhile runs fn, refreshing l once a round meanwhile (a lease
// being handed over is no longer among those held).
func (m *Manager) keepingWhile(ctx context.Context, l *Lease, fn func()) {
	m.everyRoundWhile(ctx, func() {
		if err := m.leases.Refresh(ctx, l); err != nil {
			m.log.Warn("keeping a shard's lease while it drains", "shard", l.Shard, "err", err)
		}
	}, fn)
}

// refreshingWhile runs wait, announcing the node and refreshing the
// leases held once a round meanwhile: handing shards over and taking them wait for their owner
// (the rows of a shard handed over, the rebuild of one taken), which under
// load can outlast a lease, and the shards the node keeps must not expire
// behind them.
func (m *Manager) refreshingWhile(ctx context.Context, wait func()) {
	m.everyRoundWhile(ctx, func() {
		m.mu.Lock()
		leaving := m.leaving
		m.mu.Unlock()
		if !leaving {
			// Nor must the node's announcement: the others would take it
			// for dead and move its shards.
			if err := m.registry.Announce(ctx, m.cfg.Node); err != nil {
				m.log.Warn("announcing the node", "err", err)
			}
		}
		m.refresh(ctx)
	}, wait)
}

// everyRoundWhile runs fn, and tick once a round until fn returns.
func (m *Manager) everyRoundWhile(ctx context.Context, tick func(), fn func()) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(m.round)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				tick()
			}
		}
	}()
	fn()
	close(done)
	<-stopped
}

func (m *Manager) notifyLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}
