package localstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/imcore/im/protocol"
)

// RaiseTicks max-merges t into conv's stored tick boundaries: each side
// only rises, and delivered is never below read. It returns the
// boundaries now stored and whether they rose.
func (s *Store) RaiseTicks(conv string, t protocol.Ticks) (protocol.Ticks, bool, error) {
	var out protocol.Ticks
	var changed bool
	now := s.now().UnixMilli()
	err := s.withTx(context.Background(), func(tx *sql.Tx) error {
		var err error
		out, changed, err = raiseTicks(tx, conv, t, now)
		return err
	})
	if err != nil {
		return protocol.Ticks{}, false, fmt.Errorf("raise ticks of %s: %w", conv, err)
	}
	return out, changed, nil
}

// raiseTicks is RaiseTicks inside a transaction at time now (ms); the
// merge happens in SQL. A rise is recorded with its time (TickTimes).
func raiseTicks(tx *sql.Tx, conv string, t protocol.Ticks, now int64) (protocol.Ticks, bool, error) {
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
	if out == old {
		return out, false, nil
	}
	_, err = tx.Exec(`INSERT INTO tick_rises (conv, delivered_seq, read_seq, at) VALUES (?, ?, ?, ?)`,
		conv, out.DeliveredSeq, out.ReadSeq, now)
	return out, true, err
}

// TickTimes returns when this device saw conv's boundaries first cover
// message seq: delivered to every other member, and read by every other
// member (zero while not yet). It is when the device learned it: at once
// while online, at the next sync after being offline.
func (s *Store) TickTimes(conv string, seq int64) (delivered, read time.Time, err error) {
	var d, r sql.NullInt64
	err = s.r.QueryRow(`SELECT
		(SELECT min(at) FROM tick_rises WHERE conv = ?1 AND delivered_seq >= ?2),
		(SELECT min(at) FROM tick_rises WHERE conv = ?1 AND read_seq >= ?2)`, conv, seq).Scan(&d, &r)
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("tick times of %s/%d: %w", conv, seq, err)
	}
	if d.Valid {
		delivered = time.UnixMilli(d.Int64)
	}
	if r.Valid {
		read = time.UnixMilli(r.Int64)
	}
	return delivered, read, nil
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
