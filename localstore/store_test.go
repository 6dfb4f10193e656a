package localstore

import (
	"strconv"
	"testing"

	"github.com/imcore/im/internal/sqliteconn"
	"github.com/imcore/im/internal/sqlmigrate"
)

func TestDeviceIDIsKeptAcrossReopen(t *testing.T) {
	s, path := openTemp(t)
	id := s.DeviceID()
	if id == "" {
		t.Fatal("no device id")
	}
	s.Close()
	again, err := Open(path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer again.Close()
	if again.DeviceID() != id {
		t.Fatalf("device id changed from %q to %q", id, again.DeviceID())
	}
	other, _ := openTemp(t)
	if other.DeviceID() == id {
		t.Fatalf("two databases share device id %q", id)
	}
}

func TestMigrationsAreRecordedOnce(t *testing.T) {
	s, path := openTemp(t)
	s.Close()
	again, err := Open(path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer again.Close()
	var rows, version int
	if err := again.r.QueryRow(`SELECT COUNT(*), MAX(version) FROM schema_version`).Scan(&rows, &version); err != nil {
		t.Fatal(err)
	}
	migrations, _ := sqlmigrate.Load(migrationFiles, "migrations")
	if rows != len(migrations) || version != migrations[len(migrations)-1].Version {
		t.Fatalf("schema_version has %d rows up to %d, want %d", rows, version, len(migrations))
	}
}

func TestPragmasApplyToEveryConnection(t *testing.T) {
	s, _ := openTemp(t)
	for _, db := range []struct {
		name string
		q    func(string) (string, error)
	}{
		{"writer", func(p string) (v string, err error) { err = s.w.QueryRow("PRAGMA " + p).Scan(&v); return }},
		{"reader", func(p string) (v string, err error) { err = s.r.QueryRow("PRAGMA " + p).Scan(&v); return }},
	} {
		for pragma, want := range map[string]string{"journal_mode": "wal", "busy_timeout": strconv.Itoa(sqliteconn.BusyTimeoutMS), "synchronous": "2", "foreign_keys": "1"} {
			got, err := db.q(pragma)
			if err != nil || got != want {
				t.Errorf("%s: PRAGMA %s = %q (%v), want %q", db.name, pragma, got, err, want)
			}
		}
	}
}

func TestUserAndCursors(t *testing.T) {
	s, _ := openTemp(t)
	if u, err := s.User(); err != nil || u != "" {
		t.Fatalf("user of a new profile = %q, %v", u, err)
	}
	if err := s.SetUser("alice"); err != nil {
		t.Fatal(err)
	}
	if u, _ := s.User(); u != "alice" {
		t.Fatalf("user = %q, want alice", u)
	}
	for _, step := range []struct {
		list      string
		set, want int64
	}{
		{"", 100, 100},
		{"", 50, 100}, // never back
		{"shop", 7, 7},
		{"", 101, 101},
		{"shop", 1 << 50, 1 << 50},
	} {
		if err := s.SetCursor(step.list, step.set); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Cursor(step.list); err != nil || got != step.want {
			t.Fatalf("after SetCursor(%q, %d): cursor %d (%v), want %d", step.list, step.set, got, err, step.want)
		}
	}
	if got, _ := s.Cursor("never"); got != 0 {
		t.Fatalf("cursor of an unsynced list = %d", got)
	}
}
