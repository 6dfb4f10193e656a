package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/imcore/im/server/engine"
	"github.com/imcore/im/server/nodelink"
	"github.com/imcore/im/server/ownership"
	"github.com/imcore/im/server/routing"
)

// Owners makes a node of a cluster one owner among several (see
// docs/SCALING.md): each conversation and each user belongs to one node,
// by shard; the node runs its engine for the shards it holds and forwards
// the rest to their owners over node links.
type Owners struct {
	// Redis holds the node set, the leases and the shared link secret.
	Redis redis.UniversalClient
	// Prefix prefixes its keys.
	Prefix string
	// Secret guards the node links; empty: one every node of the
	// deployment shares through Redis, made by the first.
	Secret string
	// Advertise is where the other nodes reach this one (host:port);
	// empty: the address it listens on.
	Advertise string
	// LeaseTTL is the shards' lease (ownership.DefaultLeaseTTL when zero):
	// how long a node that died holds its shards.
	LeaseTTL time.Duration
}

// linkPath is the node link endpoint.
const linkPath = "/internal/link"

// ownersState is what a server running as an owner keeps.
type ownersState struct {
	router  *routing.Router
	pool    *nodelink.Pool
	manager *ownership.Manager
}

// buildOwners makes the router the server's store and mounts the link
// endpoint; the shards are taken once the server listens (startOwners).
func (s *Server) buildOwners(ctx context.Context, o *Owners, engOpts engine.Options) (*routing.Router, []byte, error) {
	secret, err := linkSecret(ctx, o)
	if err != nil {
		return nil, nil, err
	}
	pool := nodelink.NewPool(secret, linkPath)
	router, err := routing.New(ctx, routing.Config{Backend: s.be, Engine: engOpts, Pool: pool, Logger: s.log})
	if err != nil {
		return nil, nil, err
	}
	s.owners = &ownersState{router: router, pool: pool}
	for _, c := range pool.Collectors() {
		s.metrics.Register(c)
	}
	return router, secret, nil
}

// linkSecret returns the node links' secret: the configured one, or the
// deployment's in Redis (made by the first node that asks).
func linkSecret(ctx context.Context, o *Owners) ([]byte, error) {
	if o.Secret != "" {
		return []byte(o.Secret), nil
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	key := o.Prefix + "owners/secret"
	if err := o.Redis.SetNX(ctx, key, hex.EncodeToString(b[:]), 0).Err(); err != nil {
		return nil, fmt.Errorf("the node links' secret: %w", err)
	}
	secret, err := o.Redis.Get(ctx, key).Result()
	if err != nil {
		return nil, fmt.Errorf("the node links' secret: %w", err)
	}
	return []byte(secret), nil
}

// startOwners announces the node and takes its shards: the first round
// returns once the node holds those no other node holds.
func (s *Server) startOwners(ln net.Listener) error {
	o := s.cfg.Cluster.Owners
	addr := o.Advertise
	if addr == "" {
		addr = ln.Addr().String()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := ownership.Start(ctx, ownership.Config{
		Redis: o.Redis, Prefix: o.Prefix,
		Node:     ownership.Node{ID: s.cfg.Cluster.NodeID, Addr: addr},
		LeaseTTL: o.LeaseTTL,
		Hooks:    s.owners.router.Hooks(),
		Logger:   s.log,
	})
	if err != nil {
		return fmt.Errorf("taking the node's shards: %w", err)
	}
	s.owners.manager = m
	s.owners.router.Attach(m)
	return nil
}

// leaveOwners hands every shard over to the other nodes (the node is
// stopping); they serve them from then on.
func (s *Server) leaveOwners(ctx context.Context) error {
	if s.owners == nil || s.owners.manager == nil {
		return nil
	}
	err := s.owners.manager.Leave(ctx)
	if err != nil {
		s.log.Warn("handing the shards over", "err", err)
	}
	return err
}

// closeOwners drops the node links.
func (s *Server) closeOwners() {
	if s.owners != nil {
		s.owners.pool.Close()
	}
}

// OwnedShards lists the shards this node serves (for /status).
func (st *ownersState) OwnedShards() []int {
	if st.manager == nil {
		return nil
	}
	held := st.manager.HeldShards()
	out := make([]int, len(held))
	for i, s := range held {
		out[i] = int(s)
	}
	return out
}
