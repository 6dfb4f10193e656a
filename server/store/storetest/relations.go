package storetest

import (
	"errors"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// relationTests are the promises of replies and relation entries
// (PROTOCOL.md, "Replies, edits, deletions and reactions") that the store
// keeps: the target checked, a refusal changing nothing, the entry an
// event of the sessions.
var relationTests = []storeTest{
	{"RelationRefusedChangesNothing", testRelationRefusedChangesNothing},
	{"RelationIsSessionEvent", testRelationIsSessionEvent},
}

// relate appends a relation entry of kind from user on ref of dAB.
func relate(t *testing.T, s Engine, from, msgID, kind string, ref int64, body string) (store.AppendResult, error) {
	t.Helper()
	req := request(dAB, from, msgID)
	req.Msg.Kind, req.Msg.RefSeq, req.Msg.Body = kind, ref, body
	return s.Append(t.Context(), req)
}

// testRelationRefusedChangesNothing: an edit of another's message is a
// forbidden refusal, one of no message an invalid one; neither takes a
// seq, and the same send repeated once stored is answered as a repeat
// even when its target no longer allows it.
func testRelationRefusedChangesNothing(t *testing.T, s Engine) {
	target := send(t, s, dAB, alice, "m1").Msg
	var refusal *store.Refusal
	if _, err := relate(t, s, bob, "e1", protocol.KindEdit, target.Seq, "x"); !errors.As(err, &refusal) || refusal.Code != protocol.CodeForbidden {
		t.Fatalf("bob's edit of alice's message: %v, want a forbidden refusal", err)
	}
	if _, err := relate(t, s, alice, "e2", protocol.KindEdit, 99, "x"); !errors.As(err, &refusal) || refusal.Code != protocol.CodeInvalid {
		t.Fatalf("an edit of no message: %v, want an invalid refusal", err)
	}
	del, err := relate(t, s, alice, "d1", protocol.KindDelete, target.Seq, "")
	if err != nil || del.Msg.Seq != target.Seq+1 {
		t.Fatalf("alice's deletion: %+v, %v; want it at seq %d: refusals take no seq", del.Msg, err, target.Seq+1)
	}
	again, err := relate(t, s, alice, "d1", protocol.KindDelete, target.Seq, "")
	if err != nil || !again.Duplicate || again.Msg.Seq != del.Msg.Seq {
		t.Fatalf("the deletion repeated: %+v, %v; want a repeat of seq %d", again, err, del.Msg.Seq)
	}
}

// testRelationIsSessionEvent: a relation entry is not unread, not the
// last message and keeps write_ts, moves active_ts, and shows the last
// message as it stands.
func testRelationIsSessionEvent(t *testing.T, s Engine) {
	target := send(t, s, dAB, alice, "m1").Msg
	before := sessionOf(t, s, bob, dAB, "")
	edit, err := relate(t, s, alice, "e1", protocol.KindEdit, target.Seq, "edited")
	if err != nil {
		t.Fatal(err)
	}
	after := sessionOf(t, s, bob, dAB, "")
	if after.UnreadCount != 1 || after.WriteTS != before.WriteTS || after.ActiveTS <= before.ActiveTS || after.WriteSeq != edit.Msg.Seq {
		t.Errorf("bob's session after the edit = %+v, want unread 1, write_ts kept, active_ts moved (was %+v)", after, before)
	}
	if l := after.LastMsg; l == nil || l.Seq != target.Seq || l.Body != "edited" || l.EditedTS != edit.Msg.ServerTS {
		t.Errorf("bob's last_msg = %+v, want seq %d as edited", l, target.Seq)
	}
	checkTotal(t, s, bob, "", 1)
}
