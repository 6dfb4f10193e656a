package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/imcore/im/server/blob"
	"github.com/imcore/im/server/store"
)

var _ store.Archiver = (*Backend)(nil)

// archiveBatch bounds the messages one step of Archive reads, puts in the
// blob store and then marks in one write.
const archiveBatch = 200

// archiveCandidate is a message Archive moves.
type archiveCandidate struct {
	rowid, seq int64
	conv, body string
}

// Archive implements store.Archiver. It walks the messages once, in rowid
// order (a cursor, not an index: no index on server_ts costs the appends
// anything), in batches: each batch's bodies are put in the blob store
// (durable), then, in one write, each row has its s3_ref set and its body
// emptied where s3_ref is still empty — so a concurrent run (the server's
// and the command's) counts each message once, and a crash between the
// two steps leaves the rows whole, to be moved again by the next run.
func (s *Backend) Archive(ctx context.Context, cutoff int64, progress func(moved int)) (int, error) {
	if s.blobs == nil {
		return 0, errors.New("archive: no blob store configured")
	}
	moved := 0
	var after int64 // the last rowid looked at
	for {
		if err := s.checkOpen(); err != nil {
			return moved, err
		}
		batch, err := s.archiveCandidates(ctx, after, cutoff)
		if err != nil {
			return moved, fmt.Errorf("archive: %w", err)
		}
		if len(batch) == 0 {
			return moved, nil
		}
		after = batch[len(batch)-1].rowid
		if err := s.putBodies(ctx, batch); err != nil {
			return moved, fmt.Errorf("archive: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return moved, err
		}
		n, err := s.markArchived(ctx, batch)
		if err != nil {
			return moved, fmt.Errorf("archive: %w", err)
		}
		if err := s.eraseDeletedMeanwhile(ctx, batch); err != nil {
			return moved, fmt.Errorf("archive: %w", err)
		}
		moved += n
		if progress != nil {
			progress(moved)
		}
		if len(batch) < archiveBatch {
			return moved, nil
		}
	}
}

// archiveCandidates reads the next batch of messages older than cutoff
// still holding their bodies, after rowid after.
func (s *Backend) archiveCandidates(ctx context.Context, after, cutoff int64) ([]archiveCandidate, error) {
	rows, err := s.query(ctx, qArchiveCandidates, after, cutoff, archiveBatch)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []archiveCandidate
	for rows.Next() {
		var c archiveCandidate
		if err := rows.Scan(&c.rowid, &c.conv, &c.seq, &c.body); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// putBodies writes a batch's bodies to the blob store, a few at a time.
func (s *Backend) putBodies(ctx context.Context, batch []archiveCandidate) error {
	return eachAtOnce(batch, func(c archiveCandidate) error {
		return s.blobs.Put(ctx, blob.Key(c.conv, c.seq), []byte(c.body))
	})
}

// markArchived records a batch as moved, in one write, and returns how
// many rows it changed (a row another run marked first is not counted).
func (s *Backend) markArchived(ctx context.Context, batch []archiveCandidate) (int, error) {
	var n int64
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		n = 0
		for _, c := range batch {
			res, err := s.execTx(ctx, tx, qArchiveMark, blob.Key(c.conv, c.seq), c.conv, c.seq)
			if err != nil {
				return err
			}
			changed, err := res.RowsAffected()
			if err != nil {
				return err
			}
			n += changed
		}
		return nil
	})
	return int(n), err
}

// eraseDeletedMeanwhile rewrites as empty the blobs just put for bodies
// that a deletion erased after they were read: a deletion that committed
// before the batch was marked found no s3_ref to erase, one after it
// found it and erased the blob itself.
func (s *Backend) eraseDeletedMeanwhile(ctx context.Context, batch []archiveCandidate) error {
	for _, c := range batch {
		var state string
		err := mustStmt(s.readStmts, qStateAt).QueryRowContext(ctx, c.conv, c.seq).Scan(&state)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return err
		}
		st, err := store.DecodeTargetState(state)
		if err != nil {
			return err
		}
		if st != nil && (st.Deleted || st.Erased) {
			if err := blob.Erase(ctx, s.blobs, []string{blob.Key(c.conv, c.seq)}); err != nil {
				return err
			}
		}
	}
	return nil
}
