package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/imcore/im/server/store"
	"github.com/imcore/im/session"
)

// Owners is what an engine runs with on a node of a scaled-out deployment
// where every conversation and every user has one owner node (see
// docs/SCALING.md). The engine keeps in memory, as the truth, only what
// this node owns; the caller (package routing) sends it only operations on
// conversations and users the node owns. What an operation on a
// conversation does to a member owned elsewhere — a session effect — goes
// to that member's owner through Apply.
type Owners interface {
	// OwnsConv reports whether this node serves conv now (the engine's
	// memory of it is the truth).
	OwnsConv(conv string) bool
	// HoldUser reports whether this node serves user now and, when it
	// does, keeps serving it until release is called (a shard is not
	// handed over with a change of it half made).
	HoldUser(user string) (release func(), ok bool)
	// Apply has the owners of the effects' users apply them and returns
	// one result per effect once each owner applied them in memory; the
	// rows they put are written behind, and each result's Ticket names
	// them (Confirm waits for them).
	Apply(ctx context.Context, effects []Effect) ([]EffectResult, error)
	// Confirm returns once the rows ticket names are written. It fails —
	// never returns nil for rows that may be lost — when the node that
	// put them is gone or restarted since: the effects must then be
	// applied again where their users are now.
	Confirm(ctx context.Context, ticket WriteTicket) error
	// UserFence returns the epoch of the lease this node took user's
	// shard at, while the user's rows are this node's to write (false:
	// not, or never): the rows of the user's sessions and totals are
	// written fenced by it (see store.Derived.Fences).
	UserFence(user string) (epoch int64, ok bool)
	// HoldWrite reports whether user's rows are still this node's to
	// write and, when they are, keeps them so until release (a shard is
	// not handed over with a write of its rows in flight): asked by the
	// backend right before it writes them (store.Derived.Hold). Each
	// write must be done by until, asked right before it (nil or zero: no
	// bound): when this node stops trusting its lease of the user's shard
	// unless it is refreshed.
	HoldWrite(user string) (release func(), until func() time.Time, ok bool)
}

// Effect is a session effect on one user, as it travels to the user's
// owner: what the effect is, and the time of the operation that made it.
type Effect struct {
	User string
	Now  int64
	SessionEffect
}

// EffectResult is what an effect did: whether the user's session changed,
// the user's session clock right after, and, applied on another node, the
// rows it put there.
type EffectResult struct {
	Changed bool
	Clock   int64
	Ticket  WriteTicket `json:",omitzero"`
}

// WriteTicket names the rows an engine put up to a moment: they are
// written once the engine Boot (one process's life of one node) has
// written its flusher's generation Gen. Node, the node's address, is set
// by the caller that reached it.
type WriteTicket struct {
	Node string `json:",omitempty"`
	Boot string
	Gen  uint64
}

// applied is an effect applied in memory on another node whose rows are
// not yet known to be written.
type applied struct {
	Effect
	Ticket WriteTicket
}

// fenceRows fences the sessions and totals of d by the epochs of their
// users' leases, and drops those of users whose rows are no longer this
// node's to write (Owners.UserFence: the shard was handed over and
// sealed, or its lease lost), and those computed under another epoch than
// the current one (staged: the rows of an earlier time here, which an
// operation of that time put after the shard was taken again, or which a
// write in flight across the taking carried back). Written, such a row
// would land after the successor (or this node's next time) read the
// tables — a session it never learns of, beside a total it keeps — and
// the tables refuse only rows written since. Dropped, the rows' tickets
// stop confirming (a new life of the writer), so every effect not yet
// confirmed is applied again where its user is now (effects are
// idempotent). The same check is made again right before each user's
// rows are written (Derived.Hold): the batch may be written, or retried,
// well after it was cut.
func (e *Engine) fenceRows(d *store.Derived, staged *batch) {
	fences := map[string]int64{}
	current := func(user string) (int64, bool) {
		if epoch, ok := fences[user]; ok {
			return epoch, true
		}
		epoch, ok := e.owners.UserFence(user)
		if ok {
			fences[user] = epoch
		}
		return epoch, ok
	}
	sessions := slices.DeleteFunc(d.Sessions, func(st session.State) bool {
		epoch, ok := current(st.User)
		return !ok || staged.sessionEpochs[store.MemberKey{User: st.User, Conv: st.Conv}] != epoch
	})
	totals := slices.DeleteFunc(d.Totals, func(t store.TotalRow) bool {
		epoch, ok := current(t.User)
		return !ok || staged.totalEpochs[[2]string{t.User, t.List}] != epoch
	})
	if dropped := len(d.Sessions) - len(sessions) + len(d.Totals) - len(totals); dropped > 0 {
		e.newLife()
		e.log.Warn("dropped rows of users whose shards this node no longer owns, or computed before it took them again; their effects are applied again at their owners",
			"rows", dropped)
	}
	d.Sessions, d.Totals = sessions, totals
	d.Fences = fences
	var ended sync.Once
	d.Hold = func(user string) (func(), func() time.Time, bool) {
		release, until, ok := e.owners.HoldWrite(user)
		if ok {
			if epoch, held := e.owners.UserFence(user); !held || epoch != fences[user] {
				// Taken again since the batch was cut: its rows are of
				// the earlier time.
				release()
				ok = false
			}
		}
		if !ok {
			// Sealed, or taken again, since the batch was cut: skipped
			// by the backend.
			ended.Do(func() {
				e.newLife()
				e.log.Warn("dropped rows of users whose shards were handed over, or taken again, during the write; their effects are applied again at their owners", "user", user)
			})
		}
		return release, until, ok
	}
}

