package server

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/imcore/im/server/nodelink"
	"github.com/imcore/im/server/ownership"
	"github.com/imcore/im/server/routing"
)

// Owners makes a node of a cluster one owner among several (see
// docs/SCALING.md): each conversation and each user belongs to one node,
// by shard; the node runs its engine for the shards it holds and forwards
// the rest to their owners over node links.
type Owners struct {
	// Redis holds the node set and the leases.
	Redis redis.UniversalClient
	// Prefix prefixes its keys.
	Prefix string
	// Secret guards the node links; every node of the deployment has the
	// same.
	Secret string
	// Advertise is where the other nodes reach this one (host:port);
	// empty: the address it listens on.
	Advertise string
	// FirstUse tells a fresh deployment from one whose Redis lost the
	// leases (ownership.Config.FirstUse).
	FirstUse func(ctx context.Context) (bool, error)
	// LeaseTTL is the shards' lease (ownership.DefaultLeaseTTL when zero):
	// how long a node that died holds its shards.
	LeaseTTL time.Duration
}

// leaseTTL is the shards' lease.
func (o *Owners) leaseTTL() time.Duration {
	if o.LeaseTTL > 0 {
		return o.LeaseTTL
	}
	return ownership.DefaultLeaseTTL
}

// linkPath is the node link endpoint.
const linkPath = "/internal/link"

// ownersState is what a server running as an owner keeps.
type ownersState struct {
	router  *routing.Router
	pool    *nodelink.Pool
	manager *ownership.Manager
}

// buildLinks returns the pool of links to the other nodes and their
// shared secret; the shards are taken once the server listens
// (startOwners).
func (s *Server) buildLinks(o *Owners) (*nodelink.Pool, []byte) {
	secret := []byte(o.Secret)
	// A link silent for a lease is dropped: no request waits on an owner
	// that cannot answer for longer than its own lease lasts.
	pool := nodelink.NewPool(secret, linkPath, o.leaseTTL())
	for _, c := range pool.Collectors() {
		s.metrics.Register(c)
	}
	return pool, secret
}

// startOwners announces the node and takes its shards: the first round
// returns once the node holds those no other node holds.
func (s *Server) startOwners(ln net.Listener) error {
	o := s.cfg.Cluster.Owners
	addr := o.Advertise
	if addr == "" {
		addr = ln.Addr().String()
		if tcp, ok := ln.Addr().(*net.TCPAddr); ok && tcp.IP.IsUnspecified() {
			return fmt.Errorf("listening on %s, which other nodes cannot dial: give the address they reach this node at (-advertise host:port)", addr)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := ownership.Start(ctx, ownership.Config{
		Redis: o.Redis, Prefix: o.Prefix,
		Node:     ownership.Node{ID: s.cfg.Cluster.NodeID, Addr: addr},
		LeaseTTL: o.LeaseTTL,
		FirstUse: o.FirstUse,
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
