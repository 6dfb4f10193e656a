package localstore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/imcore/im/protocol"
)

// RaiseTicks max-merges t into conv's stored tick boundaries: each side
// only rises, and delivered is never below read. It returns the
// boundaries now stored and whether they rose.
func (s *Store) RaiseTicks(conv string, t protocol.Ticks) (protocol.Ticks, bool, error) {
	var out protocol.Ticks
	var changed bool
	err := s.withTx(context.Background(), func(tx *sql.Tx) error {
		var err error
		out, changed, err = raiseTicks(tx, conv, t)
		return err
	})
	if err != nil {
		return protocol.Ticks{}, false, fmt.Errorf("raise ticks of %s: %w", conv, err)
	}
	return out, changed, nil
}

// raiseTicks is RaiseTicks inside a transaction; the merge happens in SQL.
func raiseTicks(tx *sql.Tx, conv string, t protocol.Ticks) (protocol.Ticks, bool, error) {
	var old protocol.Ticks
	err := tx.QueryRow(`SELECT delivered_seq, read_seq FROM ticks WHERE conv = ?`, conv).Scan(&old.DeliveredSeq, &old.ReadSeq)
	if err != nil && err != sql.ErrNoRows {
		return protocol.Ticks{}, false, err
	}
	var out protocol.Ticks
	err = tx.QueryRow(`INSERT INTO ticks (conv, delivered_seq, read_seq) VALUES (?1, max(?2, ?3), ?3)
		ON CONFLICT (conv) DO UPDATE SET
			read_seq = max(read_seq, excluded.read_seq),
			delivered_seq = max(delivered_seq, excluded.delivered_seq, excluded.read_seq)
		RETURNING delivered_seq, read_seq`, conv, t.DeliveredSeq, t.ReadSeq).Scan(&out.DeliveredSeq, &out.ReadSeq)
	if err != nil {
		return protocol.Ticks{}, false, err
	}
	return out, out != old, nil
}

// Ticks returns conv's stored tick boundaries (zero when none are known).
func (s *Store) Ticks(conv string) (protocol.Ticks, error) {
	var t protocol.Ticks
	err := s.r.QueryRow(`SELECT delivered_seq, read_seq FROM ticks WHERE conv = ?`, conv).Scan(&t.DeliveredSeq, &t.ReadSeq)
	if err != nil && err != sql.ErrNoRows {
		return protocol.Ticks{}, fmt.Errorf("ticks of %s: %w", conv, err)
	}
	return t, nil
}
