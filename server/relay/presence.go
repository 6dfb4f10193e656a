package relay

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// presenceBatch bounds the users written in one pipelined round trip.
const presenceBatch = 500

// assertPresence records this node under each of users, expiring one TTL
// from now, and the users in the node's own set (for a successor with the
// same id to clear).
func (r *Relay) assertPresence(ctx context.Context, users []string) error {
	expiry := float64(r.now().Add(r.ttl).UnixMilli())
	stale := "(" + strconv.FormatInt(r.now().UnixMilli(), 10)
	for len(users) > 0 {
		batch := users[:min(len(users), presenceBatch)]
		users = users[len(batch):]
		_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			members := make([]any, len(batch))
			for i, u := range batch {
				key := r.presenceKey(u)
				p.ZAdd(ctx, key, redis.Z{Score: expiry, Member: r.node})
				p.ZRemRangeByScore(ctx, key, "-inf", stale)
				p.PExpire(ctx, key, r.ttl)
				members[i] = u
			}
			p.SAdd(ctx, r.nodeUsersKey(r.node), members...)
			// The node's set outlives the presence it lists, so that a
			// successor finds every entry still listed.
			p.PExpire(ctx, r.nodeUsersKey(r.node), 2*r.ttl)
			return nil
		})
		if err != nil {
			return fmt.Errorf("record presence: %w", err)
		}
	}
	return nil
}

// recordAll records the presence of users, every user with a device on
// this node, then marks the node's presence whole (nodeRecordedKey) for
// as long as its set of users lasts.
func (r *Relay) recordAll(ctx context.Context, users []string) error {
	if err := r.assertPresence(ctx, users); err != nil {
		return err
	}
	if err := r.rdb.Set(ctx, r.nodeRecordedKey(r.node), 1, 2*r.ttl).Err(); err != nil {
		return fmt.Errorf("record presence: %w", err)
	}
	return nil
}

// withdrawPresence removes this node from each of users.
func (r *Relay) withdrawPresence(ctx context.Context, users []string) error {
	for len(users) > 0 {
		batch := users[:min(len(users), presenceBatch)]
		users = users[len(batch):]
		_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			members := make([]any, len(batch))
			for i, u := range batch {
				p.ZRem(ctx, r.presenceKey(u), r.node)
				members[i] = u
			}
			p.SRem(ctx, r.nodeUsersKey(r.node), members...)
			return nil
		})
		if err != nil {
			return fmt.Errorf("withdraw presence: %w", err)
		}
	}
	return nil
}

// clearNode withdraws this node's presence from every user its set lists
// and from also, then deletes the set: at start, what a previous process
// with the same id left; at Close, what this one recorded.
func (r *Relay) clearNode(ctx context.Context, also []string) error {
	listed, err := r.rdb.SMembers(ctx, r.nodeUsersKey(r.node)).Result()
	if err != nil {
		return fmt.Errorf("list the node's users: %w", err)
	}
	if err := r.withdrawPresence(ctx, append(listed, also...)); err != nil {
		return err
	}
	if err := r.rdb.Del(ctx, r.nodeUsersKey(r.node), r.nodeRecordedKey(r.node)).Err(); err != nil {
		return fmt.Errorf("delete the node's users: %w", err)
	}
	return nil
}

// refreshLoop re-records the presence of every user with a device on this
// node every TTL/3: it keeps the entries from expiring and restores them
// after Redis lost them (a restart without persistence, FLUSHALL). A user
// whose last device leaves while a pass runs may be recorded again by it;
// that entry expires within the TTL, and a push it draws meanwhile finds
// no device here.
func (r *Relay) refreshLoop() {
	defer r.wg.Done()
	tick := time.NewTicker(r.ttl / 3)
	defer tick.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
		if err := r.recordAll(ctx, usersOf(r.local.Devices())); err != nil {
			r.log.Warn("relay: presence refresh failed; retrying next tick", "err", err)
		}
		cancel()
		r.refresh()
	}
}

// Nodes returns the nodes presence lists for user now, this one included.
func (r *Relay) Nodes(ctx context.Context, user string) ([]string, error) {
	nodes, err := r.nodesCmd(ctx, r.rdb, user).Result()
	if err != nil {
		return nil, fmt.Errorf("relay: presence of %s: %w", user, err)
	}
	return nodes, nil
}

// nodesCmd queues the lookup of the nodes listed for user on c.
func (r *Relay) nodesCmd(ctx context.Context, c redis.Cmdable, user string) *redis.StringSliceCmd {
	now := strconv.FormatInt(r.now().UnixMilli(), 10)
	return c.ZRangeByScore(ctx, r.presenceKey(user), &redis.ZRangeBy{Min: "(" + now, Max: "+inf"})
}

// watchEvery is how often a node checks that Redis still holds its
// presence.
const watchEvery = time.Second

// watchLoop checks every watchEvery that Redis still holds what this node
// recorded (one EXISTS of nodeRecordedKey); when it lost it, it records
// the presence again at once, rather than at the next refresh, and
// reports the users to Lost: pushes to them found no node meanwhile.
func (r *Relay) watchLoop() {
	defer r.wg.Done()
	tick := time.NewTicker(watchEvery)
	defer tick.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-tick.C:
		}
		users := usersOf(r.local.Devices())
		if len(users) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
		lost, err := r.presenceLost(ctx, users)
		cancel()
		if err != nil {
			r.log.Warn("relay: presence check failed; retrying", "err", err)
			continue
		}
		if lost && r.lost != nil {
			r.lost(users)
		}
	}
}

// presenceLost reports whether Redis lost the node's presence, and
// records the presence of users again when it did.
func (r *Relay) presenceLost(ctx context.Context, users []string) (bool, error) {
	n, err := r.rdb.Exists(ctx, r.nodeRecordedKey(r.node)).Result()
	if err != nil || n > 0 {
		return false, err
	}
	r.log.Warn("relay: Redis lost this node's presence; recording it again", "users", len(users))
	if err := r.recordAll(ctx, users); err != nil {
		return false, err
	}
	return true, nil
}
