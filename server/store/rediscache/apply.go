package rediscache

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/imcore/im/server/store"
)

// Apply implements store.Backend: the durable write first, then the same
// sessions and totals merged into Redis (with the clock), one script per
// user. A user whose merge fails has its entries dropped, so the next read
// hydrates from the durable store; when even the drop fails, its entries
// may be behind the durable store until they expire (counted in
// Stats.DropFailures). A failed durable write drops the entries of the
// users it touched (its rows may be partly written) and returns its error.
//
// The Redis part ignores the cancellation of ctx: once the durable write
// is made, Redis must follow it.
func (c *Cache) Apply(ctx context.Context, d store.Derived) error {
	err := c.inner.Apply(ctx, d)
	rctx := context.WithoutCancel(ctx)
	if err != nil {
		c.drop(rctx, slices.Collect(maps.Keys(groupByUser(d))))
		return err
	}
	c.merge(rctx, d)
	return nil
}

// merge merges d's sessions, totals and clocks into Redis, dropping the
// entries of each user whose merge fails.
func (c *Cache) merge(ctx context.Context, d store.Derived) {
	byUser := groupByUser(d)
	users := make([]string, 0, len(byUser))
	calls := make([]scriptCall, 0, len(byUser))
	for u, rows := range byUser {
		call, err := c.mergeCall(u, rows)
		if err != nil {
			c.drop(ctx, []string{u})
			continue
		}
		users = append(users, u)
		calls = append(calls, call)
	}
	var failed []string
	for i, cmd := range c.runPipelined(ctx, calls) {
		if err := cmd.Err(); err != nil {
			c.stats.writeFailures.Add(1)
			c.failed("merge", err)
			failed = append(failed, users[i])
		}
	}
	if len(failed) > 0 {
		c.drop(ctx, failed)
	} else if len(calls) > 0 {
		c.reached()
	}
}

// userRows are one user's rows of a Derived that the cache holds.
type userRows struct {
	sessions []int // indexes in Derived.Sessions
	totals   []int // indexes in Derived.Totals
	d        *store.Derived
}

// groupByUser sorts d's sessions and totals by user.
func groupByUser(d store.Derived) map[string]*userRows {
	out := map[string]*userRows{}
	get := func(u string) *userRows {
		r := out[u]
		if r == nil {
			r = &userRows{d: &d}
			out[u] = r
		}
		return r
	}
	for i, st := range d.Sessions {
		r := get(st.User)
		r.sessions = append(r.sessions, i)
	}
	for i, t := range d.Totals {
		r := get(t.User)
		r.totals = append(r.totals, i)
	}
	return out
}

// mergeCall is the script run that merges user's rows.
func (c *Cache) mergeCall(user string, rows *userRows) (scriptCall, error) {
	args := make([]any, 0, 4+2*len(rows.sessions)+3*len(rows.totals))
	args = append(args, c.ttlArg(), freshGen(), len(rows.sessions))
	for _, i := range rows.sessions {
		st := rows.d.Sessions[i]
		v, err := encodeSession(st)
		if err != nil {
			return scriptCall{}, fmt.Errorf("merge %s: %w", user, err)
		}
		args = append(args, st.Conv, v)
	}
	args = append(args, len(rows.totals))
	for _, i := range rows.totals {
		t := rows.d.Totals[i]
		args = append(args, t.List, strconv.FormatInt(t.At, 10), strconv.FormatInt(t.Total, 10))
	}
	k := c.keysOf(user)
	return scriptCall{applyScript, []string{k.record, k.sessions, k.index, k.gen}, args}, nil
}

// drop deletes users' cached entries and moves their generations on (see
// dropScript), best effort.
func (c *Cache) drop(ctx context.Context, users []string) {
	calls := make([]scriptCall, len(users))
	for i, u := range users {
		k := c.keysOf(u)
		calls[i] = scriptCall{dropScript, []string{k.record, k.sessions, k.index, k.gen}, []any{freshGen(), c.ttlArg()}}
	}
	for _, cmd := range c.runPipelined(ctx, calls) {
		if err := cmd.Err(); err != nil {
			// The user's entries may now be behind the durable store
			// until they expire.
			c.stats.dropFailures.Add(1)
			c.failed("drop", err)
			continue
		}
		c.stats.dropped.Add(1)
	}
}
