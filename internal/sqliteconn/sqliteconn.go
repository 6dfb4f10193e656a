// Package sqliteconn is how both SQLite stores, the server's and the
// client's local one, open their database file: one connection string that
// sets the same pragmas on every connection of a pool.
package sqliteconn

import (
	"net/url"
	"strconv"
)

// BusyTimeoutMS is how long a connection waits for a lock held by another
// before it fails with SQLITE_BUSY.
const BusyTimeoutMS = 10000

// DSN returns the connection string of the database at path for the
// modernc.org/sqlite driver: WAL, full synchronous commits (a commit is on
// disk, and survives a power loss, when it returns), foreign keys, a busy
// timeout. A read-only pool refuses writes; the writer's transactions take
// the write lock when they begin, so that two writers never deadlock
// upgrading a read lock.
func DSN(path string, readOnly bool) string {
	q := url.Values{}
	// First: the pragmas after it may have to wait for a lock.
	q.Add("_pragma", "busy_timeout("+strconv.Itoa(BusyTimeoutMS)+")")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(ON)")
	if readOnly {
		q.Add("_pragma", "query_only(ON)")
	} else {
		q.Set("_txlock", "immediate")
	}
	return "file:" + path + "?" + q.Encode()
}
