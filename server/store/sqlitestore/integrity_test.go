package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// filledStore makes a closed database at dir/im.db holding n messages of
// 1 KB, and returns its path.
func filledStore(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "im.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		_, err := s.Append(context.Background(), protocol.Message{Conv: "d:alice:bob", MsgID: fmt.Sprintf("m%d", i), From: "alice", Body: strings.Repeat("b", 1000), ServerTS: 1})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// refused requires Open(path) to fail with ErrIntegrity, naming the file
// and what to do.
func refused(t *testing.T, path, says string) {
	t.Helper()
	s, err := Open(path, Options{})
	if err == nil {
		s.Close()
		t.Fatalf("Open(%s) succeeded; want a refusal saying %q", path, says)
	}
	msg := err.Error()
	if !errors.Is(err, ErrIntegrity) || !strings.Contains(msg, path) || !strings.Contains(msg, says) ||
		!strings.Contains(msg, "imserver restore") || !strings.Contains(msg, path+MarkerSuffix) {
		t.Fatalf("Open(%s): %v\nwant ErrIntegrity naming the file, saying %q and what to do", path, err, says)
	}
}

func TestMarkerRemembersTheDatabase(t *testing.T) {
	path := filledStore(t, 3)
	marker, err := os.ReadFile(path + MarkerSuffix)
	if err != nil {
		t.Fatalf("no marker beside the database: %v", err)
	}
	s := openAt(t, path, Options{})
	msgs, _, err := s.History(context.Background(), "d:alice:bob", store.HistoryQuery{Limit: 10})
	if err != nil || len(msgs) != 3 {
		t.Fatalf("reopened: %d messages, %v", len(msgs), err)
	}
	again, _ := os.ReadFile(path + MarkerSuffix)
	if string(again) != string(marker) {
		t.Fatalf("the marker changed on reopening: %q → %q", marker, again)
	}
}

func TestMissingDatabaseIsRefused(t *testing.T) {
	path := filledStore(t, 3)
	os.Remove(path)
	refused(t, path, "is missing")
}

func TestEmptyDatabaseIsRefused(t *testing.T) {
	path := filledStore(t, 3)
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	refused(t, path, "is empty")
}

func TestTruncatedDatabaseIsRefused(t *testing.T) {
	path := filledStore(t, 200)
	info, _ := os.Stat(path)
	if err := os.Truncate(path, info.Size()/2); err != nil {
		t.Fatal(err)
	}
	refused(t, path, "is truncated")
}

func TestCorruptedPageIsRefused(t *testing.T) {
	path := filledStore(t, 200)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	info, _ := f.Stat()
	junk := []byte(strings.Repeat("\xde\xad\xbe\xef", 1024))
	if _, err := f.WriteAt(junk, info.Size()/2/4096*4096); err != nil { // one whole page in the middle
		t.Fatal(err)
	}
	f.Close()
	refused(t, path, "failed its integrity check")
}

func TestAnotherDatabaseIsRefused(t *testing.T) {
	path := filledStore(t, 3)
	other := filledStore(t, 1)
	data, err := os.ReadFile(other)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	refused(t, path, "is not the database this directory held")
}

// A database made before the marker existed gets an id and a marker; a
// new one, started from nothing, too.
func TestDatabaseWithoutIDGetsOne(t *testing.T) {
	path := filledStore(t, 2)
	os.Remove(path + MarkerSuffix)
	db, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("DELETE FROM meta"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	openAt(t, path, Options{})
	if _, err := os.Stat(path + MarkerSuffix); err != nil {
		t.Fatalf("no marker written for a database without an id: %v", err)
	}
}

func TestFilesAreTheOwnersOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "im.db")
	s := openAt(t, path, Options{})
	if _, err := s.Append(context.Background(), protocol.Message{Conv: "d:alice:bob", MsgID: "m", From: "alice", Body: "x", ServerTS: 1}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm", path + MarkerSuffix} {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatalf("stat %s: %v", p, err)
		}
		if mode := info.Mode().Perm(); mode != 0o600 {
			t.Errorf("%s has mode %o, want 600", filepath.Base(p), mode)
		}
	}
}

// An existing database with loose permissions gets the owner's only.
func TestLooseModesAreTightened(t *testing.T) {
	path := filledStore(t, 1)
	os.Chmod(path, 0o644)
	openAt(t, path, Options{})
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o600 {
		t.Fatalf("mode %o after open, want 600", info.Mode().Perm())
	}
}

