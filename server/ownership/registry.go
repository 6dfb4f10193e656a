package ownership

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Node is a live node as the registry lists it.
type Node struct {
	ID string
	// Addr is where other nodes reach it (host:port of its HTTP server).
	Addr string
}

// Registry is the set of live nodes in Redis: a sorted set of node ids
// scored by the time their announcement expires, and a hash of their
// addresses. A node announces itself again well before it expires; one
// that stops withdraws; one that dies drops out when its announcement
// expires.
type Registry struct {
	rdb    redis.UniversalClient
	prefix string
	ttl    time.Duration
}

// NewRegistry returns the registry under prefix; announcements last ttl.
func NewRegistry(rdb redis.UniversalClient, prefix string, ttl time.Duration) *Registry {
	return &Registry{rdb: rdb, prefix: prefix, ttl: ttl}
}

func (r *Registry) setKey() string  { return r.prefix + "owners/nodes" }
func (r *Registry) addrKey() string { return r.prefix + "owners/addr" }

// Announce records n as live for the registry's TTL from now.
func (r *Registry) Announce(ctx context.Context, n Node) error {
	expiry := time.Now().Add(r.ttl).UnixMilli()
	_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAdd(ctx, r.setKey(), redis.Z{Score: float64(expiry), Member: n.ID})
		// Entries of nodes long dead go; recent ones stay for Live to skip.
		p.ZRemRangeByScore(ctx, r.setKey(), "-inf", strconv.FormatInt(expiry-10*r.ttl.Milliseconds(), 10))
		p.HSet(ctx, r.addrKey(), n.ID, n.Addr)
		return nil
	})
	if err != nil {
		return fmt.Errorf("announce node %s: %w", n.ID, err)
	}
	return nil
}

// Withdraw removes node id from the live set at once.
func (r *Registry) Withdraw(ctx context.Context, id string) error {
	_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRem(ctx, r.setKey(), id)
		p.HDel(ctx, r.addrKey(), id)
		return nil
	})
	if err != nil {
		return fmt.Errorf("withdraw node %s: %w", id, err)
	}
	return nil
}

// Live returns the nodes whose announcement has not expired, sorted by id.
func (r *Registry) Live(ctx context.Context) ([]Node, error) {
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	var ids *redis.StringSliceCmd
	var addrs *redis.MapStringStringCmd
	_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		ids = p.ZRangeByScore(ctx, r.setKey(), &redis.ZRangeBy{Min: "(" + now, Max: "+inf"})
		addrs = p.HGetAll(ctx, r.addrKey())
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list live nodes: %w", err)
	}
	nodes := make([]Node, 0, len(ids.Val()))
	for _, id := range ids.Val() {
		nodes = append(nodes, Node{ID: id, Addr: addrs.Val()[id]})
	}
	slices.SortFunc(nodes, func(a, b Node) int {
		if a.ID < b.ID {
			return -1
		}
		if a.ID > b.ID {
			return 1
		}
		return 0
	})
	return nodes, nil
}
