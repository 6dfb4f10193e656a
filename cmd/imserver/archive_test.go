package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/imcore/im/internal/testservices"
	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server"
	"github.com/imcore/im/server/blob"
	"github.com/imcore/im/server/store/sqlitestore"
)

var archivedLine = regexp.MustCompile(`archived (\d+) message bodies`)

// archiveRun runs imserver archive and returns how many bodies it says it
// moved.
func archiveRun(t *testing.T, env []string, args ...string) int {
	t.Helper()
	out, errOut, code := runCommand(t, env, append([]string{"archive"}, args...)...)
	m := archivedLine.FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("archive %v: exit %d, out %q, err %q", args, code, out, errOut)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// historyBodies reads conv's history through a live server and checks
// every body is the one sent.
func historyBodies(t *testing.T, addr, user, conv string, sent map[int64]string) {
	t.Helper()
	c := dialHello(t, addr, user, "reader")
	defer c.ws.Close()
	f, err := c.request(&protocol.History{Ref: protocol.Ref{ID: "h"}, Conv: conv, Limit: 200}, "h")
	if err != nil {
		t.Fatalf("history: %v", err)
	}
	msgs := f.(*protocol.Messages).Messages
	if len(msgs) != len(sent) {
		t.Fatalf("history has %d messages, want %d", len(msgs), len(sent))
	}
	for _, m := range msgs {
		if m.Body != sent[m.Seq] {
			t.Errorf("history seq %d: body %q, want %q", m.Seq, m.Body, sent[m.Seq])
		}
	}
}

// imserver archive, beside a running server: messages newer than the
// cutoff stay; older ones move to DATA/blobs, out of the database's rows;
// the server keeps serving them (and after a restart); a second run moves
// nothing.
func TestArchiveCommand(t *testing.T) {
	dir := t.TempDir()
	p := startServer(t, "-data", dir)
	const conv, n = "d:alice:bob", 5
	sent := sendSome(t, p.addr, n)

	// Every message was sent within the day: none moves.
	if moved := archiveRun(t, nil, "-data", dir, "-older-than", "1d"); moved != 0 {
		t.Fatalf("-older-than 1d moved %d, want 0", moved)
	}
	// Every message was acknowledged before this run read its clock (the
	// same clock, in milliseconds): all are older than 1ms.
	if moved := archiveRun(t, nil, "-data", dir, "-older-than", "1ms"); moved != n {
		t.Fatalf("-older-than 1ms moved %d, want %d", moved, n)
	}
	historyBodies(t, p.addr, "bob", conv, sent)
	// A second run (its flag from the environment) moves nothing.
	if moved := archiveRun(t, []string{"IM_OLDER_THAN=1ms"}, "-data", dir); moved != 0 {
		t.Fatalf("a second run moved %d, want 0", moved)
	}

	// The bodies are in DATA/blobs, no longer in the database: without the
	// blob store a read of one fails, with it the body comes back.
	dbPath := filepath.Join(dir, server.DatabaseFile)
	bare, err := sqlitestore.Open(dbPath, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := bare.Message(t.Context(), conv, 1); err == nil {
		t.Errorf("the database alone still reads seq 1: %+v", m)
	}
	bare.Close()
	blobs, err := blob.NewDir(filepath.Join(dir, BlobsDir))
	if err != nil {
		t.Fatal(err)
	}
	for seq, body := range sent {
		if got, err := blobs.Get(t.Context(), blob.Key(conv, seq)); err != nil || string(got) != body {
			t.Errorf("blob of seq %d = %q, %v; want %q", seq, got, err, body)
		}
	}

	// A restarted server (nothing cached) reads them from cold storage.
	if err := p.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("stop: %v", err)
	}
	p = startServer(t, "-data", dir)
	historyBodies(t, p.addr, "alice", conv, sent)
}

// sendSome has alice send n messages to bob and returns their bodies by
// seq.
func sendSome(t *testing.T, addr string, n int) map[int64]string {
	t.Helper()
	alice := dialHello(t, addr, "alice", "d")
	defer alice.ws.Close()
	sent := map[int64]string{}
	for i := range n {
		id := fmt.Sprint("m", i)
		f, err := alice.request(&protocol.Send{Ref: protocol.Ref{ID: id}, Conv: "d:alice:bob", MsgID: id, Body: "body of " + id, ClientTS: 1}, id)
		if err != nil {
			t.Fatal(err)
		}
		sent[f.(*protocol.Sent).Seq] = "body of " + id
	}
	return sent
}

// The command and the server on an S3 bucket: the server reads back what
// the command moved there.
func TestArchiveCommandToS3(t *testing.T) {
	endpoint := testservices.S3(t)
	bucket := testservices.Prefix(t) + "archive"
	s3, err := blob.NewS3(t.Context(), blob.S3Options{Bucket: bucket, Endpoint: endpoint})
	if err != nil {
		t.Fatal(err)
	}
	if err := s3.EnsureBucket(t.Context()); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	flags := []string{"-data", dir, "-blob", "s3://" + bucket, "-s3-endpoint", endpoint}
	p := startServer(t, flags...)
	sent := sendSome(t, p.addr, 3)
	if moved := archiveRun(t, nil, append(flags, "-older-than", "1ms")...); moved != len(sent) {
		t.Fatalf("moved %d, want %d", moved, len(sent))
	}
	for seq, body := range sent {
		if got, err := s3.Get(t.Context(), blob.Key("d:alice:bob", seq)); err != nil || string(got) != body {
			t.Errorf("object of seq %d = %q, %v", seq, got, err)
		}
	}
	if err := p.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("stop: %v", err)
	}
	p = startServer(t, flags...)
	historyBodies(t, p.addr, "bob", "d:alice:bob", sent)
}

