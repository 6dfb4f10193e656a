package sqlitestore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// A data directory remembers that it holds a database: the marker file
// beside it (im.db.id) holds the id the database keeps in its meta table.
// So a database that is missing, empty, truncated or another one is
// refused at start with an error that says what to do, instead of
// silently starting as an empty store.

// MarkerSuffix names the marker file: the database's path plus it.
const MarkerSuffix = ".id"

// ErrIntegrity is wrapped by every refusal to open a database that is not
// the intact one its directory held.
var ErrIntegrity = errors.New("database integrity")

// fileMode is the mode of every file of the store: the owner's only.
const fileMode = 0o600

// restoreAdvice ends a refusal: what an operator can do about it.
func restoreAdvice(path string) string {
	return fmt.Sprintf("restore it from a backup (imserver restore -data %s BACKUP), or, to start over with an empty database and lose what it held, remove %s",
		filepath.Dir(path), path+MarkerSuffix)
}

// prepareFile checks the database file against the marker before SQLite
// opens it, creates a new one with the store's file mode, and gives
// existing files that mode. It returns the marker's id ("" for none).
func prepareFile(path string) (marker string, err error) {
	data, err := os.ReadFile(path + MarkerSuffix)
	switch {
	case err == nil:
		marker = strings.TrimSpace(string(data))
	case !errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("read %s: %w", path+MarkerSuffix, err)
	}
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if marker != "" {
			return "", fmt.Errorf("%w: %s is missing, but this data directory held a database (%s): %s",
				ErrIntegrity, path, path+MarkerSuffix, restoreAdvice(path))
		}
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, fileMode)
		if err != nil {
			return "", fmt.Errorf("create %s: %w", path, err)
		}
		return "", f.Close()
	case err != nil:
		return "", fmt.Errorf("stat %s: %w", path, err)
	}
	if marker != "" {
		if err := checkSize(path, info.Size(), hotWAL(path)); err != nil {
			return "", err
		}
	}
	// SQLite gives its -wal and -shm files the database's mode.
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Chmod(p, fileMode); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("chmod %s: %w", p, err)
		}
	}
	return marker, nil
}

// hotWAL reports whether the database has a write-ahead log with content:
// the log may hold pages the main file does not have yet.
func hotWAL(path string) bool {
	info, err := os.Stat(path + "-wal")
	return err == nil && info.Size() > 0
}

// checkSize refuses an empty database file, or one shorter than its header
// says it is — unless a hot WAL is beside it: a checkpoint cut short (a
// crash, or one running in another process) writes the header's page
// first and the pages after it, so the file is briefly shorter than its
// header says while the log still holds everything, and quick_check reads
// through the log to judge it.
func checkSize(path string, size int64, hotWAL bool) error {
	if size == 0 {
		return fmt.Errorf("%w: %s is empty (0 bytes), but this data directory held a database: %s",
			ErrIntegrity, path, restoreAdvice(path))
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	var header [100]byte
	if _, err := io.ReadFull(f, header[:]); err != nil {
		return fmt.Errorf("%w: %s is truncated (%d bytes, less than a database header): %s",
			ErrIntegrity, path, size, restoreAdvice(path))
	}
	if string(header[:16]) != "SQLite format 3\x00" {
		return fmt.Errorf("%w: %s is not a SQLite database: %s", ErrIntegrity, path, restoreAdvice(path))
	}
	pageSize := int64(binary.BigEndian.Uint16(header[16:18]))
	if pageSize == 1 {
		pageSize = 65536
	}
	pages := int64(binary.BigEndian.Uint32(header[28:32]))
	// The header's page count is valid when its change counter matches
	// the version-valid-for number.
	valid := binary.BigEndian.Uint32(header[24:28]) == binary.BigEndian.Uint32(header[92:96])
	if valid && !hotWAL && size < pages*pageSize {
		return fmt.Errorf("%w: %s is truncated: its header says %d pages of %d bytes, the file holds %d bytes: %s",
			ErrIntegrity, path, pages, pageSize, size, restoreAdvice(path))
	}
	return nil
}

// quickCheck runs SQLite's quick_check (every page's structure, without
// the index-to-table cross-checks of a full integrity_check).
func quickCheck(ctx context.Context, db *sql.DB, path string) error {
	rows, err := db.QueryContext(ctx, "PRAGMA quick_check(5)")
	if err != nil {
		return fmt.Errorf("%w: %s failed its integrity check (PRAGMA quick_check): %v: %s", ErrIntegrity, path, err, restoreAdvice(path))
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return err
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s failed its integrity check (PRAGMA quick_check): %s: %s",
			ErrIntegrity, path, strings.Join(problems, "; "), restoreAdvice(path))
	}
	return nil
}

// checkIdentity compares the database's id with the marker's. A database
// without an id (new, or made by an older version) gets one; a directory
// without a marker gets one, written durably.
func checkIdentity(ctx context.Context, db *sql.DB, path, marker string) error {
	var id string
	err := db.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'db_id'").Scan(&id)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if marker != "" {
			return fmt.Errorf("%w: %s holds no database id, but this data directory held a database (%s): %s",
				ErrIntegrity, path, path+MarkerSuffix, restoreAdvice(path))
		}
		id = newDatabaseID()
		if _, err := db.ExecContext(ctx, "INSERT INTO meta (key, value) VALUES ('db_id', ?)", id); err != nil {
			return fmt.Errorf("record the database id: %w", err)
		}
	case err != nil:
		return fmt.Errorf("read the database id: %w", err)
	case marker != "" && marker != id:
		return fmt.Errorf("%w: %s is not the database this directory held (its id is %s, %s says %s): %s",
			ErrIntegrity, path, id, path+MarkerSuffix, marker, restoreAdvice(path))
	}
	if marker == id {
		return nil
	}
	return writeMarker(path, id)
}

// writeMarker records id in the marker file: written to a temporary file,
// synced, renamed over, and the directory synced.
func writeMarker(path, id string) error {
	tmp := path + MarkerSuffix + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fileMode)
	if err != nil {
		return fmt.Errorf("write %s: %w", path+MarkerSuffix, err)
	}
	if _, err := f.WriteString(id + "\n"); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path+MarkerSuffix, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path+MarkerSuffix, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path+MarkerSuffix, err)
	}
	if err := os.Rename(tmp, path+MarkerSuffix); err != nil {
		return fmt.Errorf("write %s: %w", path+MarkerSuffix, err)
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func newDatabaseID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}
