package routing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/imcore/im/server/chat"
	"github.com/imcore/im/server/engine"
	"github.com/imcore/im/server/hub"
	"github.com/imcore/im/server/nodelink"
	"github.com/imcore/im/server/ownership"
	"github.com/imcore/im/server/store"
)

// Placement is where each shard lives, as a Router needs to know it:
// which node owns a shard, and whether this node serves it now and until
// when it trusts that. A node of several follows its leases in Redis
// (*ownership.Manager); a server alone owns every shard (Solo).
type Placement interface {
	// NodeID is this node's id.
	NodeID() string
	// NodeAddr is where other nodes reach this one.
	NodeAddr() string
	// Owner returns the node a shard is placed on.
	Owner(shard ownership.Shard) ownership.Node
	// Nodes returns the live nodes.
	Nodes() []ownership.Node
	// Changed returns a channel closed at the next change of ownership.
	Changed() <-chan struct{}
	// Wake runs an ownership round now.
	Wake()
	// Epoch returns the epoch this node last took a shard at.
	Epoch(shard ownership.Shard) (int64, bool)
	// TrustedUntil returns when this node stops trusting its lease of a
	// shard unless it is refreshed first (false: it holds none).
	TrustedUntil(shard ownership.Shard) (time.Time, bool)
}

// Router is a node's chat.Engine in a deployment where conversations and
// users have owners: it serves what this node owns with its engine and
// forwards the rest.
type Router struct {
	eng   *engine.Engine
	be    store.Backend
	pool  *nodelink.Pool
	local *hub.Hub
	log   *slog.Logger
	svc   *chat.Service // set by Serve

	mu     sync.Mutex
	shards Placement // set by Attach

	gates [ownership.Shards]gate

	// unrepaired memoizes Backend.Unrepaired across the shards taken in
	// one round.
	unrepairedMu sync.Mutex
	unrepaired   []string
	unrepairedAt time.Time

	// waking holds the nodes a wake is in flight to, and whether another
	// must follow it (see wake).
	wakeMu sync.Mutex
	waking map[string]bool

	confirms confirms

	// told receives what other nodes tell of the users watched here
	// (OnPresence).
	presenceMu sync.Mutex
	told       func(user string, online bool, lastSeen int64)
}

// Config is what a Router runs with.
type Config struct {
	// Backend is the shared storage; the Router builds its engine on it.
	Backend store.Backend
	// Engine tunes the engine (Owners is set by the Router).
	Engine engine.Options
	// Pool reaches the other nodes (nil for a server alone).
	Pool *nodelink.Pool
	// Local holds the devices connected to this node, which pushes from
	// other nodes reach.
	Local  *hub.Hub
	Logger *slog.Logger
}

// New returns a Router serving nothing until Attach gives it the node's
// shards (their hooks open each shard as it is taken).
func New(ctx context.Context, cfg Config) (*Router, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	r := &Router{be: cfg.Backend, pool: cfg.Pool, local: cfg.Local, log: cfg.Logger}
	opts := cfg.Engine
	opts.Owners = owners{r}
	opts.PeopleChanged = r.peopleChanged
	eng, err := engine.New(ctx, cfg.Backend, opts)
	if err != nil {
		return nil, err
	}
	r.eng = eng
	return r, nil
}

// Engine returns the engine of the shards this node owns, for the chat
// service that answers the frames run here (Serve).
func (r *Router) Engine() *engine.Engine { return r.eng }

// Serve has svc, built on Engine, answer the frames run on this node.
func (r *Router) Serve(svc *chat.Service) { r.svc = svc }

// Attach gives the Router the node's ownership, once it is started.
func (r *Router) Attach(s Placement) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.shards = s
}

func (r *Router) ownership() Placement {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.shards
}

// Hooks are the ownership hooks that open and close the Router's shards.
func (r *Router) Hooks() ownership.Hooks {
	return ownership.Hooks{Acquired: r.acquired, Releasing: r.releasing, Lost: r.lost, HandedOver: r.handedOver}
}

// acquired rebuilds a shard just taken: what the engine held of it from an
// earlier time is dropped, and what a dead owner left underived is
// derived again (in the background: see repair) while the shard is
// served.
func (r *Router) acquired(ctx context.Context, shard ownership.Shard, _ ownership.Fence) error {
	r.eng.Drop(
		func(conv string) bool { return ownership.ShardOfConv(conv) == shard },
		func(user string) bool { return ownership.ShardOfUser(user) == shard })
	// Rows an operation of this node's earlier time here put after the
	// shard was sealed must not be written under the new epoch.
	r.eng.Discard(func(user string) bool { return ownership.ShardOfUser(user) == shard })
	convs, err := r.unrepairedIn(ctx, shard)
	if err != nil {
		return err
	}
	g := &r.gates[shard]
	g.open()
	if len(convs) > 0 && g.enter() {
		go r.repair(shard, convs)
	}
	return nil
}

// repairRetry is the wait before a failed repair of a shard is tried
// again.
const repairRetry = 250 * time.Millisecond

