package session

// Merge is what a store keeps when a session write meets the stored
// version of the same session, the one rule every backend's write of
// sessions implements (memory in Go, SQLite in its upsert, DynamoDB in its
// conditions; the backends' conformance suite holds each to it):
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
