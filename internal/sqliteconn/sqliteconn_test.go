package sqliteconn

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// TestPragmasReachEveryConnection opens a writer and a reader pool the way
// both stores do and reads the pragmas back from each.
func TestPragmasReachEveryConnection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	w, err := sql.Open("sqlite", DSN(path, false))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Exec(`CREATE TABLE t (v INTEGER)`); err != nil {
		t.Fatal(err)
	}
	r, err := sql.Open("sqlite", DSN(path, true))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for name, db := range map[string]*sql.DB{"writer": w, "reader": r} {
		var journal string
		var busy, sync, fk int
		if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&journal); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow(`PRAGMA busy_timeout`).Scan(&busy); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow(`PRAGMA synchronous`).Scan(&sync); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow(`PRAGMA foreign_keys`).Scan(&fk); err != nil {
			t.Fatal(err)
		}
		if journal != "wal" || busy != BusyTimeoutMS || sync != 2 || fk != 1 {
			t.Errorf("%s: journal %s, busy_timeout %d, synchronous %d, foreign_keys %d; want wal, %d, 2 (FULL), 1",
				name, journal, busy, sync, fk, BusyTimeoutMS)
		}
	}
	if _, err := r.Exec(`INSERT INTO t (v) VALUES (1)`); err == nil || !strings.Contains(err.Error(), "readonly") {
		t.Errorf("the reader pool wrote: %v", err)
	}
}
