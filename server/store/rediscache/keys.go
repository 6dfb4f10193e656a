package rediscache

// userKeys are the Redis keys of one user's cached entries. They share a
// hash tag (the user between braces) so that a cluster keeps them in one
// slot, where one script can touch them all.
type userKeys struct {
	// record is a hash: "c" the clock, "h" (set once hydrated) the clock
	// the hydration read, "t:<list>" each list's total.
	record string
	// sessions is a hash: conversation → session value (or absent).
	sessions string
	// index is a sorted set: conversation → active_ts.
	index string
	// gen is the generation hydrations take a lease on (see scripts.go).
	gen string
	// writing is the write-in-flight flag: the token of the Apply writing
	// the user's rows, set before its durable write and deleted by its
	// merge (see scripts.go).
	writing string
}

// keysOf returns user's keys.
func (c *Cache) keysOf(user string) userKeys {
	base := c.prefix + "{" + user + "}:"
	return userKeys{record: base + "u", sessions: base + "s", index: base + "z", gen: base + "g", writing: base + "w"}
}

// all returns the keys the write scripts take, in their order: record,
// sessions, index, gen, writing.
func (k userKeys) all() []string {
	return []string{k.record, k.sessions, k.index, k.gen, k.writing}
}
