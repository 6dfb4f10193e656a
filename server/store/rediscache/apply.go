package rediscache

import (
	"context"
	"crypto/rand"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/imcore/im/server/store"
)

// Apply implements store.Backend in three steps: each touched user's
// writing flag is set to a token of this Apply (one round trip, see
// beginScript), the durable write is made, and the same sessions and
// totals are merged into Redis (with the clock), one script per user,
// each deleting its user's flag. While a user's flag is set, its reads
// are served from the durable store: a writer that dies between its
// durable write and its merge leaves entries behind the durable store,
// which are then not served, and which the user's next writer drops.
//
// Redis is best effort. Setting the flags failing does not stop the
// durable write (a merge that does not find its flag drops). A user whose
// merge fails has its entries dropped, so the next read hydrates from the
// durable store; when even the drop fails (counted in
// Stats.DropFailures), the flag, if set, keeps the entries from being
// read until they expire. A failed durable write drops the entries of the
// users it touched (its rows may be partly written) and returns its
// error.
//
// The Redis part after the durable write ignores the cancellation of ctx:
// once the durable write is made, Redis must follow it.
func (c *Cache) Apply(ctx context.Context, d store.Derived) error {
	users := usersOf(d)
	token := c.begin(ctx, users)
	err := c.inner.Apply(ctx, d)
	rctx := context.WithoutCancel(ctx)
	if err != nil {
		c.drop(rctx, users, token)
		return err
	}
	c.merge(rctx, d, token)
	return nil
}

// begin sets the writing flag of each of users to a fresh token, which
// it returns for the merge (see beginScript), best effort.
func (c *Cache) begin(ctx context.Context, users []string) string {
	token := rand.Text()
	calls := make([]scriptCall, len(users))
	for i, u := range users {
		calls[i] = scriptCall{beginScript, c.keysOf(u).all(), []any{token, freshGen(), c.ttlArg()}}
	}
	failed := false
	for _, cmd := range c.runPipelined(ctx, calls) {
		if err := cmd.Err(); err != nil {
			c.stats.writeFailures.Add(1)
			c.failed("begin write", err)
			failed = true
		}
	}
	if !failed && len(calls) > 0 {
		c.reached()
	}
	return token
}

// merge merges d's sessions, totals and clocks into Redis for the Apply
// of token, dropping the entries of each user whose merge fails.
func (c *Cache) merge(ctx context.Context, d store.Derived, token string) {
	byUser := groupByUser(d)
	users := make([]string, 0, len(byUser))
	calls := make([]scriptCall, 0, len(byUser))
	for u, rows := range byUser {
		call, err := c.mergeCall(u, rows, token)
		if err != nil {
			c.drop(ctx, []string{u}, token)
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
		c.drop(ctx, failed, token)
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

// usersOf returns the users of d's sessions and totals.
func usersOf(d store.Derived) []string {
	return slices.Collect(maps.Keys(groupByUser(d)))
}

// mergeCall is the script run that merges user's rows for the Apply of
// token.
func (c *Cache) mergeCall(user string, rows *userRows, token string) (scriptCall, error) {
	args := make([]any, 0, 5+2*len(rows.sessions)+3*len(rows.totals))
	args = append(args, c.ttlArg(), freshGen(), token, len(rows.sessions))
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
	return scriptCall{applyScript, c.keysOf(user).all(), args}, nil
}

// drop deletes users' cached entries, moves their generations on and
// deletes their writing flags where they hold token (see dropScript), best
// effort.
func (c *Cache) drop(ctx context.Context, users []string, token string) {
	calls := make([]scriptCall, len(users))
	for i, u := range users {
		calls[i] = scriptCall{dropScript, c.keysOf(u).all(), []any{freshGen(), c.ttlArg(), token}}
	}
	for _, cmd := range c.runPipelined(ctx, calls) {
		if err := cmd.Err(); err != nil {
			// The user's entries may now be behind the durable store
			// until they expire; its writing flag, if the begin set it,
			// keeps them from being read until then.
			c.stats.dropFailures.Add(1)
			c.failed("drop", err)
			continue
		}
		c.stats.dropped.Add(1)
	}
}
