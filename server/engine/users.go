package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/session"
)

// userShards spread the users over locks. A user's critical section is
// its shard's lock: an operation on many users (a message to a group)
// takes each shard's lock once, not each user's.
const userShards = 64

// errMissing says a cached entry an operation loaded was forgotten before
// the operation used it; the operation loads again.
var errMissing = errors.New("cache entry forgotten")

// userTable holds the users the engine has touched: each one's session
// clock, unread totals and the sessions it has loaded.
type userTable struct {
	seed        maphash.Seed
	maxPerShard int
	shards      [userShards]userShard
	locks       atomic.Uint64 // shard locks taken, for tests that count them
}

type userShard struct {
	mu     sync.Mutex
	m      map[string]*userState
	cached int    // sessions cached in the shard
	uses   uint64 // a counter stamped on entries as they are used
	// writes are the rows the current critical section changed, put at
	// its end as one: a session, the unread totals and the gateway it
	// moves are in the same backend write, so a sync never reads one
	// without the others. gens are where to record that write's
	// generation.
	writes []func(b *batch)
	gens   []*uint64
	// stamps counts the changes staged in the shard; each user keeps the
	// count of its last (readPage tells a change made while it read).
	stamps uint64
}

// stage adds rows to the critical section's write; gen receives its
// generation. The caller holds the shard's lock.
func (sh *userShard) stage(gen *uint64, rows func(b *batch)) {
	sh.stamps++
	sh.writes = append(sh.writes, rows)
	sh.gens = append(sh.gens, gen)
}

// commit puts the critical section's rows as one write. The caller holds
// the shard's lock.
func (sh *userShard) commit(f *flusher) {
	if len(sh.writes) == 0 {
		return
	}
	writes := sh.writes
	g := f.put(func(b *batch) {
		for _, w := range writes {
			w(b)
		}
	})
	for _, gen := range sh.gens {
		*gen = g
	}
	clear(sh.writes)
	clear(sh.gens)
	sh.writes, sh.gens = sh.writes[:0], sh.gens[:0]
}

// userState is one user's state; it changes only under its shard's lock.
type userState struct {
	shard  *userShard
	user   string
	clock  int64            // the last session timestamp given
	totals map[string]int64 // unread total by list
	// sessions holds the user's sessions the engine has loaded, present or
	// known absent.
	sessions map[string]*sessEntry
	gen      uint64 // flusher generation of the last total written
	// epoch is the epoch of the user's shard this node held when it read
	// the user (an owner's): the rows computed from this state carry it,
	// and are written only while it is still the shard's epoch here
	// (fenceRows).
	epoch int64
	stamp uint64 // the shard's stamps at the user's last change
	// rows are the tickets of the rows conversations' owners put for the
	// user (its pending rows), the newest per owner's life: a hello
	// confirms them before it reads the pending rows (RowsOf).
	rows []WriteTicket
}

// newUserState is user's state as rec, the backend's, says, with no
// session loaded.
func newUserState(sh *userShard, user string, rec store.UserRecord, epoch int64) *userState {
	totals := rec.Totals
	if totals == nil {
		totals = map[string]int64{}
	}
	return &userState{shard: sh, user: user, clock: rec.Clock, totals: totals, sessions: map[string]*sessEntry{}, epoch: epoch}
}

// userEpoch returns the epoch of user's shard as this node holds it now,
// read before the user's state is (see userState.epoch); 0 for a shard
// not this node's to write.
func (e *Engine) userEpoch(user string) int64 {
	epoch, _ := e.owners.UserFence(user)
	return epoch
}

// sessEntry is one cached session, or the knowledge that it does not exist
// yet, with how it would be filed when created.
type sessEntry struct {
	st            session.State
	exists        bool
	category, biz string // an absent session's filing (its peer's account)
	used          uint64
	gen           uint64 // flusher generation holding its last write
}

func newUserTable(maxSessions int) *userTable {
	t := &userTable{seed: maphash.MakeSeed(), maxPerShard: max(16, maxSessions/userShards)}
	for i := range t.shards {
		t.shards[i].m = map[string]*userState{}
	}
	return t
}

func (t *userTable) shard(user string) *userShard {
	return &t.shards[maphash.String(t.seed, user)%userShards]
}

// stampNow returns the count of changes staged so far in user's shard.
func (t *userTable) stampNow(user string) uint64 {
	sh := t.shard(user)
	t.lock(sh)
	defer sh.mu.Unlock()
	return sh.stamps
}

// totalSince returns user's unread total of list, and whether the user
// changed since mark (a count of stampNow); held is false when the user
// is not in memory.
func (t *userTable) totalSince(user, list string, mark uint64) (total int64, changed, held bool) {
	sh := t.shard(user)
	t.lock(sh)
	defer sh.mu.Unlock()
	u := sh.m[user]
	if u == nil {
		return 0, false, false
	}
	return u.totals[list], u.stamp > mark, true
}

