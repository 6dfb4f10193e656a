// Package sqlitestore is the embedded store.Backend: one SQLite
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
	"github.com/imcore/im/server/blob"
	"github.com/imcore/im/server/store"
)

var _ store.Backend = (*Backend)(nil)

// Backend is a store.Backend on one SQLite database file.
type Backend struct {
	w *sql.DB // the writer: a single connection
	r *sql.DB // readers

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
	onCommit func(ops int, took time.Duration, err error)
	blobs    blob.Store            // archived bodies; nil when none were configured
	fault    atomic.Pointer[error] // the last commit's storage fault, nil when it succeeded
}

// Options tune a Backend. The zero value is the production setting.
type Options struct {
	// Readers is the size of the reader pool; 4 when zero.
	Readers int
	// MaxPages, when positive, caps the database at that many pages
	// (SQLite's max_page_count): past it every write fails as on a full
	// disk. For tests of what a full disk does.
	MaxPages int
	// OnCommit, when set, is told of every commit of the writer: the
	// writes it carried, how long it took and its error.
	OnCommit func(ops int, took time.Duration, err error)
	// Blobs is the cold storage of archived bodies: Archive moves bodies
	// there and every read of an archived message reads its body back.
	// Without it Archive fails, as does a read of a message archived
	// before.
	Blobs blob.Store
}

// Open opens (creating if needed) the database at path and brings its
// schema up to date. A database its directory's marker says existed must
// be there, whole and intact (PRAGMA quick_check), or Open refuses it with
// an error wrapping ErrIntegrity that says what to do.
func Open(path string, opts Options) (*Backend, error) {
	if opts.Readers <= 0 {
		opts.Readers = 4
	}
	marker, err := prepareFile(path)
	if err != nil {
		return nil, err
	}
	w, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	if err := openChecks(w, path, marker, opts); err != nil {
		w.Close()
		return nil, err
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
	s := &Backend{
		w:          w,
		r:          r,
		writeStmts: writeStmts,
		readStmts:  readStmts,
		ops:        make(chan *writeOp, 4*maxBatch),
		closing:    make(chan struct{}),
		writerDone: make(chan struct{}),
		onCommit:   opts.OnCommit,
		blobs:      opts.Blobs,
	}
	go s.writeLoop()
	return s, nil
}

// openChecks checks the database's pages and identity and brings its
// schema up to date, on the writer's connection.
func openChecks(w *sql.DB, path, marker string, opts Options) error {
	ctx := context.Background()
	if opts.MaxPages > 0 {
		if _, err := w.ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", opts.MaxPages)); err != nil {
			return fmt.Errorf("limit %s: %w", path, err)
		}
	}
	if err := quickCheck(ctx, w, path); err != nil {
		return err
	}
	if err := migrate(ctx, w); err != nil {
		return fmt.Errorf("migrate %s: %w", path, err)
	}
	return checkIdentity(ctx, w, path, marker)
}

// dsn is the connection string shared with the client's local store
// (internal/sqliteconn): WAL, full synchronous commits (a commit is on disk
// when it returns), a busy timeout, for every connection of the pool.
//
// secure_delete overwrites deleted content with zeros, so that a body a
// deletion for everyone erased stays in no free page or cell of the file.
func dsn(path string, readOnly bool) string {
	return sqliteconn.DSN(path, readOnly) + "&_pragma=secure_delete(ON)"
}

// Close finishes the writes already queued, then closes the database.
func (s *Backend) Close() error {
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
func (s *Backend) checkOpen() error {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return store.ErrClosed
	}
	return nil
}

// BatchStats reports how many commits the writer made and how many
// operations they carried; their ratio is the group-commit factor.
func (s *Backend) BatchStats() (batches, ops int64) {
	return s.stats.batches.Load(), s.stats.ops.Load()
}
