package sqlmigrate

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	_ "modernc.org/sqlite"
)

func open(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestApplyInOrderOnce(t *testing.T) {
	ctx := context.Background()
	db := open(t)
	// 0010 sorts after 0002 by number, not by name.
	fsys := fstest.MapFS{
		"m/0010_more.sql":  {Data: []byte(`INSERT INTO t (v) VALUES ('ten')`)},
		"m/0002_table.sql": {Data: []byte(`CREATE TABLE t (v TEXT)`)},
	}
	for range 2 {
		if err := Apply(ctx, db, fsys, "m"); err != nil {
			t.Fatal(err)
		}
	}
	var rows, version int
	if err := db.QueryRow(`SELECT (SELECT COUNT(*) FROM t), MAX(version) FROM schema_version`).Scan(&rows, &version); err != nil {
		t.Fatal(err)
	}
	if rows != 1 || version != 10 {
		t.Errorf("after two runs: %d rows, version %d; want each migration once, version 10", rows, version)
	}
}

func TestApplyRefusesNewerSchemaAndBadNames(t *testing.T) {
	ctx := context.Background()
	db := open(t)
	newer := fstest.MapFS{"m/0001_a.sql": {Data: []byte(`CREATE TABLE a (x)`)}, "m/0002_b.sql": {Data: []byte(`CREATE TABLE b (x)`)}}
	if err := Apply(ctx, db, newer, "m"); err != nil {
		t.Fatal(err)
	}
	older := fstest.MapFS{"m/0001_a.sql": newer["m/0001_a.sql"]}
	if err := Apply(ctx, db, older, "m"); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Errorf("older code on a newer schema: err = %v, want a refusal", err)
	}
	bad := fstest.MapFS{"m/first.sql": {Data: []byte(`SELECT 1`)}}
	if err := Apply(ctx, db, bad, "m"); err == nil {
		t.Error("a migration without a number was accepted")
	}
	broken := fstest.MapFS{"m/0001_a.sql": newer["m/0001_a.sql"], "m/0002_b.sql": newer["m/0002_b.sql"], "m/0003_c.sql": {Data: []byte(`NOT SQL`)}}
	if err := Apply(ctx, db, broken, "m"); err == nil {
		t.Error("a failing migration was not reported")
	}
	var version int
	db.QueryRow(`SELECT MAX(version) FROM schema_version`).Scan(&version)
	if version != 2 {
		t.Errorf("a failed migration recorded version %d, want 2", version)
	}
}
