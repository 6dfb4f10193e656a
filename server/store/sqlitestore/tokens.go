package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/imcore/im/server/auth"
)

var _ auth.Epochs = (*Backend)(nil)

// TokenEpoch implements auth.Epochs.
func (s *Backend) TokenEpoch(ctx context.Context, user string) (int64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	st, err := s.readStmts.get(ctx, qTokenEpoch)
	if err != nil {
		return 0, err
	}
	var epoch int64
	err = st.QueryRowContext(ctx, user).Scan(&epoch)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("token epoch of %s: %w", user, err)
	}
	return epoch, nil
}

// RevokeTokens moves user's token epoch on, so that every token minted
// before refuses, and returns the new epoch. It is durable when it returns.
func (s *Backend) RevokeTokens(ctx context.Context, user string) (int64, error) {
	var epoch int64
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return s.queryRowTx(ctx, tx, qRevokeTokens, user).Scan(&epoch)
	})
	if err != nil {
		return 0, fmt.Errorf("revoke the tokens of %s: %w", user, err)
	}
	return epoch, nil
}

// RevokedSince implements auth.Revocations.
func (s *Backend) RevokedSince(ctx context.Context, since int64) ([]auth.Revocation, int64, error) {
	if err := s.checkOpen(); err != nil {
		return nil, since, err
	}
	rows, err := s.query(ctx, qRevokedSince, since)
	if err != nil {
		return nil, since, fmt.Errorf("revocations since %d: %w", since, err)
	}
	defer rows.Close()
	var out []auth.Revocation
	newest := since
	for rows.Next() {
		var r auth.Revocation
		if err := rows.Scan(&r.User, &r.Epoch, &newest); err != nil {
			return nil, since, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, since, err
	}
	return out, newest, nil
}

// PendingCount returns how many pending-delivery rows there are (for the
// metrics).
func (s *Backend) PendingCount(ctx context.Context) (int64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	rows, err := s.query(ctx, qPendingCount)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var n int64
	if rows.Next() {
		err = rows.Scan(&n)
	}
	if err == nil {
		err = rows.Err()
	}
	return n, err
}
