// Package localstore is a client's own SQLite database, one per profile (a
// user on one device): the messages it holds, its session list, tick
// boundaries, sync cursors and the outbox of messages not yet acknowledged.
//
// Every method is safe for concurrent use. Writes go through one
// connection, reads through a small pool, so a UI can read while the
// client writes.
package localstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/imcore/im/internal/sqliteconn"
)

// Store is one profile's database.
type Store struct {
	w        *sql.DB // the writer: one connection
	r        *sql.DB // readers
	deviceID string
	now      func() time.Time
	behind   behindNotes
}

// Open opens (creating if needed) the database at path, brings its schema
// up to date and gives it a device id on first use.
func Open(path string) (*Store, error) {
	w, err := sql.Open("sqlite", sqliteconn.DSN(path, false))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	ctx := context.Background()
	if err := migrate(ctx, w); err != nil {
		w.Close()
		return nil, fmt.Errorf("migrate %s: %w", path, err)
	}
	r, err := sql.Open("sqlite", sqliteconn.DSN(path, true))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	r.SetMaxOpenConns(4)
	r.SetMaxIdleConns(4)
	s := &Store{w: w, r: r, now: time.Now}
	if s.deviceID, err = s.ensureDeviceID(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return s, nil
}

// Close releases the database.
func (s *Store) Close() error {
	return errors.Join(s.r.Close(), s.w.Close())
}

// DeviceID returns the device id this database was given when it was
// created: the same for as long as the database exists.
func (s *Store) DeviceID() string { return s.deviceID }

// ensureDeviceID reads the device id, generating and keeping one the first
// time.
func (s *Store) ensureDeviceID(ctx context.Context) (string, error) {
	if id, ok, err := s.meta(ctx, "device"); err != nil || ok {
		return id, err // every start but the first: no write
	}
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	fresh := "dev-" + hex.EncodeToString(b[:])
	if _, err := s.w.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('device', ?) ON CONFLICT (key) DO NOTHING`, fresh); err != nil {
		return "", fmt.Errorf("keep device id: %w", err)
	}
	id, _, err := s.meta(ctx, "device")
	return id, err
}

// withTx runs fn in one write transaction.
func (s *Store) withTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}
