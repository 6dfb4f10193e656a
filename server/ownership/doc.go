// Package ownership gives every conversation and every user of a
// scaled-out deployment exactly one owner node at a time.
//
// Ids hash onto a fixed number of shards (ShardOfConv, ShardOfUser). The
// live nodes announce themselves in Redis (Registry); every node places
// each shard on one of them by rendezvous hashing (Place), so that all
// agree from the same set and a node joining or leaving moves only the
// shards it gains or loses. A node serves a shard only while it holds the
// shard's lease (Leases): a Redis key taken and refreshed through
// bsm/redislock, with an epoch raised on every taking. The epoch is the
// fencing token (Fence) of what the holder writes, so that a node paused
// past its lease cannot overwrite what its successor wrote.
//
// A Manager runs the loop of one node: it announces the node, follows the
// node set, takes the leases of the shards placed on it, hands over those
// placed elsewhere (after its owner hook drained them), refreshes what it
// holds and gives up what it can no longer prove it holds.
//
// See docs/SCALING.md for the design this package is the first step of.
package ownership
