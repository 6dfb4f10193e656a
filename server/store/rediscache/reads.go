package rediscache

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/imcore/im/server/store"
	"github.com/imcore/im/session"
)

// User implements store.Backend: from Redis once the user's record is
// hydrated, else from the durable store, filling Redis. While the user is
// being written (its writing flag is set), from the durable store without
// filling.
func (c *Cache) User(ctx context.Context, user string) (store.UserRecord, error) {
	if err := c.checkOpen(); err != nil {
		return store.UserRecord{}, err
	}
	k := c.keysOf(user)
	rec, cached, lease, err := c.cachedUser(ctx, k)
	if err != nil {
		c.stats.readFallbacks.Add(1)
		c.failed("read user", err)
		return c.inner.User(ctx, user)
	}
	c.reached()
	if cached {
		return rec, nil
	}
	rec, err = c.inner.User(ctx, user)
	if err == nil && lease != "" {
		c.fillUser(ctx, k, lease, rec)
	}
	return rec, err
}

// Read script results (see readUserScript, readSessionScript).
const (
	readMiss    = 0 // not cached: a lease to fill under
	readHit     = 1 // cached: the value
	readWriting = 2 // the user is being written: read the table, do not fill
)

// cachedUser returns the user's cached record (cached set), or else a
// lease to fill it under, "" while the user is being written.
func (c *Cache) cachedUser(ctx context.Context, k userKeys) (rec store.UserRecord, cached bool, lease string, err error) {
	res, err := readUserScript.Run(ctx, c.rdb, []string{k.record, k.gen, k.writing}, freshGen(), c.ttlArg()).Slice()
	if err != nil {
		return rec, false, "", fmt.Errorf("read user %s: %w", k.record, err)
	}
	if len(res) != 2 {
		return rec, false, "", fmt.Errorf("read user %s: %d results", k.record, len(res))
	}
	switch code, _ := res[0].(int64); code {
	case readWriting:
		return rec, false, "", nil
	case readMiss:
		lease, _ = res[1].(string)
		if lease == "" {
			return rec, false, "", fmt.Errorf("read user %s: no lease", k.record)
		}
		return rec, false, lease, nil
	case readHit:
		fields, _ := res[1].([]any)
		rec, err = decodeRecord(fields)
		if err != nil {
			return rec, false, "", fmt.Errorf("read user %s: %w", k.record, err)
		}
		return rec, true, "", nil
	default:
		return rec, false, "", fmt.Errorf("read user %s: result %v", k.record, res[0])
	}
}

// decodeRecord reads a user record's hash fields (HGETALL).
func decodeRecord(fields []any) (store.UserRecord, error) {
	rec := store.UserRecord{Totals: map[string]int64{}}
	for i := 0; i+1 < len(fields); i += 2 {
		f, _ := fields[i].(string)
		v, _ := fields[i+1].(string)
		var err error
		switch {
		case f == "c":
			if rec.Clock, err = strconv.ParseInt(v, 10, 64); err != nil {
				return rec, fmt.Errorf("clock: %w", err)
			}
		case strings.HasPrefix(f, "t:"):
			if rec.Totals[f[2:]], err = decodeTotal(v); err != nil {
				return rec, err
			}
		}
	}
	return rec, nil
}

// fillUser installs rec, read from the durable store under lease.
func (c *Cache) fillUser(ctx context.Context, k userKeys, lease string, rec store.UserRecord) {
	args := []any{c.ttlArg(), lease, strconv.FormatInt(rec.Clock, 10), len(rec.Totals)}
	for list, total := range rec.Totals {
		args = append(args, list, strconv.FormatInt(total, 10))
	}
	if err := fillUserScript.Run(ctx, c.rdb, []string{k.record, k.gen}, args...).Err(); err != nil {
		c.stats.writeFailures.Add(1)
		c.failed("fill user", err)
	}
}

// Sessions implements store.Backend: each user's session from Redis when
// cached (as present or absent), the others from the durable store,
// filling Redis, except for users being written (their writing flags
// set), which are read from the durable store without filling.
func (c *Cache) Sessions(ctx context.Context, conv string, users []string) (map[string]session.State, error) {
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	out, leases, err := c.cachedSessions(ctx, conv, users)
	if err != nil {
		c.stats.readFallbacks.Add(1)
		c.failed("read sessions", err)
		return c.inner.Sessions(ctx, conv, users)
	}
	c.reached()
	if len(leases) == 0 {
		return out, nil
	}
	missing := make([]string, 0, len(leases))
	for u := range leases {
		missing = append(missing, u)
	}
	read, err := c.inner.Sessions(ctx, conv, missing)
	if err != nil {
		return nil, err
	}
	for u, st := range read {
		out[u] = st
	}
	c.fillSessions(ctx, conv, leases, read)
	return out, nil
}

// cachedSessions returns the cached sessions of users in conv, and for
// each user whose session is not cached a lease to fill it under, ""
// while the user is being written.
func (c *Cache) cachedSessions(ctx context.Context, conv string, users []string) (map[string]session.State, map[string]string, error) {
	calls := make([]scriptCall, 0, len(users))
	callUsers := make([]string, 0, len(users))
	seen := make(map[string]bool, len(users))
	for _, u := range users {
		if seen[u] {
			continue
		}
		seen[u] = true
		callUsers = append(callUsers, u)
		k := c.keysOf(u)
		calls = append(calls, scriptCall{readSessionScript, []string{k.sessions, k.gen, k.writing}, []any{conv, freshGen(), c.ttlArg()}})
	}
	out := make(map[string]session.State, len(calls))
	leases := map[string]string{}
	for i, cmd := range c.runPipelined(ctx, calls) {
		key := calls[i].keys[0]
		res, err := cmd.Slice()
		if err != nil {
			return nil, nil, fmt.Errorf("read session %s of %s: %w", conv, key, err)
		}
		if len(res) != 2 {
			return nil, nil, fmt.Errorf("read session %s of %s: %d results", conv, key, len(res))
		}
		v, _ := res[1].(string)
		user := callUsers[i]
		switch code, _ := res[0].(int64); code {
		case readWriting:
			leases[user] = ""
		case readMiss:
			if v == "" {
				return nil, nil, fmt.Errorf("read session %s of %s: no lease", conv, key)
			}
			leases[user] = v
		case readHit:
			if v == absent {
				continue
			}
			st, err := decodeSession(v)
			if err != nil {
				return nil, nil, fmt.Errorf("read session %s of %s: %w", conv, key, err)
			}
			out[user] = st
		default:
			return nil, nil, fmt.Errorf("read session %s of %s: result %v", conv, key, res[0])
		}
	}
	return out, leases, nil
}

// fillSessions installs the sessions read from the durable store (absent
// where read has none), each under its user's lease (none where "").
func (c *Cache) fillSessions(ctx context.Context, conv string, leases map[string]string, read map[string]session.State) {
	calls := make([]scriptCall, 0, len(leases))
	for u, lease := range leases {
		if lease == "" {
			continue
		}
		v := absent
		if st, ok := read[u]; ok {
			enc, err := encodeSession(st)
			if err != nil {
				c.stats.writeFailures.Add(1)
				continue
			}
			v = enc
		}
		k := c.keysOf(u)
		calls = append(calls, scriptCall{fillSessionScript, []string{k.sessions, k.index, k.gen}, []any{c.ttlArg(), lease, conv, v}})
	}
	for _, cmd := range c.runPipelined(ctx, calls) {
		if err := cmd.Err(); err != nil {
			c.stats.writeFailures.Add(1)
			c.failed("fill sessions", err)
		}
	}
}