// loadUser makes sure user's clock and totals, and the gateway sessions
// of its sub-businesses, are in memory: read from the backend, outside
// every lock, when they are not.
func (e *Engine) loadUser(ctx context.Context, user string) error {
	sh := e.users.shard(user)
	e.users.lock(sh)
	_, held := sh.m[user]
	sh.mu.Unlock()
	if !held {
		epoch := e.userEpoch(user)
		rec, err := e.be.User(ctx, user)
		if err != nil {
			return fmt.Errorf("unread totals of %s: %w", user, err)
		}
		e.users.lock(sh)
		if sh.m[user] == nil {
			sh.m[user] = newUserState(sh, user, rec, epoch)
		}
		sh.mu.Unlock()
	}
	// The gateways of its sub-businesses too, mended as they are read
	// (mendGateway): a page read from the tables shows them.
	return e.load(ctx, e.users.gatewayNeeds(user))
}

// gatewayNeeds names the gateway sessions of the sub-businesses user has
// sessions in, when user is in memory.
func (t *userTable) gatewayNeeds(user string) []need {
	sh := t.shard(user)
	t.lock(sh)
	defer sh.mu.Unlock()
	u := sh.m[user]
	if u == nil {
		return nil
	}
	var needs []need
	for biz := range u.totals {
		if biz != "" {
			needs = append(needs, need{user, protocol.GatewayConv(biz)})
		}
	}
	return needs
}

// lock takes a shard's lock: a user's critical section.
func (t *userTable) lock(sh *userShard) {
	sh.mu.Lock()
	t.locks.Add(1)
}

// byShard groups needs by the shard of their user, so that an operation
// on many users takes each shard's lock once.
func (t *userTable) byShard(needs []need) map[*userShard][]need {
	out := map[*userShard][]need{}
	for _, n := range needs {
		sh := t.shard(n.user)
		out[sh] = append(out[sh], n)
	}
	return out
}

// mustHold panics unless someone holds the shard's lock: every write to a
// user's state happens in its critical section. (It cannot tell who holds
// it; the race detector tells the rest.)
func (sh *userShard) mustHold() {
	if sh.mu.TryLock() {
		sh.mu.Unlock()
		panic("engine: a user's state changed outside its shard's lock")
	}
}

// need names a session an operation reads or changes.
type need struct{ user, conv string }

// load makes sure the users of needs and their sessions are in memory,
// with the gateway sessions of those filed under a sub-business: it reads
// from the backend what is missing, outside every lock. In the common
// case, everything in memory, it takes each shard's lock once.
func (e *Engine) load(ctx context.Context, needs []need) error {
	for round := 0; round < 3; round++ {
		missingUsers, missing := e.users.missing(needs)
		if len(missing) == 0 {
			return nil
		}
		if err := e.hydrateShared(ctx, missingUsers, missing); err != nil {
			return err
		}
		// Again for what was missing: a session just read may be filed
		// under a sub-business whose gateway is not in memory yet.
		needs = missing
	}
	return nil
}

// missing lists the users whose state is not in memory, and the sessions
// that are not: those needed, and the gateways of the needed ones that are
// filed under a sub-business.
func (t *userTable) missing(needs []need) (users []string, sessions []need) {
	for sh, ns := range t.byShard(needs) {
		t.lock(sh)
		for _, n := range ns {
			u := sh.m[n.user]
			switch {
			case u == nil:
				users = append(users, n.user)
				sessions = append(sessions, n)
			case u.sessions[n.conv] == nil:
				sessions = append(sessions, n)
			default:
				ent := u.sessions[n.conv]
				sh.uses++
				ent.used = sh.uses
				biz := ent.biz
				if ent.exists {
					biz = ent.st.SubBiz
				}
				if gw := protocol.GatewayConv(biz); biz != "" && u.sessions[gw] == nil {
					sessions = append(sessions, need{n.user, gw})
				}
			}
		}
		sh.mu.Unlock()
	}
	slices.Sort(users)
	return slices.Compact(users), sessions
}

// hydrateTimeout bounds a shared hydrate, which no one caller's context
// bounds.
const hydrateTimeout = 30 * time.Second

