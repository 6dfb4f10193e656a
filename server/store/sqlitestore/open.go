// Package sqlitestore is the embedded backend of store.Store: one SQLite
// database file (modernc.org/sqlite, pure Go) in WAL mode, one writer that
// commits many operations per transaction, and a pool of readers.
package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/imcore/im/internal/sqliteconn"
	"github.com/imcore/im/server/store"
)

var _ store.Store = (*Store)(nil)

// Store is a store.Store on one SQLite database file.
type Store struct {
	w   *sql.DB // the writer: a single connection
	r   *sql.DB // readers
	now func() time.Time

	clocks     map[string]int64 // user → last session timestamp; writer goroutine only
	writeStmts *stmtCache
	readStmts  *stmtCache

	ops        chan *writeOp
	closing    chan struct{}
	writerDone chan struct{}
	closeMu    sync.RWMutex
	closed     bool

	stats struct {
		batches atomic.Int64
		ops     atomic.Int64
	}
}

// Options tune a Store. The zero value is the production setting.
type Options struct {
	// Now is the clock for server timestamps; time.Now when nil.
	Now func() time.Time
	// Readers is the size of the reader pool; 4 when zero.
	Readers int
}

// Open opens (creating if needed) the database at path and brings its
// schema up to date.
func Open(path string, opts Options) (*Store, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Readers <= 0 {
		opts.Readers = 4
	}
	w, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	if err := migrate(context.Background(), w); err != nil {
		w.Close()
		return nil, fmt.Errorf("migrate %s: %w", path, err)
	}
	r, err := sql.Open("sqlite", dsn(path, true))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	r.SetMaxOpenConns(opts.Readers)
	r.SetMaxIdleConns(opts.Readers)
	ctx := context.Background()
	writeStmts, err := newStmtCache(ctx, w, writerQueries...)
	if err != nil {
		r.Close()
		w.Close()
		return nil, err
	}
	readStmts, err := newStmtCache(ctx, r, readerQueries...)
	if err != nil {
		writeStmts.close()
		r.Close()
		w.Close()
		return nil, err
	}
	s := &Store{
		w:          w,
		r:          r,
		now:        opts.Now,
		clocks:     make(map[string]int64),
		writeStmts: writeStmts,
		readStmts:  readStmts,
		ops:        make(chan *writeOp, 4*maxBatch),
		closing:    make(chan struct{}),
		writerDone: make(chan struct{}),
	}
	go s.writeLoop()
	return s, nil
}

// dsn is the connection string shared with the client's local store
// (internal/sqliteconn): WAL, full synchronous commits (a commit is on disk
// when it returns), a busy timeout, for every connection of the pool.
func dsn(path string, readOnly bool) string { return sqliteconn.DSN(path, readOnly) }

// Close finishes the writes already queued, then closes the database.
func (s *Store) Close() error {
	s.closeMu.Lock()
	already := s.closed
	s.closed = true
	s.closeMu.Unlock()
	if already {
		return nil
	}
	close(s.closing)
	<-s.writerDone
	s.writeStmts.close()
	s.readStmts.close()
	errR := s.r.Close()
	errW := s.w.Close()
	if errW != nil {
		return errW
	}
	return errR
}

// checkOpen returns store.ErrClosed once Close has begun, so that reads
// fail the way writes do.
func (s *Store) checkOpen() error {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return store.ErrClosed
	}
	return nil
}

// BatchStats reports how many commits the writer made and how many
// operations they carried; their ratio is the group-commit factor.
func (s *Store) BatchStats() (batches, ops int64) {
	return s.stats.batches.Load(), s.stats.ops.Load()
}