// alone is the ownership of an engine that owns every conversation and
// user, with nobody to share them with: an engine built without Owners
// (a tool, a test). The server's engine runs under routing.Router.
type alone struct{ e *Engine }

func (alone) OwnsConv(string) bool           { return true }
func (alone) HoldUser(string) (func(), bool) { return func() {}, true }
func (a alone) Apply(ctx context.Context, effects []Effect) ([]EffectResult, error) {
	return a.e.ApplyEffects(ctx, effects)
}
func (a alone) Confirm(ctx context.Context, t WriteTicket) error { return a.e.WaitWritten(ctx, t) }
func (alone) UserFence(string) (int64, bool)                     { return 0, true }
func (alone) HoldWrite(string) (func(), func() time.Time, bool) {
	return func() {}, nil, true
}

// peekConv returns conv's state for an operation that only reads it: the
// engine's own for a conversation this node serves, else read from the
// backend and not kept (session operations read the ticks of
// conversations owned elsewhere).
func (e *Engine) peekConv(ctx context.Context, conv string) (*convState, error) {
	if !e.owners.OwnsConv(conv) {
		return e.convs.read(ctx, e.be, conv)
	}
	return e.convs.get(ctx, e.be, conv)
}

// holdUser reports whether user's state is this engine's to change, and
// keeps it so until release.
func (e *Engine) holdUser(user string) (release func(), ok bool) {
	return e.owners.HoldUser(user)
}

// affect applies effects in memory, each on its user's owner — this
// engine for the users it owns — and returns the results by user (for a
// user with several effects, the last one's clock, changed if any
// changed) and the effects applied on other nodes, whose rows are written
// behind there (confirm waits for them).
func (e *Engine) affect(ctx context.Context, effects []Effect) (map[string]EffectResult, []applied, error) {
	local := make([]Effect, 0, len(effects))
	var remote []Effect
	// Whether each user is held here, asked once per user: a message's
	// effects name a few users, a group's hundreds (a map then).
	held := heldUsers{}
	for _, ef := range effects {
		ok, seen := held.get(ef.User)
		if !seen {
			var release func()
			if release, ok = e.owners.HoldUser(ef.User); ok {
				defer release()
			}
			held.set(ef.User, ok)
		}
		if ok {
			local = append(local, ef)
		} else {
			remote = append(remote, ef)
		}
	}
	results := make(map[string]EffectResult, len(effects))
	pending := make([]applied, 0, len(effects))
	if len(local) > 0 {
		life := e.life()
		if err := e.affectLocal(ctx, local, results); err != nil {
			return nil, nil, err
		}
		// Written behind here, and confirmed like those of other nodes:
		// the shard of a user may be handed over before its rows are
		// written, and the writer then drops them (fenceRows) — the
		// effect is applied again at its new owner.
		ticket := WriteTicket{Boot: life, Gen: e.flush.current()}
		for _, ef := range local {
			pending = append(pending, applied{Effect: ef, Ticket: ticket})
		}
	}
	if len(remote) > 0 {
		got, err := e.owners.Apply(ctx, remote)
		if err != nil {
			return nil, nil, err
		}
		if len(got) != len(remote) {
			return nil, nil, fmt.Errorf("session effects: %d results for %d effects", len(got), len(remote))
		}
		for i, ef := range remote {
			results[ef.User] = mergeResult(results[ef.User], got[i])
			if got[i].Ticket != (WriteTicket{}) {
				pending = append(pending, applied{Effect: ef, Ticket: got[i].Ticket})
			}
		}
	}
	return results, pending, nil
}

// heldUsers records whether users are held here: in a slice while they
// are few, in a map past that.
type heldUsers struct {
	few  []heldUser
	many map[string]bool
}

type heldUser struct {
	user string
	ok   bool
}

// fewUsers is how many users heldUsers keeps in its slice.
const fewUsers = 8

func (h *heldUsers) get(user string) (ok, seen bool) {
	if h.many != nil {
		ok, seen = h.many[user]
		return ok, seen
	}
	for _, u := range h.few {
		if u.user == user {
			return u.ok, true
		}
	}
	return false, false
}

