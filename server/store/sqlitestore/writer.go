package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/imcore/im/server/store"
)

// maxBatch bounds how many writes share one transaction (and one fsync).
const maxBatch = 256

// writeOp is one unit of work for the writer: it runs inside the batch's
// transaction, under its own savepoint, so that its failure undoes only
// itself.
type writeOp struct {
	fn   txFunc
	done chan error
	// proof marks a write of a message's size (an append, a probe): only
	// a commit holding one clears a storage fault, since a store that
	// takes small rows may still have no room for a message.
	proof bool
}

// txFunc is the body of a write. Its context is the writer's, not the
// caller's: a caller giving up must not interrupt a transaction that other
// callers' writes share.
type txFunc func(ctx context.Context, tx *sql.Tx) error

// write runs fn in the writer's next batch and returns once the batch is
// committed (durable) or fn failed. Results fn leaves in the caller's
// variables are valid only when write returns nil.
func (s *Backend) write(ctx context.Context, fn txFunc) error {
	op, err := s.queue(ctx, fn)
	if err != nil {
		return err
	}
	// Once queued the op will run; wait for the outcome so the caller never
	// reports failure for a write that committed.
	return <-op.done
}

// queue hands fn to the writer, in the order of the calls, and returns its
// op: op.done says when it is committed or failed. An error means fn was
// not queued.
func (s *Backend) queue(ctx context.Context, fn txFunc) (*writeOp, error) {
	return s.enqueue(ctx, &writeOp{fn: fn, done: make(chan error, 1)})
}

// queueProof is queue for a write of a message's size (see writeOp.proof).
func (s *Backend) queueProof(ctx context.Context, fn txFunc) (*writeOp, error) {
	return s.enqueue(ctx, &writeOp{fn: fn, done: make(chan error, 1), proof: true})
}

func (s *Backend) enqueue(ctx context.Context, op *writeOp) (*writeOp, error) {
	// The read lock keeps Close from finishing between the closed check and
	// the enqueue, so every queued op is seen by the writer's final drain.
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	select {
	case s.ops <- op:
		return op, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// writeLoop is the single writer: it takes every op queued while the last
// commit ran and commits them together — group commit.
func (s *Backend) writeLoop() {
	defer close(s.writerDone)
	for {
		var first *writeOp
		select {
		case first = <-s.ops:
		case <-s.closing:
			// Drain what was queued before closing.
			for {
				select {
				case op := <-s.ops:
					s.commit([]*writeOp{op})
				default:
					return
				}
			}
		}
		batch := []*writeOp{first}
	fill:
		for len(batch) < maxBatch {
			select {
			case op := <-s.ops:
				batch = append(batch, op)
			default:
				break fill
			}
		}
		s.commit(batch)
	}
}

// commit runs a batch in one transaction and reports to every op.
func (s *Backend) commit(batch []*writeOp) {
	results := make([]error, len(batch))
	start := time.Now()
	err := s.runBatch(batch, results)
	s.stats.batches.Add(1)
	s.stats.ops.Add(int64(len(batch)))
	s.recordHealth(err, results, batch)
	if s.onCommit != nil {
		s.onCommit(len(batch), time.Since(start), err)
	}
	for i, op := range batch {
		if err != nil {
			op.done <- err
		} else {
			op.done <- results[i]
		}
	}
}

func (s *Backend) runBatch(batch []*writeOp, results []error) error {
	ctx := context.Background()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	for i, op := range batch {
		if _, err := s.execTx(ctx, tx, qSavepoint); err != nil {
			tx.Rollback()
			return fmt.Errorf("savepoint: %w", err)
		}
		results[i] = runOp(ctx, op, tx)
		if results[i] != nil {
			if _, err := s.execTx(ctx, tx, qRollbackTo); err != nil {
				// SQLite rolls the whole transaction back itself on some
				// failures (a full disk, an I/O error): the op's error is
				// the batch's.
				tx.Rollback()
				return fmt.Errorf("%w (the batch was rolled back: %v)", results[i], err)
			}
		}
		if _, err := s.execTx(ctx, tx, qReleaseSave); err != nil {
			tx.Rollback()
			return fmt.Errorf("release savepoint: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// runOp runs one op, turning a panic into an error so that one bad op
// cannot take the writer down.
func runOp(ctx context.Context, op *writeOp, tx *sql.Tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("write op panicked: %v", r)
		}
	}()
	return op.fn(ctx, tx)
}

// recordHealth keeps the storage fault of a commit, if it had one: its own
// failure, or an op that failed for the storage's sake (a full disk, an
// I/O error, a corrupted page) rather than its own. A commit without one
// clears it if it wrote a message's worth (an append or a probe): small
// derived rows fitting in a full database do not make it take messages.
func (s *Backend) recordHealth(err error, results []error, batch []*writeOp) {
	fault := err
	for _, r := range results {
		if fault == nil && isStorageFault(r) {
			fault = r
		}
	}
	if fault == nil {
		if s.fault.Load() != nil && provesRoom(batch, results) {
			s.fault.Store(nil)
		}
		return
	}
	s.fault.Store(&fault)
}

// provesRoom reports whether a committed batch wrote a message's worth:
// an op marked proof that succeeded.
func provesRoom(batch []*writeOp, results []error) bool {
	for i, op := range batch {
		if op.proof && results[i] == nil {
			return true
		}
	}
	return false
}

// Health returns nil while the store commits, and otherwise the error of
// its last commit that hit a storage fault, until a commit succeeds again.
func (s *Backend) Health() error {
	if p := s.fault.Load(); p != nil {
		return *p
	}
	return nil
}

// isStorageFault reports whether err is SQLite saying that the storage
// failed: the disk is full, an I/O failed, the file is corrupt, not a
// database, read-only or cannot be opened.
func isStorageFault(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB,
		sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM:
		return true
	}
	return false
}

// probeSize is what a probe writes: a full message's worth, so that it
// needs new pages as a message does (a write that fits in a page already
// there would succeed on a full disk).
const probeSize = 4096

// Probe makes a write of a message's size through the writer, and takes it
// back in the same transaction, so that a store whose last commit failed
// and that is otherwise idle finds out whether it commits again (Health
// follows). It changes nothing else.
func (s *Backend) Probe(ctx context.Context) error {
	pad := strings.Repeat("p", probeSize)
	op, err := s.queueProof(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := s.execTx(ctx, tx, qProbeInsert, pad); err != nil {
			return err
		}
		_, err := s.execTx(ctx, tx, qProbeDelete)
		return err
	})
	if err != nil {
		return err
	}
	return <-op.done
}
