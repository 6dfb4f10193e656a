package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/blob"
	"github.com/imcore/im/server/store"
)

// applyRelationTx applies stored relation entry rel to its target inside
// the writer's transaction: the target's state is rewritten in its row,
// and the bodies the change erases are emptied in theirs (secure_delete
// zeroes what they held). It returns the blob keys of erased bodies that
// were archived, to be rewritten once the transaction commits.
func (s *Backend) applyRelationTx(ctx context.Context, tx *sql.Tx, rel protocol.Message) ([]string, error) {
	var stateText, targetRef string
	err := s.queryRowTx(ctx, tx, qTargetAt, rel.Conv, rel.RefSeq).Scan(&stateText, &targetRef)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("target %s/%d: %w", rel.Conv, rel.RefSeq, store.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	st, err := store.DecodeTargetState(stateText)
	if err != nil {
		return nil, err
	}
	if st == nil {
		st = &store.TargetState{}
	}
	change := st.Apply(rel)
	if change.Changed {
		text, err := st.Encode()
		if err != nil {
			return nil, err
		}
		if _, err := s.execTx(ctx, tx, qSetState, text, rel.Conv, rel.RefSeq); err != nil {
			return nil, err
		}
	}
	erasedEntry, err := (&store.ErasedEntry).Encode()
	if err != nil {
		return nil, err
	}
	var blobs []string
	for _, seq := range change.Erase {
		if seq == rel.RefSeq {
			if _, err := s.execTx(ctx, tx, qEraseBody, rel.Conv, seq); err != nil {
				return nil, err
			}
			if targetRef != "" {
				blobs = append(blobs, targetRef)
			}
			continue
		}
		var ref string
		err := s.queryRowTx(ctx, tx, qEraseEntry, erasedEntry, rel.Conv, seq).Scan(&ref)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		if ref != "" {
			blobs = append(blobs, ref)
		}
	}
	return blobs, nil
}

// ApplyRelation implements store.Backend.
func (s *Backend) ApplyRelation(ctx context.Context, rel protocol.Message) error {
	var blobs []string
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		blobs, err = s.applyRelationTx(ctx, tx, rel)
		return err
	})
	if err != nil {
		return fmt.Errorf("apply %s/%d to its target: %w", rel.Conv, rel.Seq, err)
	}
	return blob.Erase(ctx, s.blobs, blobs)
}

// MessageSeq implements store.Backend.
func (s *Backend) MessageSeq(ctx context.Context, conv, msgID string) (int64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	var seq int64
	err := s.r.QueryRowContext(ctx, qSeqOfMsgID, conv, msgID).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, store.ErrNotFound
	}
	return seq, err
}
