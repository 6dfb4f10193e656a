package localstore

import (
	"context"
	"database/sql"
	"io/fs"
	"path/filepath"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/imcore/im/internal/sqliteconn"
	"github.com/imcore/im/internal/sqlmigrate"
	"github.com/imcore/im/protocol"
)

func TestSearchMessages(t *testing.T) {
	s, _ := openTemp(t)
	put := func(c string, seq int64, body string) {
		t.Helper()
		m := msg(c, seq, "bob")
		m.Body = body
		mustPut(t, s, m)
	}
	put(conv, 1, "see you at the station")
	put(conv, 2, "the café on the corner")
	put(conv, 3, "Station closed, take the bus")
	put(conv, 4, `quotes "and" AND OR NOT * ( ) : ^`)
	put("d:alice:carol", 1, "station for carol")
	if err := s.EnqueueOutbox(protocol.Message{Conv: conv, MsgID: "o1", From: "alice", Body: "station in the outbox", ClientTS: 5}); err != nil {
		t.Fatal(err)
	}
	seqsOf := func(query string) []int64 {
		t.Helper()
		got, err := s.SearchMessages(conv, query, 10)
		if err != nil {
			t.Fatalf("search %q: %v", query, err)
		}
		return seqs(got)
	}
	for _, tc := range []struct {
		query string
		want  []int64
	}{
		{"station", []int64{3, 1}}, // newest first, any case; not carol's, not the outbox
		{"stat", []int64{3, 1}},    // a word's start
		{"cafe", []int64{2}},       // without accents
		{"station bus", []int64{3}},
		{`"and" OR (`, []int64{4}}, // the user's text is words, never syntax
		{"   ", nil},
		{"nothing here", nil},
	} {
		if got := seqsOf(tc.query); !slices.Equal(got, tc.want) {
			t.Errorf("search %q = %v, want %v", tc.query, got, tc.want)
		}
	}
}

// TestSearchFindsMessagesStoredBeforeTheIndex checks that the migration
// that adds the index indexes the messages a profile already holds.
func TestSearchFindsMessagesStoredBeforeTheIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", sqliteconn.DSN(path, false))
	if err != nil {
		t.Fatal(err)
	}
	before := fstest.MapFS{}
	entries, _ := fs.ReadDir(migrationFiles, "migrations")
	for _, e := range entries {
		if e.Name() < "0005" {
			body, _ := fs.ReadFile(migrationFiles, "migrations/"+e.Name())
			before["m/"+e.Name()] = &fstest.MapFile{Data: body}
		}
	}
	if err := sqlmigrate.Apply(context.Background(), db, before, "m"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO messages (conv, msg_id, seq, sender, body) VALUES (?, 'm1', 1, 'bob', 'an old message about trains')`, conv); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, err := s.SearchMessages(conv, "trains", 10); err != nil || len(got) != 1 || got[0].Seq != 1 {
		t.Fatalf("search after the migration = %v, %v", got, err)
	}
}
