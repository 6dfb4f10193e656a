package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	"github.com/imcore/im/server/store"
)

// stmtCache holds each distinct SQL text prepared once per database handle,
// so that SQLite parses a statement once, not on every call. Every
// statement is prepared at open: preparing one later needs a connection,
// which the writer's batch transaction holds, and which readers holding
// their transactions while waiting for the cache could exhaust.
type stmtCache struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

func newStmtCache(ctx context.Context, db *sql.DB, queries ...string) (*stmtCache, error) {
	c := &stmtCache{m: make(map[string]*sql.Stmt)}
	for _, q := range queries {
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			c.close()
			return nil, fmt.Errorf("prepare %q: %w", q, err)
		}
		c.m[q] = st
	}
	return c, nil
}

func (c *stmtCache) get(ctx context.Context, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m[query]; ok {
		return st, nil
	}
	if c.m == nil {
		return nil, store.ErrClosed
	}
	return nil, fmt.Errorf("statement not prepared at open: %q", query)
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.m {
		st.Close()
	}
	c.m = nil
}

// errRow is a row whose statement could not be had.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// execTx runs a statement inside the writer's transaction.
func (s *Backend) execTx(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	st, err := s.writeStmts.get(ctx, query)
	if err != nil {
		return nil, err
	}
	return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
}

// queryRowTx reads one row inside the writer's transaction.
func (s *Backend) queryRowTx(ctx context.Context, tx *sql.Tx, query string, args ...any) scanner {
	st, err := s.writeStmts.get(ctx, query)
	if err != nil {
		return errRow{err}
	}
	return tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
}

// query reads rows from the reader pool.
func (s *Backend) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := s.readStmts.get(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}