func (h *heldUsers) set(user string, ok bool) {
	if h.many == nil && len(h.few) < fewUsers {
		h.few = append(h.few, heldUser{user, ok})
		return
	}
	if h.many == nil {
		h.many = make(map[string]bool, 2*fewUsers)
		for _, u := range h.few {
			h.many[u.user] = u.ok
		}
	}
	h.many[user] = ok
}

// mergeResult folds a later result of one user into an earlier one.
func mergeResult(before, later EffectResult) EffectResult {
	return EffectResult{Changed: before.Changed || later.Changed, Clock: max(before.Clock, later.Clock)}
}

// affectLocal applies effects on users this engine owns, in order.
func (e *Engine) affectLocal(ctx context.Context, effects []Effect, results map[string]EffectResult) error {
	byUser := make(map[string][]Effect, len(effects))
	var users []string
	needs := make([]need, 0, len(effects))
	for _, ef := range effects {
		if _, seen := byUser[ef.User]; !seen {
			users = append(users, ef.User)
		}
		byUser[ef.User] = append(byUser[ef.User], ef)
		needs = append(needs, need{ef.User, ef.Conv})
	}
	return e.retryMissing(ctx, needs, func() error {
		return e.withUsers(users, func(u *userState) error {
			var res EffectResult
			for _, ef := range byUser[u.user] {
				_, changed, err := e.applyEffect(u, ef.Now, ef.SessionEffect)
				if err != nil {
					return err
				}
				res.Changed = res.Changed || changed
			}
			res.Clock = u.clock
			results[u.user] = res
			return nil
		})
	})
}

// ApplyEffects applies effects another node's engine sent to this one,
// the owner of their users, with one result per effect; their rows are
// written behind, and each result's Ticket names them (WaitWritten waits
// for them).
func (e *Engine) ApplyEffects(ctx context.Context, effects []Effect) ([]EffectResult, error) {
	ctx, err := e.begin(ctx)
	if err != nil {
		return nil, err
	}
	life := e.life()
	results := make(map[string]EffectResult, len(effects))
	if err := e.affectLocal(ctx, effects, results); err != nil {
		return nil, fmt.Errorf("session effects: %w", err)
	}
	ticket := WriteTicket{Boot: life, Gen: e.flush.current()}
	out := make([]EffectResult, len(effects))
	for i, ef := range effects {
		out[i] = results[ef.User]
		out[i].Ticket = ticket
	}
	return out, nil
}

// Forget drops what the engine holds of the conversations and users
// picked (a shard this node no longer owns), once every row put so far for
// them is written (not every row of the node: see flusher.barrierOf): the
// next operation on them reads them from the backend.
func (e *Engine) Forget(ctx context.Context, conv func(string) bool, user func(string) bool) error {
	if err := e.flush.barrierOf(ctx, conv, user); err != nil {
		return err
	}
	e.Drop(conv, user)
	return nil
}

// Discard drops, unwritten, the sessions and totals of the users picked
// that wait in the writer: rows an operation cut off by a handover put
// after the shard was sealed, which the shard's next epoch here must not
// write. Their effects' tickets stop confirming, so that the effects are
// applied again.
func (e *Engine) Discard(user func(string) bool) {
	if n := e.flush.dropUsers(user); n > 0 {
		e.newLife()
		e.log.Warn("discarded rows put for a shard after it was handed over; their effects are applied again at their owners", "rows", n)
	}
}

// Drop drops what the engine holds of the conversations and users picked
// at once, without waiting for the rows put so far: for a shard this node
// is about to serve again, whose rows from its earlier time here were
// written when it gave the shard up (Forget). Under load the write-behind
// is seconds deep, and a shard taken must not wait for the rows of every
// other.
func (e *Engine) Drop(conv func(string) bool, user func(string) bool) {
	e.forgetPeople()
	for i := range e.convs.shards {
		sh := &e.convs.shards[i]
		sh.mu.Lock()
		for id := range sh.m {
			if conv(id) {
				delete(sh.m, id)
			}
		}
		sh.mu.Unlock()
	}
	for i := range e.users.shards {
		sh := &e.users.shards[i]
		e.users.lock(sh)
		for id, u := range sh.m {
			if user(id) {
				sh.cached -= len(u.sessions)
				delete(sh.m, id)
			}
		}
		sh.mu.Unlock()
	}
}

// RepairConvs derives again, from the log, what a crash left underived of
// convs (see Repair): the new owner of a shard runs it on the shard's
// conversations behind before it serves them.
func (e *Engine) RepairConvs(ctx context.Context, convs []string) error {
	for _, conv := range slices.Compact(slices.Sorted(slices.Values(convs))) {
		if err := e.repairConv(ctx, conv); err != nil {
			return fmt.Errorf("repair %s: %w", conv, err)
		}
	}
	return e.flush.barrier(ctx)
}

// Barrier returns once every row put so far is written.
func (e *Engine) Barrier(ctx context.Context) error { return e.flush.barrier(ctx) }
