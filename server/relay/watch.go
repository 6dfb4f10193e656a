package relay

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Presence across nodes (package presence): whether a user has a device
// on another node is the presence this relay keeps; which nodes watch a
// user is a set per user ("watchers:USER"), which a node joins when one of
// its connections first watches the user and leaves when the last stops.
// A node whose user comes or goes reads that set and tells those nodes
// alone, over the node links: nobody watching costs one read.

func (r *Relay) watchersKey(user string) string { return r.prefix + "watchers:" + user }

// OnlineElsewhere reports which of users have a device on a node other
// than this one, in one pipelined round trip.
func (r *Relay) OnlineElsewhere(ctx context.Context, users []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(users) == 0 {
		return out, nil
	}
	now := strconv.FormatInt(r.now().UnixMilli(), 10)
	cmds := make([]*redis.StringSliceCmd, len(users))
	_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, u := range users {
			cmds[i] = p.ZRangeByScore(ctx, r.presenceKey(u), &redis.ZRangeBy{Min: "(" + now, Max: "+inf"})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("presence elsewhere: %w", err)
	}
	for i, c := range cmds {
		for _, node := range c.Val() {
			if node != r.node {
				out[users[i]] = true
			}
		}
	}
	return out, nil
}

// Watch adds (on) or removes this node from the watchers of user.
func (r *Relay) Watch(ctx context.Context, user string, on bool) error {
	var err error
	if on {
		err = r.rdb.SAdd(ctx, r.watchersKey(user), r.node).Err()
	} else {
		err = r.rdb.SRem(ctx, r.watchersKey(user), r.node).Err()
	}
	if err != nil {
		return fmt.Errorf("watch %s: %w", user, err)
	}
	return nil
}

// Watchers returns the other nodes watching user.
func (r *Relay) Watchers(ctx context.Context, user string) ([]string, error) {
	nodes, err := r.rdb.SMembers(ctx, r.watchersKey(user)).Result()
	if err != nil {
		return nil, fmt.Errorf("watchers of %s: %w", user, err)
	}
	out := nodes[:0]
	for _, n := range nodes {
		if n != r.node {
			out = append(out, n)
		}
	}
	return out, nil
}