func TestBackupAndRestore(t *testing.T) {
	path := filledStore(t, 5)
	s := openAt(t, path, Options{})
	dest := filepath.Join(t.TempDir(), "backup.db")
	if err := Backup(context.Background(), path, dest); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(dest); info.Mode().Perm() != 0o600 {
		t.Errorf("backup has mode %o, want 600", info.Mode().Perm())
	}
	if err := Backup(context.Background(), path, dest); err == nil {
		t.Error("a backup over an existing file succeeded")
	}
	// Written after the backup: not in it.
	if _, err := s.Append(context.Background(), protocol.Message{Conv: "d:alice:bob", MsgID: "late", From: "alice", Body: "x", ServerTS: 1}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	_, kept, err := Restore(context.Background(), dest, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(kept); err != nil {
		t.Fatalf("the replaced database was not kept: %v", err)
	}
	restored := openAt(t, path, Options{})
	msgs, _, err := restored.History(context.Background(), "d:alice:bob", store.HistoryQuery{Limit: 10})
	if err != nil || len(msgs) != 5 {
		t.Fatalf("restored: %d messages, %v; want the 5 of the backup", len(msgs), err)
	}
	// Restoring what is not a backup is refused and changes nothing.
	junk := filepath.Join(t.TempDir(), "junk.db")
	os.WriteFile(junk, []byte("not a database at all, not even close"), 0o600)
	if _, _, err := Restore(context.Background(), junk, path); err == nil {
		t.Fatal("restored junk")
	}
	// A copy taken from under a running database, with its WAL beside it,
	// is refused: the log would not come along.
	hot := filepath.Join(t.TempDir(), "hot.db")
	copyFile(path, hot)
	os.WriteFile(hot+"-wal", []byte("log pages"), 0o600)
	if _, _, err := Restore(context.Background(), hot, path); err == nil || !strings.Contains(err.Error(), "write-ahead log") {
		t.Fatalf("restoring a hot copy: %v", err)
	}
	// And a database with its WAL hot, as a crash leaves it mid-checkpoint,
	// is not refused for being shorter than its header says.
	crashed := filledStore(t, 200)
	db, _ := os.ReadFile(crashed)
	os.WriteFile(crashed+"-wal", []byte("x"), 0o600)
	if err := checkSize(crashed, int64(len(db))/2, hotWAL(crashed)); err != nil {
		t.Fatalf("a short file with a hot WAL: %v", err)
	}
}

// Health turns to the storage fault of a commit, here a full disk.
func TestHealthReportsAFullDisk(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "im.db"), Options{MaxPages: 30})
	var err error
	for i := 0; i < 1000 && err == nil; i++ {
		_, err = s.Append(context.Background(), protocol.Message{Conv: "d:alice:bob", MsgID: fmt.Sprintf("m%d", i), From: "alice", Body: strings.Repeat("x", 4000), ServerTS: 1})
	}
	if err == nil {
		t.Fatal("1000 appends of 4 KB fitted in 30 pages")
	}
	if h := s.Health(); h == nil || !strings.Contains(h.Error(), "full") {
		t.Fatalf("Health() = %v after %v, want the full disk", h, err)
	}
}

// A store whose disk filled up and then got room again is healthy again
// after a probe write, with no traffic.
func TestProbeFindsTheStoreRecovered(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "im.db"), Options{MaxPages: 30})
	var err error
	for i := 0; i < 1000 && err == nil; i++ {
		_, err = s.Append(context.Background(), protocol.Message{Conv: "d:alice:bob", MsgID: fmt.Sprintf("m%d", i), From: "alice", Body: strings.Repeat("x", 4000), ServerTS: 1})
	}
	if s.Health() == nil {
		t.Fatal("no fault after the disk filled")
	}
	if err := s.Probe(context.Background()); err == nil || s.Health() == nil {
		t.Fatalf("a probe on a full disk: %v, health %v", err, s.Health())
	}
	if _, err := s.w.Exec("PRAGMA max_page_count = 1000000"); err != nil { // room again
		t.Fatal(err)
	}
	if err := s.Probe(context.Background()); err != nil {
		t.Fatalf("a probe with room: %v", err)
	}
	if h := s.Health(); h != nil {
		t.Fatalf("Health() = %v after a successful probe", h)
	}
}

// Small rows that still fit in a full database (the derived rows written
// behind) do not make it healthy: only a write of a message's worth (an
// append, a probe) does. Before, any commit cleared the fault and /readyz
// said ready while no message could be stored.
func TestSmallCommitsDoNotClearAFullDisk(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "im.db"), Options{MaxPages: 30})
	var err error
	for i := 0; i < 1000 && err == nil; i++ {
		_, err = s.Append(context.Background(), protocol.Message{Conv: "d:alice:bob", MsgID: fmt.Sprintf("m%d", i), From: "alice", Body: strings.Repeat("x", 4000), ServerTS: 1})
	}
	if s.Health() == nil {
		t.Fatal("no fault after the disk filled")
	}
	small := func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO meta (key, value) VALUES ('small', 'x')`)
		return err
	}
	if err := s.write(context.Background(), small); err != nil {
		t.Fatalf("a small write on a full disk: %v (the test needs one that fits)", err)
	}
	if s.Health() == nil {
		t.Fatal("a small commit cleared the full disk's fault")
	}
}
