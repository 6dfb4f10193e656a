// Package sqlmigrate applies numbered SQL migrations to a SQLite database:
// files named NNNN_description.sql, applied in version order, each in its
// own write transaction with its version recorded in schema_version. Both
// the server's store and the client's local store use it.
package sqlmigrate

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Migration is one numbered schema step.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Load reads the migrations in directory dir of fsys, in version order.
func Load(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, e := range entries {
		prefix, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(prefix)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: name must start with a number", e.Name())
		}
		body, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: e.Name(), SQL: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// Apply applies every migration of dir in fsys newer than the database's
// schema version. Each runs in its own write transaction that reads the
// version first, so one another connection applied meanwhile is skipped;
// a schema newer than the migrations know is refused.
func Apply(ctx context.Context, db *sql.DB, fsys fs.FS, dir string) error {
	migrations, err := Load(fsys, dir)
	if err != nil {
		return err
	}
	latest := 0
	if len(migrations) > 0 {
		latest = migrations[len(migrations)-1].Version
	}
	for _, m := range migrations {
		for try := 0; ; try++ {
			err := apply(ctx, db, m, latest)
			if err == nil {
				break
			}
			// A connection that opens while another turns a new file into
			// WAL mode is told busy without waiting: try again shortly.
			if !strings.Contains(err.Error(), "SQLITE_BUSY") || try == busyRetries {
				return err
			}
			time.Sleep(busyPause)
		}
	}
	return nil
}

// busyRetries and busyPause bound the retries of a migration that found
// the database busy.
const (
	busyRetries = 100
	busyPause   = 20 * time.Millisecond
)

// apply applies m unless the schema already has it.
func apply(ctx context.Context, db *sql.DB, m Migration, latest int) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("create schema_version: %w", err)
	}
	var current int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&current); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if current > latest {
		return fmt.Errorf("schema version %d is newer than this program knows (%d)", current, latest)
	}
	if m.Version <= current {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return fmt.Errorf("migration %s: %w", m.Name, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES (?)`, m.Version); err != nil {
		return fmt.Errorf("migration %s: %w", m.Name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migration %s: %w", m.Name, err)
	}
	return nil
}
