package localstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
)

// meta reads one value of the meta table; ok is false when it is absent.
func (s *Store) meta(ctx context.Context, key string) (value string, ok bool, err error) {
	err = s.r.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, key).Scan(&value)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read %s: %w", key, err)
	}
	return value, true, nil
}

// User returns the user this profile belongs to, "" until SetUser.
func (s *Store) User() (string, error) {
	u, _, err := s.meta(context.Background(), "user")
	return u, err
}

// SetUser records the user this profile belongs to.
func (s *Store) SetUser(user string) error {
	_, err := s.w.Exec(`INSERT INTO meta (key, value) VALUES ('user', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, user)
	if err != nil {
		return fmt.Errorf("set user: %w", err)
	}
	return nil
}

// cursorKey names the meta row of a list's sync cursor: "" is the main
// list, any other name a sub-business's nested list.
func cursorKey(list string) string { return "cursor:" + list }

// Cursor returns the sync cursor of a session list ("" the main list, else
// a sub_biz name): the highest active_ts synced, 0 before the first sync.
func (s *Store) Cursor(list string) (int64, error) {
	v, ok, err := s.meta(context.Background(), cursorKey(list))
	if err != nil || !ok {
		return 0, err
	}
	c, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cursor of %q: %w", list, err)
	}
	return c, nil
}

// SetCursor raises the sync cursor of a list to c; a lower c is ignored,
// so a cursor never goes back.
func (s *Store) SetCursor(list string, c int64) error {
	_, err := s.w.Exec(`INSERT INTO meta (key, value) VALUES (?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value
		WHERE CAST(excluded.value AS INTEGER) > CAST(meta.value AS INTEGER)`,
		cursorKey(list), strconv.FormatInt(c, 10))
	if err != nil {
		return fmt.Errorf("set cursor of %q: %w", list, err)
	}
	return nil
}
