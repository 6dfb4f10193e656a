// Package routing runs the engine of a node of a scaled-out deployment as
// the owner of some conversations and users: each conversation and each
// user hashes onto a shard, each shard has one owner node at a time
// (package ownership), and a Router — the node's chat.Engine — serves an
// operation on what this node owns with its own engine and forwards the
// others to their owners over the node links (package nodelink). What an
// operation on a conversation does to a member's session goes to that
// member's owner the same way (engine.Owners). See docs/SCALING.md.
package routing
