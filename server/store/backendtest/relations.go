package backendtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/blob"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/session"
)

// relation is a relation entry of kind on ref from user.
func relation(user, id, kind string, ref int64, body string) protocol.Message {
	m := msg(dAB, user, id)
	m.Kind, m.RefSeq, m.Body = kind, ref, body
	return m
}

// messageAt reads the message at seq of dAB.
func messageAt(t *testing.T, b store.Backend, seq int64) protocol.Message {
	t.Helper()
	m, err := b.Message(t.Context(), dAB, seq)
	if err != nil {
		t.Fatalf("Message(%d): %v", seq, err)
	}
	return m
}

// testRepliesAndRelationsStored: reply_to, kind and ref are stored and
// read back; MessageSeq finds a message by its msg_id.
func testRepliesAndRelationsStored(t *testing.T, b store.Backend) {
	first := appendOK(t, b, msg(dAB, "alice", "m1")).Msg
	reply := msg(dAB, "bob", "m2")
	reply.ReplyTo = first.Seq
	reply = appendOK(t, b, reply).Msg
	react := appendOK(t, b, relation("bob", "m3", protocol.KindReaction, first.Seq, "👍")).Msg
	page, _, err := b.History(t.Context(), dAB, store.HistoryQuery{Limit: 10})
	if err != nil || len(page) != 3 {
		t.Fatalf("History: %d messages, %v", len(page), err)
	}
	if page[1].ReplyTo != first.Seq || page[2].Kind != protocol.KindReaction || page[2].RefSeq != first.Seq || page[2].Body != "👍" {
		t.Fatalf("history = %+v, want the reply's reply_to and the reaction's kind, ref and body", page)
	}
	if seq, err := b.MessageSeq(t.Context(), dAB, "m3"); err != nil || seq != react.Seq {
		t.Fatalf("MessageSeq(m3) = %d, %v; want %d", seq, err, react.Seq)
	}
	if _, err := b.MessageSeq(t.Context(), dAB, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("MessageSeq(nope): %v, want ErrNotFound", err)
	}
	if got := messageAt(t, b, reply.Seq); got.ReplyTo != first.Seq {
		t.Fatalf("Message(reply) = %+v, want reply_to %d", got, first.Seq)
	}
}

// testRelationsApplyToTarget: an appended relation entry is applied to
// its target: every read (History, Message, a session's last message)
// shows the target as it stands; an edit older than the one applied
// changes nothing; reactions aggregate by the seq of their oldest giver.
func testRelationsApplyToTarget(t *testing.T, b store.Backend) {
	target := appendOK(t, b, msg(dAB, "alice", "m1")).Msg
	e1 := appendOK(t, b, relation("alice", "e1", protocol.KindEdit, target.Seq, "first edit")).Msg
	e2 := appendOK(t, b, relation("alice", "e2", protocol.KindEdit, target.Seq, "second edit")).Msg
	appendOK(t, b, relation("bob", "r1", protocol.KindReaction, target.Seq, "👍"))
	appendOK(t, b, relation("alice", "r2", protocol.KindReaction, target.Seq, "🎉"))
	appendOK(t, b, relation("bob", "r3", protocol.KindReaction, target.Seq, "🎉"))
	// Applied again, out of order, as repair may: nothing changes.
	if err := b.ApplyRelation(t.Context(), e1); err != nil {
		t.Fatalf("ApplyRelation(e1) again: %v", err)
	}
	want := `[{"body":"🎉","users":["alice","bob"]}]`
	got := messageAt(t, b, target.Seq)
	if got.Body != "second edit" || got.EditedTS != e2.ServerTS || got.Deleted || jsonOf(got.ReactionList()) != want {
		t.Fatalf("target = %+v %s, want the second edit's body, edited_ts %d, reactions %s", got, jsonOf(got.ReactionList()), e2.ServerTS, want)
	}
	page, _, err := b.History(t.Context(), dAB, store.HistoryQuery{Limit: 1, BeforeSeq: target.Seq + 1})
	if err != nil || len(page) != 1 || jsonOf(page[0]) != jsonOf(got) {
		t.Fatalf("History shows %+v, %v; want %+v", page, err, got)
	}
	apply(t, b, store.Derived{Sessions: []session.State{{User: "bob", Conv: dAB, WriteSeq: target.Seq, ActiveTS: 10, LastConv: dAB, LastSeq: target.Seq}}})
	rows, _, err := b.SessionPage(t.Context(), "bob", store.SyncQuery{Limit: 10})
	if err != nil || len(rows) != 1 || rows[0].LastMsg == nil || jsonOf(*rows[0].LastMsg) != jsonOf(got) {
		t.Fatalf("bob's last message = %+v, %v; want %+v", rows, err, got)
	}
	if err := b.ApplyRelation(t.Context(), relation("bob", "x", protocol.KindReaction, 99, "👍")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ApplyRelation to no message: %v, want ErrNotFound", err)
	}
}

// testDeletionErases: a deletion empties the target's body and its
// edits' (in the log and, archived, in the blob store); the target reads
// deleted, its edits with empty bodies; applied again it changes nothing.
func testDeletionErases(t *testing.T, b store.Backend, blobs blob.Store) {
	ctx := t.Context()
	old := msg(dAB, "alice", "m1")
	old.Body, old.ServerTS = "secret original", oldTS
	target := appendOK(t, b, old).Msg
	edit := relation("alice", "e1", protocol.KindEdit, target.Seq, "secret edit")
	edit.ServerTS = oldTS + 1
	edit = appendOK(t, b, edit).Msg
	_, archives := b.(store.Archiver)
	if archives {
		if _, err := b.(store.Archiver).Archive(ctx, archiveCutoff, nil); err != nil {
			t.Fatalf("Archive: %v", err)
		}
	}
	del := appendOK(t, b, relation("alice", "d1", protocol.KindDelete, target.Seq, "")).Msg
	if err := b.ApplyRelation(ctx, del); err != nil {
		t.Fatalf("ApplyRelation(delete) again: %v", err)
	}
	if got := messageAt(t, b, target.Seq); !got.Deleted || got.Body != "" || got.EditedTS != 0 {
		t.Fatalf("deleted target = %+v, want deleted with an empty body", got)
	}
	if got := messageAt(t, b, edit.Seq); got.Body != "" || got.Kind != protocol.KindEdit {
		t.Fatalf("its edit = %+v, want its body erased", got)
	}
	if archives {
		for _, seq := range []int64{target.Seq, edit.Seq} {
			body, err := blobs.Get(ctx, blob.Key(dAB, seq))
			if err != nil || strings.Contains(string(body), "secret") {
				t.Fatalf("archived body of %d = %q, %v; want it erased", seq, body, err)
			}
		}
	}
}

// jsonOf is v as JSON, to compare messages (whose reactions are behind
// a pointer) by value.
func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}
