package session

// Newest is the rule "newer session wins", written once: what a store
// keeps when a session write meets the stored version of the same session.
// Every writer of sessions implements it — the engine's write batches in
// Go, memory in Go, SQLite in its upsert, DynamoDB in its conditions — and
// the backends' conformance suite holds each to it:
//
//   - a write under a later epoch (the lease of the user's shard it was
//     computed under) wins whole, whatever its clock; one under an earlier
//     epoch changes nothing: its writer lost the shard since;
//   - within one epoch, Merge: the newer active_ts wins.
//
// A backend of one process sees every write at epoch 0 and keeps Merge.
func Newest(stored, incoming Written) Written {
	switch {
	case incoming.Epoch > stored.Epoch:
		return incoming
	case incoming.Epoch < stored.Epoch:
		return stored
	}
	return Written{State: Merge(stored.State, incoming.State), Epoch: stored.Epoch}
}

// Written is a session as an owner wrote it: the state and the epoch of the
// lease under which it was computed (0 in one process).
type Written struct {
	State State
	Epoch int64
}

// Merge is Newest within one epoch:
//
//   - a newer active_ts wins whole;
//   - at the same active_ts (a tick rise written in place, a replay, a
//     writer that lost its shard) only the ticks merge, by maximum, and
//     every other field stays as stored;
//   - an older active_ts changes nothing.
func Merge(stored, incoming State) State {
	switch {
	case incoming.ActiveTS > stored.ActiveTS:
		return incoming
	case incoming.ActiveTS == stored.ActiveTS:
		stored.Ticks = stored.Ticks.Merge(incoming.Ticks)
		return stored
	default:
		return stored
	}
}