// hydrateShared is hydrate, read once for the loads that miss the same
// users and sessions at once: a conversation's first messages, in flight
// together, each miss its members, and would each read them.
func (e *Engine) hydrateShared(ctx context.Context, users []string, sessions []need) error {
	keys := make([]string, len(sessions))
	for i, n := range sessions {
		keys[i] = n.user + "\x00" + n.conv
	}
	slices.Sort(keys)
	ch := e.hydrating.DoChan(strings.Join(keys, "\x01"), func() (any, error) {
		// Not the first caller's context: the others wait on this read.
		hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), hydrateTimeout)
		defer cancel()
		return nil, e.hydrate(hctx, users, sessions)
	})
	select {
	case r := <-ch:
		return r.Err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// hydrate reads users and sessions from the backend and installs what is
// still missing once read.
func (e *Engine) hydrate(ctx context.Context, users []string, sessions []need) error {
	records := map[string]store.UserRecord{}
	epochs := map[string]int64{}
	for _, u := range users {
		epochs[u] = e.userEpoch(u)
		rec, err := e.be.User(ctx, u)
		if err != nil {
			return err
		}
		records[u] = rec
	}
	byConv := map[string][]string{}
	for _, n := range sessions {
		byConv[n.conv] = append(byConv[n.conv], n.user)
	}
	found := map[need]session.State{}
	filing := map[need][2]string{}
	for conv, us := range byConv {
		states, err := e.be.Sessions(ctx, conv, us)
		if err != nil {
			return err
		}
		c, _ := protocol.ParseConv(conv)
		for _, u := range us {
			if st, ok := states[u]; ok {
				found[need{u, conv}] = st
				continue
			}
			if c.Kind == protocol.ConvDirect {
				category, biz, err := e.be.Account(ctx, c.Peer(u))
				if err != nil {
					return err
				}
				filing[need{u, conv}] = [2]string{category, biz}
			}
		}
	}
	// Installed shard by shard: every missing user comes with a session
	// need (missing lists both).
	for sh, ns := range e.users.byShard(sessions) {
		var err error
		e.users.lock(sh)
		for _, n := range ns {
			u := sh.m[n.user]
			if rec, read := records[n.user]; u == nil && read {
				u = newUserState(sh, n.user, rec, epochs[n.user])
				sh.m[n.user] = u
			}
			if u == nil || u.sessions[n.conv] != nil {
				continue
			}
			ent := &sessEntry{st: session.State{User: n.user, Conv: n.conv}}
			if st, ok := found[n]; ok {
				ent.st, ent.exists = st, true
			} else {
				f := filing[n]
				ent.category, ent.biz = f[0], f[1]
			}
			sh.uses++
			ent.used = sh.uses
			u.sessions[n.conv] = ent
			sh.cached++
			if err = e.mendGateway(u, n.conv); err != nil {
				break
			}
		}
		sh.commit(e.flush) // a mended gateway's rows
		e.evict(sh)
		sh.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// evict forgets the least recently used sessions of a shard over its
// share of the cache that are written; the caller holds the shard's lock.
func (e *Engine) evict(sh *userShard) {
	if sh.cached <= e.users.maxPerShard {
		return
	}
	done := e.flush.written()
	type cand struct {
		u    *userState
		conv string
		used uint64
	}
	var cands []cand
	for _, u := range sh.m {
		for conv, ent := range u.sessions {
			if ent.gen <= done {
				cands = append(cands, cand{u, conv, ent.used})
			}
		}
	}
	slices.SortFunc(cands, func(a, b cand) int { return cmp.Compare(a.used, b.used) })
	drop := sh.cached - e.users.maxPerShard*9/10
	for _, c := range cands[:min(drop, len(cands))] {
		delete(c.u.sessions, c.conv)
		sh.cached--
		if len(c.u.sessions) == 0 && c.u.gen <= done {
			delete(sh.m, c.u.user)
		}
	}
}

// withUsers runs fn for each of users in its critical section, taking
// each shard's lock once, and reports errMissing when a user's state was
// forgotten since load (the caller loads again and retries; what fn did
// for the others is idempotent).
func (e *Engine) withUsers(users []string, fn func(u *userState) error) error {
	byShard := map[*userShard][]string{}
	for _, u := range users {
		sh := e.users.shard(u)
		byShard[sh] = append(byShard[sh], u)
	}
	for sh, us := range byShard {
		if err := e.withShard(sh, us, fn); err != nil {
			return err
		}
	}
	return nil
}

func (e *Engine) withShard(sh *userShard, users []string, fn func(u *userState) error) error {
	e.users.lock(sh)
	defer sh.mu.Unlock()
	defer sh.commit(e.flush)
	for _, user := range users {
		u := sh.m[user]
		if u == nil {
			return errMissing
		}
		if err := fn(u); err != nil {
			return err
		}
	}
	return nil
}

// sessionRule changes a session and says which timestamps move.
type sessionRule func(st *session.State) session.Moves

// changeSession applies rule to u's session of conv at time now (ms),
// creating the session when create is set and it does not exist, and
// keeps what derives from it in step: the user's clock, its unread totals
// and the gateway of a sub-business. It returns the new state and whether
// anything changed; the caller holds u's shard lock.
//
// The session also takes the conversation's ticks as the caller read them
// (ticks; they only rise). A rise that rule does not count as a change is
// written in place, under the same active_ts: callers count it as a change
// (rule moves active_ts) exactly when it covers the user's own messages,
// so that one active_ts always shows the same ticks of the user's own
// messages, and every member's session shows the conversation's ticks.
func (e *Engine) changeSession(u *userState, now int64, conv string, ticks protocol.Ticks, create bool, rule sessionRule) (session.State, bool, error) {
	u.shard.mustHold()
	ent := u.sessions[conv]
	if ent == nil {
		return session.State{}, false, errMissing
	}
	st := ent.st
	if !ent.exists {
		if !create {
			return st, false, nil
		}
		st = session.State{User: u.user, Conv: conv, Category: ent.category, SubBiz: ent.biz}
	}
	old := st
	expired := st.ExpireMute(now)
	moves := rule(&st)
	ticksRose := st.TakeTicks(ticks)
	if !moves.Changed() && !expired && ent.exists {
		if ticksRose {
			ent.st = st
			u.shard.stage(&ent.gen, func(b *batch) { b.sessionAt(st, u.epoch) })
			u.stamp = u.shard.stamps
		}
		return st, false, nil
	}
	ts := max(now, u.clock+1)
	u.clock = ts
	st.ActiveTS = ts
	if moves.Write {
		st.WriteTS = ts
	}
	existed := ent.exists
	ent.st, ent.exists = st, true
	u.shard.stage(&ent.gen, func(b *batch) { b.sessionAt(st, u.epoch) })
	u.stamp = u.shard.stamps
	e.settleTotals(u, old, st, existed, ts)
	if st.SubBiz != "" {
		newMessage := st.LastConv != old.LastConv || st.LastSeq != old.LastSeq
		if err := e.refreshGateway(u, now, st, moves.Write, newMessage); err != nil {
			return st, true, err
		}
	}
	return st, true, nil
}

// settleTotals moves a session's contribution to its list's unread total
// from what it was to what it is.
func (e *Engine) settleTotals(u *userState, old, cur session.State, existed bool, ts int64) {
	var before int64
	if existed {
		before = old.UnreadContribution()
	}
	after := cur.UnreadContribution()
	var changed []string
	if old.SubBiz == cur.SubBiz || !existed {
		if after == before {
			return
		}
		u.totals[cur.SubBiz] += after - before
		changed = []string{cur.SubBiz}
	} else {
		u.totals[old.SubBiz] -= before
		u.totals[cur.SubBiz] += after
		changed = []string{old.SubBiz, cur.SubBiz}
	}
	rows := make([]store.TotalRow, len(changed))
	for i, list := range changed {
		rows[i] = store.TotalRow{User: u.user, List: list, Total: u.totals[list], At: ts}
	}
	u.shard.stage(&u.gen, func(b *batch) {
		for _, r := range rows {
			b.totalAt(r, u.epoch)
		}
	})
}

// mendGateway sets a sub-business's gateway session, just read, to its
// list's unread total where they differ; the caller holds u's shard lock.
// In memory they differ only while the user has the gateway deleted (a
// delete clears its count; the next change in the list sets it again),
// since every change of the list's total refreshes the gateway and a
// gateway is read again only once written. So a gateway not deleted that
// differs is a cut: a backend that writes a session and its gateway as
// two items (DynamoDB) can be killed between them, and its total, the sum
// of the list's sessions, then runs ahead of the gateway.
func (e *Engine) mendGateway(u *userState, conv string) error {
	biz, ok := protocol.IsGateway(conv)
	if ent := u.sessions[conv]; !ok || !ent.exists || ent.st.Deleted || ent.st.UnreadCount == u.totals[biz] {
		return nil
	}
	return e.refreshGateway(u, e.nowMS(), session.State{SubBiz: biz}, false, false)
}

// refreshGateway brings the gateway session of member's sub-business up to
// date: its unread count is the nested list's total; a member that moved in
// the list moves the gateway too; a member's new message is the gateway's
// last message and brings a deleted gateway back.
func (e *Engine) refreshGateway(u *userState, now int64, member session.State, moved, newMessage bool) error {
	total := u.totals[member.SubBiz]
	_, _, err := e.changeSession(u, now, protocol.GatewayConv(member.SubBiz), protocol.Ticks{}, true, func(g *session.State) session.Moves {
		var moves session.Moves
		if g.UnreadCount != total {
			g.UnreadCount = total
			moves.Active = true
		}
		if newMessage {
			g.LastConv, g.LastSeq = member.LastConv, member.LastSeq
			g.Deleted = false
		}
		if moved || newMessage {
			moves = session.Moves{Active: true, Write: true}
		}
		return moves
	})
	return err
}
