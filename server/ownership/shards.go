package ownership

import (
	"hash/fnv"
	"slices"
)

// Shards is the number of shards ids are spread over. It never changes in
// a deployment's life (every node must agree on it); it only has to be
// well above the number of nodes.
const Shards = 256

// Shard is one of the Shards shards, 0 ≤ Shard < Shards.
type Shard int

// ShardOfConv is the shard that owns conversation conv.
func ShardOfConv(conv string) Shard { return shardOf("c/" + conv) }

// ShardOfUser is the shard that owns user's sessions, clock and totals.
func ShardOfUser(user string) Shard { return shardOf("u/" + user) }

func shardOf(key string) Shard {
	h := fnv.New32a()
	h.Write([]byte(key))
	return Shard(h.Sum32() % Shards)
}

// Place returns the node that owns shard among nodes, by rendezvous
// (highest random weight) hashing: the node whose hash with the shard is
// highest. Every caller with the same set of nodes gets the same answer,
// whatever their order, and removing a node moves only its own shards.
// It returns "" when nodes is empty.
func Place(shard Shard, nodes []string) string {
	var best string
	var bestWeight uint64
	for _, n := range nodes {
		w := weight(shard, n)
		if best == "" || w > bestWeight || (w == bestWeight && n < best) {
			best, bestWeight = n, w
		}
	}
	return best
}

// weight is the rendezvous weight of node for shard: FNV-1a of both,
// finished with a 64-bit mixer so that neighbouring shards spread well.
func weight(shard Shard, node string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(node))
	h.Write([]byte{0, byte(shard >> 8), byte(shard)})
	x := h.Sum64()
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// Placement returns, for each node of nodes, the shards placed on it.
func Placement(nodes []string) map[string][]Shard {
	out := make(map[string][]Shard, len(nodes))
	for _, n := range nodes {
		out[n] = nil
	}
	for s := range Shard(Shards) {
		if n := Place(s, nodes); n != "" {
			out[n] = append(out[n], s)
		}
	}
	for _, shards := range out {
		slices.Sort(shards)
	}
	return out
}
