package faultrun

import (
	"math/rand/v2"
	"slices"
	"sync"
)

// nodeSet is the servers of a run: the members (the server, or the
// cluster's nodes that have not left), the nodes that left, and the node
// a kill or a leave has in hand. The kills and the leaves run side by
// side but never overlap: one node at a time is down or leaving, so a
// leave keeps the number of nodes serving, and a kill takes one away as
// it does without leaves.
type nodeSet struct {
	mu      sync.Mutex
	members []*Server
	left    []*Server
	taken   *Server // by a kill (a member) or a leave (in left); nil: none
}

// nodes returns the members, up or not.
func (r *run) nodes() []*Server {
	n := &r.nodeSet
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.members)
}

// everyNode returns the members and the nodes that left.
func (r *run) everyNode() []*Server {
	n := &r.nodeSet
	n.mu.Lock()
	defer n.mu.Unlock()
	return append(slices.Clone(n.members), n.left...)
}

// addNode makes a started server a member.
func (r *run) addNode(s *Server) {
	n := &r.nodeSet
	n.mu.Lock()
	defer n.mu.Unlock()
	n.members = append(n.members, s)
}

// takeForKill picks a random member to kill and holds it until
// releaseNode; nil while a leave is under way.
func (r *run) takeForKill(rng *rand.Rand) *Server {
	n := &r.nodeSet
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.taken != nil {
		return nil
	}
	n.taken = pick(rng, n.members)
	return n.taken
}

// takeForLeave picks a random member to leave, while more than keep are
// members and no kill is under way, and moves it to the nodes that left:
// from then on the proxy, the probes and the kills pass it by. It holds
// it until releaseNode; nil when it may not.
func (r *run) takeForLeave(rng *rand.Rand, keep int) *Server {
	n := &r.nodeSet
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.taken != nil || len(n.members) <= keep {
		return nil
	}
	s := pick(rng, n.members)
	n.members = slices.DeleteFunc(n.members, func(m *Server) bool { return m == s })
	n.left = append(n.left, s)
	n.taken = s
	return s
}

// releaseNode ends what takeForKill or takeForLeave began.
func (r *run) releaseNode(s *Server) {
	n := &r.nodeSet
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.taken == s {
		n.taken = nil
	}
}

// pick returns a random one of servers (at least one).
func pick(rng *rand.Rand, servers []*Server) *Server {
	if len(servers) == 1 {
		return servers[0]
	}
	return servers[rng.IntN(len(servers))]
}
