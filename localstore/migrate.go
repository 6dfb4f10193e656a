package localstore

import (
	"context"
	"database/sql"
	"embed"

	"github.com/imcore/im/internal/sqlmigrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrate brings the database's schema up to date.
func migrate(ctx context.Context, db *sql.DB) error {
	return sqlmigrate.Apply(ctx, db, migrationFiles, "migrations")
}
