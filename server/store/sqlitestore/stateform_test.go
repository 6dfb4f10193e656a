package sqlitestore

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// TestFirstFormStateRows: a row whose relation state was written in the
// first stored form (t1, before the reactions were kept aggregated) reads
// as it stands, and the next relation applied to it writes it back in
// the current form.
func TestFirstFormStateRows(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "im.db")
	const conv = "d:alice:bob"
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, protocol.Message{Conv: conv, MsgID: "m1", From: "alice", Body: "hello", ClientTS: 1, ServerTS: 1}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	// The state as the first form stored it: edited at seq 5, bob's 👍
	// (seq 3), carol's removed reaction (seq 6), dave's 🎉 (seq 4).
	const old = "t1;5;1763800000500;0;5;6:hello!;3:bob,3,4:👍;5:carol,6,0:;4:dave,4,4:🎉"
	db, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE messages SET state = ? WHERE conv = ? AND seq = 1`, old, conv); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s = openAt(t, path, Options{})
	show := func() protocol.Message {
		t.Helper()
		msgs, _, err := s.History(ctx, conv, store.HistoryQuery{Limit: 10})
		if err != nil || len(msgs) != 1 {
			t.Fatalf("history: %v, %v", msgs, err)
		}
		return msgs[0]
	}
	m := show()
	want := `[{👍 [bob]} {🎉 [dave]}]`
	if m.Body != "hello!" || m.EditedTS != 1763800000500 || fmtReactions(m) != want {
		t.Fatalf("a first-form row reads as %+v %s, want hello! edited at 1763800000500, %s", m, fmtReactions(m), want)
	}

	// Erin reacts: the state is rewritten, in the current form.
	if err := s.ApplyRelation(ctx, protocol.Message{Conv: conv, Seq: 7, MsgID: "r7", From: "erin", Kind: protocol.KindReaction, RefSeq: 1, Body: "👍", ServerTS: 7}); err != nil {
		t.Fatal(err)
	}
	var state string
	if err := s.r.QueryRow(`SELECT state FROM messages WHERE conv = ? AND seq = 1`, conv).Scan(&state); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(state, "t2;") {
		t.Fatalf("state after a relation: %q, want the current form", state)
	}
	m = show()
	want = `[{👍 [bob erin]} {🎉 [dave]}]`
	if m.Body != "hello!" || m.EditedTS != 1763800000500 || fmtReactions(m) != want {
		t.Fatalf("after a reaction: %+v %s, want hello! edited at 1763800000500, %s", m, fmtReactions(m), want)
	}
}

func fmtReactions(m protocol.Message) string {
	var b strings.Builder
	b.WriteString("[")
	for i, r := range m.ReactionList() {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString("{" + r.Body + " [" + strings.Join(r.Users, " ") + "]}")
	}
	return b.String() + "]"
}