// repair derives again the conversations of shard a dead owner left
// behind, as one operation in flight on the shard (a handover waits for
// it), until it succeeds or the shard is no longer served here (its next
// owner repairs). It runs beside the ownership round that took the shard,
// never in it: a repair reaches the sessions of the conversations'
// members, whose shards may be taken by this very round, or still be
// leased to the dead owner until a later one; a round waiting for them
// would renew none of the node's leases meanwhile.
func (r *Router) repair(shard ownership.Shard, convs []string) {
	g := &r.gates[shard]
	defer g.exit()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*routeWait)
		err := r.eng.RepairConvs(ctx, convs)
		cancel()
		if err == nil {
			r.log.Debug("repaired a shard's conversations", "shard", shard, "conversations", len(convs))
			return
		}
		if !g.isServing() {
			return
		}
		r.log.Warn("repairing a shard's conversations failed; retrying", "shard", shard, "err", err)
		time.Sleep(repairRetry)
	}
}

// releasing waits for the operations in flight on a shard handed over and
// for their rows, then forgets it.
func (r *Router) releasing(ctx context.Context, shard ownership.Shard) {
	if !r.gates[shard].closeWithin(ctx) {
		r.log.Warn("handing a shard over with operations still in flight", "shard", shard, "err", ctx.Err())
	}
	// The rows put so far go before the lease does, even after a drain
	// cut short by its bound (not when the node stops: its engine's close
	// writes them).
	fctx := ctx
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		var cancel context.CancelFunc
		fctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), forgetWait)
		defer cancel()
	}
	if err := r.forget(fctx, shard); err != nil {
		r.log.Warn("handing a shard over before its rows are written", "shard", shard, "err", err)
	}
	// From here the writer drops the shard's rows (an operation the drain
	// cut off may still put some: it applies them again at the new owner),
	// and the writes of them in flight, fenced by this node's epoch, land
	// before the lease goes: none lands after the successor read the
	// tables.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), forgetWait)
	defer cancel()
	if !r.gates[shard].sealWithin(sctx) {
		r.log.Warn("handing a shard over with a write of its rows in flight", "shard", shard)
	}
}

// forgetWait bounds the writing of a shard's rows when it is handed over.
const forgetWait = 5 * time.Second

// handedOver tells the new owners of shards just handed over to take them
// now.
func (r *Router) handedOver(shards []ownership.Shard) {
	s := r.ownership()
	if s == nil {
		return
	}
	told := map[string]bool{}
	for _, shard := range shards {
		owner := s.Owner(shard)
		if owner.ID == "" || owner.ID == s.NodeID() || told[owner.Addr] {
			continue
		}
		told[owner.Addr] = true
		r.wake(owner)
	}
}

// wake tells node to run an ownership round now. Shards are handed over
// one by one: while a wake to a node is in flight, those that follow make
// one more, not one each.
func (r *Router) wake(node ownership.Node) {
	r.wakeMu.Lock()
	defer r.wakeMu.Unlock()
	if r.waking == nil {
		r.waking = map[string]bool{}
	}
	if again, inFlight := r.waking[node.Addr]; inFlight {
		if !again {
			r.waking[node.Addr] = true
		}
		return
	}
	r.waking[node.Addr] = false
	go func() {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			req, _ := request(barrierStream(), mWake, struct{}{})
			if _, err := r.pool.Forward(ctx, node.Addr, req); err != nil {
				r.log.Debug("telling a node to take its shards", "node", node.ID, "err", err)
			}
			cancel()
			r.wakeMu.Lock()
			if !r.waking[node.Addr] {
				delete(r.waking, node.Addr)
				r.wakeMu.Unlock()
				return
			}
			r.waking[node.Addr] = false
			r.wakeMu.Unlock()
		}
	}()
}

// lost stops serving a shard whose lease is gone. Its rows stop being
// written at once, not once its operations in flight have drained: a
// successor may take the shard from now on, and a row written after it
// read the tables could pass the epoch fence (the writer drops them and
// their effects are applied again where their users are now).
func (r *Router) lost(shard ownership.Shard) {
	r.gates[shard].stopWriting()
	go r.releasing(context.Background(), shard)
}

func (r *Router) forget(ctx context.Context, shard ownership.Shard) error {
	return r.eng.Forget(ctx,
		func(conv string) bool { return ownership.ShardOfConv(conv) == shard },
		func(user string) bool { return ownership.ShardOfUser(user) == shard })
}

// unrepairedIn returns the conversations of shard whose derived state is
// behind their log.
func (r *Router) unrepairedIn(ctx context.Context, shard ownership.Shard) ([]string, error) {
	r.unrepairedMu.Lock()
	defer r.unrepairedMu.Unlock()
	if r.unrepaired == nil || time.Since(r.unrepairedAt) > time.Second {
		all, err := r.be.Unrepaired(ctx)
		if err != nil {
			return nil, err
		}
		r.unrepaired, r.unrepairedAt = all, time.Now()
	}
	var out []string
	for _, conv := range r.unrepaired {
		if ownership.ShardOfConv(conv) == shard {
			out = append(out, conv)
		}
	}
	return out, nil
}

