package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
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
	if err := syncFile(dest); err != nil {
		return err
	}
	return syncDir(filepath.Dir(dest))
}

// Restore replaces the database at path with the backup src, for a server
// that is not running. It copies src beside the database first and checks
// the copy — a SQLite database that passes quick_check and has an id — so
// that what was checked is what is installed; a src with a hot WAL beside
// it (a file copied from under a running server) is refused, as its log
// would not come along. The database replaced is kept, with its WAL, as
// path.before-restore-TIME (returned in kept); the copy takes its place
// and its id goes into the marker, so the server starts on it.
func Restore(ctx context.Context, src, path string) (id, kept string, err error) {
	info, err := os.Stat(src)
	if err != nil {
		return "", "", fmt.Errorf("backup %s: %w", src, err)
	}
	if info.IsDir() {
		return "", "", fmt.Errorf("backup %s is a directory", src)
	}
	if hotWAL(src) {
		return "", "", fmt.Errorf("%s has a write-ahead log beside it (%s-wal): it was copied from a running database, and the log would not come along; make backups with imserver backup", src, src)
	}
	tmp := path + ".restore"
	if err := copyFile(src, tmp); err != nil {
		os.Remove(tmp)
		return "", "", fmt.Errorf("restore %s: %w", src, err)
	}
	if id, err = checkBackup(ctx, tmp); err != nil {
		os.Remove(tmp)
		return "", "", fmt.Errorf("%s is not a usable backup: %w", src, err)
	}
	if kept, err = setAside(path); err != nil {
		os.Remove(tmp)
		return "", "", err
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", kept, fmt.Errorf("restore: %w", err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return "", kept, fmt.Errorf("restore: %w", err)
	}
	return id, kept, writeMarker(path, id)
}

// setAside renames the database at path, and its WAL, to
// path.before-restore-TIME, dropping its shared-memory file; it returns
// the new name, "" when there was no database.
func setAside(path string) (string, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		os.Remove(path + "-wal")
		os.Remove(path + "-shm")
		return "", nil
	}
	kept := path + ".before-restore-" + time.Now().UTC().Format("20060102T150405")
	if err := os.Rename(path+"-wal", kept+"-wal"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("restore: keep the old database's log: %w", err)
	}
	if err := os.Rename(path, kept); err != nil {
		return "", fmt.Errorf("restore: keep the old database: %w", err)
	}
	os.Remove(path + "-shm")
	return kept, syncDir(filepath.Dir(path))
}

// checkBackup opens a database file read-only and returns its database id
// once it has passed the size check and quick_check.
func checkBackup(ctx context.Context, file string) (string, error) {
	info, err := os.Stat(file)
	if err != nil {
		return "", err
	}
	if err := checkSize(file, info.Size(), false); err != nil {
		return "", err
	}
	db, err := sql.Open("sqlite", "file:"+file+"?mode=ro&_pragma=query_only(ON)")
	if err != nil {
		return "", fmt.Errorf("open %s: %w", file, err)
	}
	defer db.Close()
	if err := quickCheck(ctx, db, file); err != nil {
		return "", err
	}
	var id string
	if err := db.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'db_id'").Scan(&id); err != nil {
		return "", fmt.Errorf("not a backup of an imserver database (no database id): %w", err)
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
