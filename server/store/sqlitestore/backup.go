package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Backup writes a consistent copy of the database at path to dest, while
// servers keep reading and writing it: SQLite's VACUUM INTO reads one
// snapshot (a read transaction in WAL mode), so the copy holds exactly the
// commits made before it began. dest must not exist; it is created with
// the owner's permissions only.
func Backup(ctx context.Context, path, dest string) error {
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("backup of %s: %w", path, err)
	}
	f, err := os.OpenFile(dest, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
	if err != nil {
		return fmt.Errorf("backup to %s: %w", dest, err)
	}
	f.Close()
	// Not a query_only connection: SQLite counts VACUUM INTO as a write,
	// though it only reads the database.
	db, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		os.Remove(dest)
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", dest); err != nil {
		os.Remove(dest)
		return fmt.Errorf("backup of %s to %s: %w", path, dest, err)
	}
	return syncFile(dest)
}

// Restore replaces the database at path with the backup src, for a server
// that is not running: it checks src (a SQLite database that passes
// quick_check and has an id), copies it into place durably with the owner's
// permissions only, drops the old database's WAL and shared-memory files
// (they belong to the database replaced, not to the backup) and records
// the backup's id in the marker, so that the server starts on it.
func Restore(ctx context.Context, src, path string) (id string, err error) {
	id, err = checkBackup(ctx, src)
	if err != nil {
		return "", err
	}
	tmp := path + ".restore"
	if err := copyFile(src, tmp); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("restore %s: %w", src, err)
	}
	for _, stale := range []string{path + "-wal", path + "-shm"} {
		if err := os.Remove(stale); err != nil && !errors.Is(err, os.ErrNotExist) {
			os.Remove(tmp)
			return "", fmt.Errorf("restore: remove %s: %w", stale, err)
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("restore: %w", err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return "", fmt.Errorf("restore: %w", err)
	}
	return id, writeMarker(path, id)
}

// checkBackup opens src read-only and returns its database id once it has
// passed quick_check.
func checkBackup(ctx context.Context, src string) (string, error) {
	info, err := os.Stat(src)
	if err != nil {
		return "", fmt.Errorf("backup %s: %w", src, err)
	}
	if err := checkSize(src, info.Size()); err != nil {
		return "", fmt.Errorf("%s is not a usable backup: %w", src, err)
	}
	db, err := sql.Open("sqlite", "file:"+src+"?mode=ro&_pragma=query_only(ON)")
	if err != nil {
		return "", fmt.Errorf("open %s: %w", src, err)
	}
	defer db.Close()
	if err := quickCheck(ctx, db, src); err != nil {
		return "", fmt.Errorf("%s is not a usable backup: %w", src, err)
	}
	var id string
	if err := db.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'db_id'").Scan(&id); err != nil {
		return "", fmt.Errorf("%s is not a backup of an imserver database (no database id): %w", src, err)
	}
	return id, nil
}

// copyFile copies src to a new file dst, synced, with the store's mode.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fileMode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
