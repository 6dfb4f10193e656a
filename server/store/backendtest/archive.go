package backendtest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/blob"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/session"
)

// Server timestamps of the archive case: messages before archiveCutoff
// are old enough to move.
const (
	oldTS         = 1700000000000
	archiveCutoff = 1750000000000
	newTS         = 1763800000000
)

// testArchive checks store.Archiver, when the backend has it: bodies of
// messages older than the cutoff go to the blob store the backend was
// opened with, under blob.Key, and every read still returns them.
func testArchive(t *testing.T, b store.Backend, blobs blob.Store) {
	ar, ok := b.(store.Archiver)
	if !ok {
		t.Skip("the backend does not archive")
	}
	ctx := t.Context()
	bodies := map[int64]string{}
	for i, ts := range []int64{oldTS, oldTS + 1, newTS, newTS + 1} {
		m := msg(dAB, "alice", fmt.Sprint("m", i+1))
		m.ServerTS = ts
		res := appendOK(t, b, m)
		bodies[res.Msg.Seq] = m.Body
	}
	// bob's session shows the old seq 2, and a pending row asks to replay
	// from seq 1.
	apply(t, b, store.Derived{
		Sessions: []session.State{{User: "bob", Conv: dAB, WriteSeq: 4, ActiveTS: 10, LastConv: dAB, LastSeq: 2}},
		Pending:  []store.PendingRow{{User: "bob", Conv: dAB, FirstUndelivered: 1}},
	})

	var progressed []int
	moved, err := ar.Archive(ctx, archiveCutoff, func(n int) { progressed = append(progressed, n) })
	if err != nil {
		t.Fatalf("Archive: %v", err)
	}
	if moved != 2 {
		t.Fatalf("Archive moved %d, want the 2 older than the cutoff", moved)
	}
	for _, n := range progressed {
		if n < 0 || n > moved {
			t.Errorf("progress reported %d, outside [0, %d]", n, moved)
		}
	}
	for seq := int64(1); seq <= 2; seq++ {
		got, err := blobs.Get(ctx, blob.Key(dAB, seq))
		if err != nil || string(got) != bodies[seq] {
			t.Errorf("blob %s = %q, %v; want %q", blob.Key(dAB, seq), got, err, bodies[seq])
		}
	}
	for seq := int64(3); seq <= 4; seq++ {
		if _, err := blobs.Get(ctx, blob.Key(dAB, seq)); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("blob of the newer seq %d: %v, want ErrNotFound", seq, err)
		}
	}
	checkBodies(t, b, bodies, "after Archive")

	// Reads take archived bodies from the blob store, not from the log:
	// change the stored objects and the reads follow them.
	for seq := int64(1); seq <= 2; seq++ {
		bodies[seq] = "from cold storage " + bodies[seq]
		if err := blobs.Put(ctx, blob.Key(dAB, seq), []byte(bodies[seq])); err != nil {
			t.Fatal(err)
		}
	}
	checkBodies(t, b, bodies, "with the blobs changed")

	// A second run moves nothing; a retried send of an archived message
	// returns it whole.
	if again, err := ar.Archive(ctx, archiveCutoff, nil); err != nil || again != 0 {
		t.Errorf("second Archive = %d, %v; want 0", again, err)
	}
	dup := appendOK(t, b, protocol.Message{Conv: dAB, MsgID: "m1", From: "alice", Body: "retry", ServerTS: newTS})
	if !dup.Duplicate || dup.Msg.Seq != 1 || dup.Msg.Body != bodies[1] {
		t.Errorf("a repeat of an archived message = %+v, want seq 1 with body %q", dup, bodies[1])
	}
	if senders, err := b.Senders(ctx, dAB, 0, 4); err != nil || len(senders) != 1 || senders[0] != "alice" {
		t.Errorf("Senders after Archive = %v, %v", senders, err)
	}
}

// checkBodies checks every read of dAB's messages shows bodies: History
// (both directions, as a pending replay reads it), Message, and bob's
// session's last message (seq 2).
func checkBodies(t *testing.T, b store.Backend, bodies map[int64]string, when string) {
	t.Helper()
	ctx := t.Context()
	for _, q := range []store.HistoryQuery{{Limit: 10}, {After: true, AfterSeq: 0, Limit: 10}} {
		msgs, _, err := b.History(ctx, dAB, q)
		if err != nil || len(msgs) != len(bodies) {
			t.Fatalf("%s: History(%+v) = %d messages, %v; want %d", when, q, len(msgs), err, len(bodies))
		}
		for _, m := range msgs {
			if m.Body != bodies[m.Seq] || m.From != "alice" || m.MsgID == "" || m.ClientTS != 7 {
				t.Errorf("%s: History seq %d = %+v, want body %q", when, m.Seq, m, bodies[m.Seq])
			}
		}
	}
	for seq, body := range bodies {
		if m, err := b.Message(ctx, dAB, seq); err != nil || m.Body != body {
			t.Errorf("%s: Message(%d) = %+v, %v; want body %q", when, seq, m, err, body)
		}
	}
	pending, err := b.Pending(ctx, "bob")
	if err != nil || len(pending) != 1 || pending[0].FirstUndelivered != 1 {
		t.Fatalf("%s: Pending(bob) = %+v, %v", when, pending, err)
	}
	replay, _, err := b.History(ctx, dAB, store.HistoryQuery{After: true, AfterSeq: pending[0].FirstUndelivered - 1, Limit: 1})
	if err != nil || len(replay) != 1 || replay[0].Body != bodies[1] {
		t.Errorf("%s: the pending replay reads %+v, %v; want body %q", when, replay, err, bodies[1])
	}
	rows, _, err := b.SessionPage(ctx, "bob", store.SyncQuery{Conv: dAB, Limit: 1})
	if err != nil || len(rows) != 1 || rows[0].LastMsg == nil || rows[0].LastMsg.Body != bodies[2] {
		t.Errorf("%s: bob's session = %+v, %v; want its last message with body %q", when, rows, err, bodies[2])
	}
}
