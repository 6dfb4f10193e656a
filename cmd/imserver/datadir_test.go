package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/imcore/im/protocol"
)

// serveAndStop runs a server on dir, sends n messages, and stops it
// gracefully (its WAL checkpointed into im.db).
func serveAndStop(t *testing.T, dir string, n int) {
	t.Helper()
	p := startServer(t, "-data", dir)
	seedMessages(t, p.addr, "alice", "d:alice:bob", n, strings.Repeat("m", 1000))
	if err := p.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("stop: %v\n%s", err, p.logs)
	}
}

// refusesToStart runs serve on dir and requires it to exit non-zero at
// once, its error naming the database and saying both what is wrong and
// what to do.
func refusesToStart(t *testing.T, dir, says string) {
	t.Helper()
	_, errOut, code := runCommand(t, nil, "serve", "-listen", "127.0.0.1:0", "-data", dir)
	db := filepath.Join(dir, "im.db")
	if code == 0 || !strings.Contains(errOut, db) || !strings.Contains(errOut, says) || !strings.Contains(errOut, "imserver restore") {
		t.Fatalf("serve on a data directory whose database %s: exit %d, stderr %q", says, code, errOut)
	}
}

// A data directory that held a database refuses to start without it,
// instead of starting empty; with the database put back it serves it.
func TestStartRefusesALostDatabase(t *testing.T) {
	dir := t.TempDir()
	serveAndStop(t, dir, 50)
	db := filepath.Join(dir, "im.db")
	original, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}

	os.Truncate(db, 0) // the zero-byte im.db of the issue
	refusesToStart(t, dir, "is empty")

	os.Remove(db)
	refusesToStart(t, dir, "is missing")

	os.WriteFile(db, original[:len(original)/2], 0o600)
	refusesToStart(t, dir, "is truncated")

	corrupt := append([]byte(nil), original...)
	page := len(corrupt) / 2 / 4096 * 4096
	copy(corrupt[page:page+4096], strings.Repeat("\xde\xad\xbe\xef", 1024))
	os.WriteFile(db, corrupt, 0o600)
	refusesToStart(t, dir, "failed its integrity check")

	// The database put back: it starts and serves what it held.
	os.WriteFile(db, original, 0o600)
	p := startServer(t, "-data", dir)
	c := dialHello(t, p.addr, "bob", "d")
	f, err := c.request(&protocol.History{Ref: protocol.Ref{ID: "h"}, Conv: "d:alice:bob", Limit: 200}, "h")
	if err != nil || len(f.(*protocol.Messages).Messages) != 50 {
		t.Fatalf("history after putting the database back: %v %v", f, err)
	}
}

// Everything the server writes in its data directory is the owner's only.
func TestDataFilesAreTheOwnersOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	startServer(t, "-data", dir, "-auth", "token")
	_, errOut, code := runCommand(t, nil, "token", "-data", dir, "alice")
	if code != 0 {
		t.Fatalf("token: %s", errOut)
	}
	info, err := os.Stat(dir)
	if err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("data directory: %v %v, want mode 700", info, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, e.Name())
		if mode := info.Mode().Perm(); mode != 0o600 {
			t.Errorf("%s has mode %o, want 600", e.Name(), mode)
		}
	}
	for _, want := range []string{"im.db", "im.db-wal", "im.db-shm", "im.db.id", "token.secret", "imserver.lock"} {
		if !strings.Contains(fmt.Sprint(names), want) {
			t.Errorf("%s not in the data directory: %v", want, names)
		}
	}
}

// A second server on the same data directory is refused, naming the one
// that holds it.
func TestOneServerPerDataDirectory(t *testing.T) {
	dir := t.TempDir()
	startServer(t, "-data", dir)
	_, errOut, code := runCommand(t, nil, "serve", "-listen", "127.0.0.1:0", "-data", dir)
	if code == 0 || !strings.Contains(errOut, "another imserver is using") {
		t.Fatalf("second server on one directory: exit %d, %q", code, errOut)
	}
	_, errOut, code = runCommand(t, nil, "restore", "-data", dir, filepath.Join(dir, "im.db"))
	if code == 0 || !strings.Contains(errOut, "another imserver is using") {
		t.Fatalf("restore under a running server: exit %d, %q", code, errOut)
	}
}