// enter admits an operation on shard while this node serves it and still
// trusts its lease: a node that wakes from a pause longer than its lease
// (SIGSTOP, a stalled VM) serves nothing of the shard, even before its
// next round finds the lease lost. The caller calls the gate's exit.
func (r *Router) enter(shard ownership.Shard) bool {
	return r.admit(shard, (*gate).enter)
}

// enterWithin is enter for a step of an operation already in flight
// (gate.enterWithin): also admitted while the shard drains.
func (r *Router) enterWithin(shard ownership.Shard) bool {
	return r.admit(shard, (*gate).enterWithin)
}

func (r *Router) admit(shard ownership.Shard, in func(*gate) bool) bool {
	g := &r.gates[shard]
	if !in(g) {
		return false
	}
	if !r.trusted(shard) {
		g.exit()
		return false
	}
	return true
}

// trusted reports whether this node still trusts its lease of shard.
func (r *Router) trusted(shard ownership.Shard) bool {
	s := r.ownership()
	if s == nil {
		return false
	}
	_, ok := s.TrustedUntil(shard)
	return ok
}

// Close closes the engine (the node has handed its shards over).
func (r *Router) Close() error { return r.eng.Close() }

// errNoOwner says no node served a shard within routeWait.
var errNoOwner = errors.New("no node serves the shard")

// routeWait bounds how long an operation waits for its shard's owner
// (a node that died holds its shards until its leases expire).
const routeWait = 30 * time.Second

// route runs an operation on shard: here, with local, while this node
// serves the shard; otherwise at its owner, with method and args,
// decoding the answer into result. It waits out a move of the shard.
func (r *Router) route(ctx context.Context, shard ownership.Shard, stream, method string, args any, result any, local func(ctx context.Context) error) error {
	return r.routeNoting(ctx, shard, stream, method, args, result, local, nil)
}

// routeNoting is route that also sets *unanswered when an attempt reached
// an owner whose answer never came back (the link dropped with the
// request in flight): that owner may have done the operation.
func (r *Router) routeNoting(ctx context.Context, shard ownership.Shard, stream, method string, args any, result any, local func(ctx context.Context) error, unanswered *bool) error {
	deadline := time.Now().Add(routeWait)
	backoff := 5 * time.Millisecond
	for {
		if r.enter(shard) {
			err := local(ctx)
			r.gates[shard].exit()
			if !errors.Is(err, store.ErrMoved) {
				return err
			}
			// Handed over while it waited: again, at the new owner.
			if err := r.waitForChange(ctx, backoff); err != nil {
				return err
			}
			continue
		}
		err := r.forward(ctx, shard, stream, method, args, result)
		if unanswered != nil && errors.Is(err, nodelink.ErrLinkDown) {
			*unanswered = true
		}
		if !retryable(err) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %w (%v)", method, errNoOwner, err)
		}
		if err := r.waitForChange(ctx, backoff); err != nil {
			return err
		}
		backoff = min(2*backoff, 250*time.Millisecond)
	}
}

// forward asks shard's owner, as this node sees it, to run method.
func (r *Router) forward(ctx context.Context, shard ownership.Shard, stream, method string, args any, result any) error {
	owner, err := r.ownerOf(shard)
	if err != nil {
		return err
	}
	req, err := request(stream, method, args)
	if err != nil {
		return err
	}
	raw, err := r.pool.Forward(ctx, owner.Addr, req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &transportError{err}
	}
	return decodeAnswer(raw, result)
}

// selfID is this node's id ("" before Attach, or a server alone).
func (r *Router) selfID() string {
	if s := r.ownership(); s != nil {
		return s.NodeID()
	}
	return ""
}

// selfAddr is where other nodes reach this one ("" before Attach).
func (r *Router) selfAddr() string {
	if s := r.ownership(); s != nil {
		return s.NodeAddr()
	}
	return ""
}

// ownerOf returns the node shard is placed on when it is another node.
func (r *Router) ownerOf(shard ownership.Shard) (ownership.Node, error) {
	s := r.ownership()
	if s == nil {
		return ownership.Node{}, errMoving
	}
	owner := s.Owner(shard)
	if owner.ID == "" || owner.ID == s.NodeID() {
		// Placed here but not served yet (being taken), or no node
		// known: wait for it.
		return ownership.Node{}, errMoving
	}
	return owner, nil
}

// errMoving says a shard is between owners.
var errMoving = errors.New("the shard is moving")

// retryable reports whether an operation that failed with err may be
// tried again at the shard's owner: the shard moved, the owner refused
// it (not its shard any more, or stopping), or the link to it failed
// (every operation is idempotent).
func retryable(err error) bool {
	var t *transportError
	return errors.Is(err, errMoving) || errors.As(err, &t)
}

// transportError is a failure to have a node answer: the link could not
// be opened or dropped, or the node refused to serve the request.
type transportError struct{ err error }

func (e *transportError) Error() string { return e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// waitForChange waits for a change of ownership, at most d.
func (r *Router) waitForChange(ctx context.Context, d time.Duration) error {
	var changed <-chan struct{}
	if s := r.ownership(); s != nil {
		changed = s.Changed()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-changed:
	case <-t.C:
	}
	return nil
}
