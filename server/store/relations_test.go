package store

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/imcore/im/protocol"
)

func entry(seq int64, from, kind, body string) protocol.Message {
	return protocol.Message{Conv: "d:alice:bob", Seq: seq, From: from, Kind: kind, Body: body, RefSeq: 1, ServerTS: 1000 + seq}
}

// TestTargetStateConverges: entries applied in any order, some of them
// twice (as a repair after a crash may), leave one state: the newest
// edit, the deletion and its erasures, each user's newest reaction.
func TestTargetStateConverges(t *testing.T) {
	entries := []protocol.Message{
		entry(2, "alice", protocol.KindEdit, "first"),
		entry(3, "bob", protocol.KindReaction, "👍"),
		entry(4, "alice", protocol.KindEdit, "second"),
		entry(5, "carol", protocol.KindReaction, "🎉"),
		entry(6, "bob", protocol.KindReaction, "🎉"),
		entry(7, "carol", protocol.KindReaction, ""),
	}
	var want string
	for _, order := range [][]int{{0, 1, 2, 3, 4, 5}, {5, 4, 3, 2, 1, 0}, {2, 0, 0, 4, 1, 3, 5, 2, 4}} {
		var st TargetState
		for _, i := range order {
			st.Apply(entries[i])
		}
		m := protocol.Message{Body: "original"}
		st.Show(&m)
		if m.Body != "second" || m.EditedTS != 1004 || !slices.Equal(st.Edits, []int64{2, 4}) {
			t.Fatalf("order %v: %+v, edits %v; want the second edit", order, m, st.Edits)
		}
		got, _ := json.Marshal(m.ReactionList())
		if want == "" {
			want = string(got)
		}
		if string(got) != want || want != `[{"body":"🎉","users":["bob"]}]` {
			t.Fatalf("order %v: reactions %s, want bob's 🎉 alone", order, got)
		}
	}
}

// TestTargetStateDeletion: a deletion erases the target and its edits,
// shows the target deleted and empty, and makes a later-applied edit
// (an older one, repaired) erase itself and change nothing.
func TestTargetStateDeletion(t *testing.T) {
	var st TargetState
	st.Apply(entry(2, "alice", protocol.KindEdit, "secret"))
	change := st.Apply(entry(3, "alice", protocol.KindDelete, ""))
	if !change.Changed || !slices.Equal(change.Erase, []int64{1, 2}) {
		t.Fatalf("deletion: %+v, want the target and its edit erased", change)
	}
	late := st.Apply(entry(4, "alice", protocol.KindEdit, "late"))
	if late.Changed || !slices.Equal(late.Erase, []int64{4}) {
		t.Fatalf("an edit applied after the deletion: %+v, want it to erase itself only", late)
	}
	m := protocol.Message{Body: "original"}
	st.Show(&m)
	if !m.Deleted || m.Body != "" || m.EditedTS != 0 || st.ShowsStoredBody() {
		t.Fatalf("deleted target shows %+v", m)
	}
	text, err := st.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeTargetState(text)
	if err != nil || !back.Deleted || back.Body != "" {
		t.Fatalf("decoded %+v, %v", back, err)
	}
	if none, err := DecodeTargetState(""); none != nil || err != nil || !none.ShowsStoredBody() {
		t.Fatalf("no state: %+v, %v", none, err)
	}
}

// TestReactionOrder: entries by the seq of their oldest standing
// reaction, users by the seq of theirs.
func TestReactionOrder(t *testing.T) {
	var st TargetState
	for _, e := range []protocol.Message{
		entry(2, "zed", protocol.KindReaction, "👍"),
		entry(3, "amy", protocol.KindReaction, "🎉"),
		entry(4, "bob", protocol.KindReaction, "👍"),
		entry(5, "zed", protocol.KindReaction, "🎉"), // zed's 👍 goes: 👍's oldest is now bob's
	} {
		st.Apply(e)
	}
	got, _ := json.Marshal(st.ReactionList())
	if want := `[{"body":"🎉","users":["amy","zed"]},{"body":"👍","users":["bob"]}]`; string(got) != want {
		t.Fatalf("reactions %s, want %s", got, want)
	}
}
