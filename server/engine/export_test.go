package engine

// UserLocks returns how many times a user shard's lock was taken, for
// tests that count the critical sections an operation enters.
func (e *Engine) UserLocks() uint64 { return e.users.locks.Load() }

// UserShards is the number of user shards.
const UserShards = userShards
