package localstore

import (
	"context"
	"database/sql"
	"embed"
	"sync"

	"github.com/imcore/im/internal/sqlmigrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// latestVersion is the version of the newest migration.
var latestVersion = sync.OnceValues(func() (int, error) {
	ms, err := sqlmigrate.Load(migrationFiles, "migrations")
	if err != nil || len(ms) == 0 {
		return 0, err
	}
	return ms[len(ms)-1].Version, nil
})

// migrate brings the database's schema up to date. A profile opened at
// every start is already: one read says so, where applying the migrations
// takes a write transaction each to find it out.
func migrate(ctx context.Context, db *sql.DB) error {
	latest, err := latestVersion()
	if err != nil {
		return err
	}
	var current int
	if db.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_version`).Scan(&current) == nil && current == latest {
		return nil
	}
	return sqlmigrate.Apply(ctx, db, migrationFiles, "migrations")
}
