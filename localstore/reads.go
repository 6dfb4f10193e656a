package localstore

import (
	"fmt"
)

// PendingReads returns the user's read marks the server has not confirmed
// (ApplyRead keeps them): conversation → seq.
func (s *Store) PendingReads() (map[string]int64, error) {
	rows, err := s.r.Query(`SELECT conv, seq FROM pending_reads`)
	if err != nil {
		return nil, fmt.Errorf("pending reads: %w", err)
	}
	defer rows.Close()
	out := make(map[string]int64)
	for rows.Next() {
		var conv string
		var seq int64
		if err := rows.Scan(&conv, &seq); err != nil {
			return nil, fmt.Errorf("pending reads: %w", err)
		}
		out[conv] = seq
	}
	return out, rows.Err()
}

// ClearPendingRead forgets conv's pending read once the server has
// answered a read up to seq; a later read (higher seq) stays pending.
func (s *Store) ClearPendingRead(conv string, seq int64) error {
	if _, err := s.w.Exec(`DELETE FROM pending_reads WHERE conv = ? AND seq <= ?`, conv, seq); err != nil {
		return fmt.Errorf("clear pending read of %s: %w", conv, err)
	}
	return nil
}