// A server started with -archive-older-than archives at start, and serves
// the moved bodies.
func TestServeArchivesPeriodically(t *testing.T) {
	dir := t.TempDir()
	p := startServer(t, "-data", dir)
	sent := sendSome(t, p.addr, 4)
	if err := p.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("stop: %v", err)
	}
	p = startServer(t, "-data", dir, "-archive-older-than", "1ms")
	line := regexp.MustCompile(`msg=archived .*moved=(\d+)`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := line.FindStringSubmatch(p.logs.String()); m != nil {
			if m[1] != strconv.Itoa(len(sent)) {
				t.Fatalf("the server archived %s, want %d", m[1], len(sent))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no archive run logged in 30s:\n%s", p.logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	historyBodies(t, p.addr, "bob", "d:alice:bob", sent)
	if moved := archiveRun(t, nil, "-data", dir, "-older-than", "1ms"); moved != 0 {
		t.Errorf("the command after the server's run moved %d, want 0", moved)
	}
}

func TestArchiveCommandErrors(t *testing.T) {
	empty := t.TempDir()
	for _, args := range [][]string{
		{"archive", "-data", empty},                        // no -older-than
		{"archive", "-data", empty, "-older-than", "-3d"},  // negative
		{"archive", "-data", empty, "-older-than", "soon"}, // not a duration
		{"archive", "-data", empty, "-older-than", "90d"},  // no database there
		{"archive", "-data", empty, "-older-than", "90d", "extra"},
		{"archive", "-data", empty, "-older-than", "90d", "-blob", "s3://"},
	} {
		if _, errOut, code := runCommand(t, nil, args...); code == 0 || errOut == "" {
			t.Errorf("%v: exit %d, stderr %q: want a failure with a message", args, code, errOut)
		}
	}
}

func TestParseAge(t *testing.T) {
	for in, want := range map[string]string{"90d": "2160h0m0s", "1d": "24h0m0s", "0d": "0s", "36h": "36h0m0s", "1ms": "1ms"} {
		if d, err := parseAge(in); err != nil || d.String() != want {
			t.Errorf("parseAge(%q) = %v, %v; want %s", in, d, err, want)
		}
	}
	for _, bad := range []string{"", "d", "1.5d", "-d", "x1d", "99999999999999d"} {
		if d, err := parseAge(bad); err == nil {
			t.Errorf("parseAge(%q) = %v, want an error", bad, d)
		}
	}
}
