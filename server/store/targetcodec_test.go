package store

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/imcore/im/protocol"
)

// TestTargetStateRoundTrip: every state reads back as written, strings
// holding the separators included.
func TestTargetStateRoundTrip(t *testing.T) {
	for _, st := range []TargetState{
		{},
		{Erased: true},
		{Deleted: true, Edits: []int64{4, 9}},
		{EditSeq: 12, Body: "a;b,c:d 12:x ;;", EditedTS: 1763800000123, Edits: []int64{7, 12},
			Reactions: []StandingReaction{{User: "al;ice", Body: "👍", Seq: 13}, {User: "bob", Body: "", Seq: 15}, {User: "c:3", Body: "1:;", Seq: 20}}},
	} {
		text, err := st.Encode()
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeTargetState(text)
		if err != nil {
			t.Fatalf("decode %q: %v", text, err)
		}
		if !reflect.DeepEqual(*back, st) {
			t.Fatalf("%q reads back as %+v, want %+v", text, *back, st)
		}
	}
}

// TestTargetStateMalformed: a damaged state is an error, never a panic
// nor a wrong state.
func TestTargetStateMalformed(t *testing.T) {
	for _, text := range []string{"{}", "t1;", "t1;1;2;0;;5:abc", "t1;1;2;0;x;0:", "t1;1;2;0;;0:;3:bob,", "t1;1;2;0;;0:;-1:,1,0:", "t1;a;2;0;;0:"} {
		if st, err := DecodeTargetState(text); err == nil {
			t.Errorf("%q decoded as %+v, want an error", text, st)
		}
	}
}

// FuzzTargetStateDecode: any text decodes to a state or an error, and a
// state decoded encodes to text that decodes to it again.
func FuzzTargetStateDecode(f *testing.F) {
	f.Add("t1;3;99;1;2,3;2:ab;3:bob,4,4:👍")
	f.Add("t1;0;0;0;;0:")
	f.Fuzz(func(t *testing.T, text string) {
		st, err := DecodeTargetState(text)
		if err != nil || st == nil {
			return
		}
		again, err := st.Encode()
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeTargetState(again)
		if err != nil || !reflect.DeepEqual(back, st) {
			t.Fatalf("%q → %+v → %q → %+v, %v", text, st, again, back, err)
		}
	})
}

// FuzzShowStored: reading a row's state in one pass shows the message as
// decoding the state and showing it does.
func FuzzShowStored(f *testing.F) {
	f.Add(int64(3), "edited", uint8(0), "bob", "👍", "carol", "🎉", "dave", "👍", int64(5), int64(4), int64(6))
	f.Add(int64(0), "", uint8(1), "a;b", "", "c", "x", "d", "", int64(1), int64(2), int64(3))
	f.Fuzz(func(t *testing.T, editSeq int64, body string, flags uint8, u1, b1, u2, b2, u3, b3 string, s1, s2, s3 int64) {
		st := TargetState{EditSeq: max(editSeq, 0), Body: body, EditedTS: 77, Deleted: flags&1 != 0, Erased: flags&2 != 0, Edits: []int64{1, 2}}
		for _, r := range []StandingReaction{{u1, b1, s1}, {u2, b2, s2}, {u3, b3, s3}} {
			if !slices.ContainsFunc(st.Reactions, func(x StandingReaction) bool { return x.User == r.User || x.Seq == r.Seq }) {
				st.Reactions = append(st.Reactions, r)
			}
		}
		text, err := st.Encode()
		if err != nil {
			t.Fatal(err)
		}
		want := protocol.Message{Body: "stored", EditedTS: 1}
		st.Show(&want)
		got := protocol.Message{Body: "stored", EditedTS: 1}
		shows, err := ShowStored(&got, text)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if !reflect.DeepEqual(got, want) || shows != st.ShowsStoredBody() {
			t.Fatalf("%q shows %+v %v (%s), want %+v %v", text, got, shows, fmt.Sprint(got.ReactionList()), want, st.ShowsStoredBody())
		}
	})
}
