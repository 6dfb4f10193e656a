package localstore

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one numbered schema step, from a file NNNN_name.sql.
type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations reads the embedded migrations in version order.
func loadMigrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		prefix, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(prefix)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: name must start with a number", e.Name())
		}
		body, err := migrationFiles.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// migrate applies every migration newer than the database's schema
// version, each in its own write transaction that reads the version
// first: a migration another connection applied meanwhile is skipped. A
// schema newer than this code knows is refused.
func migrate(ctx context.Context, db *sql.DB) error {
	migrations, err := loadMigrations()
	if err != nil {
		return err
	}
	latest := 0
	if len(migrations) > 0 {
		latest = migrations[len(migrations)-1].version
	}
	for _, m := range migrations {
		for try := 0; ; try++ {
			err := applyMigration(ctx, db, m, latest)
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

// applyMigration applies m unless the schema already has it.
func applyMigration(ctx context.Context, db *sql.DB, m migration, latest int) error {
	tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: the writer's _txlock
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
	if m.version <= current {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return fmt.Errorf("migration %s: %w", m.name, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES (?)`, m.version); err != nil {
		return fmt.Errorf("migration %s: %w", m.name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migration %s: %w", m.name, err)
	}
	return nil
}
