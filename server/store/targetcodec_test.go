package store

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
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

// encodeV1 is the state in the first stored form, t1, which rows written
// before t2 still hold: each user's reaction, in user order, after the
// body.
func encodeV1(t TargetState) string {
	var b strings.Builder
	fmt.Fprintf(&b, "t1;%d;%d;%d;", t.EditSeq, t.EditedTS, map[bool]int{false: 0, true: 1}[t.Deleted]+map[bool]int{false: 0, true: 2}[t.Erased])
	for i, seq := range t.Edits {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, seq)
	}
	fmt.Fprintf(&b, ";%d:%s", len(t.Body), t.Body)
	rs := slices.Clone(t.Reactions)
	slices.SortStableFunc(rs, func(a, b StandingReaction) int { return strings.Compare(a.User, b.User) })
	for _, r := range rs {
		fmt.Fprintf(&b, ";%d:%s,%d,%d:%s", len(r.User), r.User, r.Seq, len(r.Body), r.Body)
	}
	return b.String()
}

// TestTargetStateFirstForm: a state stored in the first form, t1, reads
// as it was written, and is written back in the current form.
func TestTargetStateFirstForm(t *testing.T) {
	text := "t1;12;1763800000123;0;7,12;9:a;b,c:d 1;3:bob,15,0:;5:carol,13,4:👍;4:dave,20,3:1:;;4:erin,14,4:👍"
	want := TargetState{EditSeq: 12, Body: "a;b,c:d 1", EditedTS: 1763800000123, Edits: []int64{7, 12},
		Reactions: []StandingReaction{{User: "bob", Body: "", Seq: 15}, {User: "carol", Body: "👍", Seq: 13}, {User: "dave", Body: "1:;", Seq: 20}, {User: "erin", Body: "👍", Seq: 14}}}
	st, err := DecodeTargetState(text)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*st, want) {
		t.Fatalf("%q reads as %+v, want %+v", text, *st, want)
	}
	if old := encodeV1(want); old != text {
		t.Fatalf("the test's first form is %q, want %q", old, text)
	}
	again, err := st.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if wantText := "t2;12;1763800000123;0;7,12;9:a;b,c:d 1;2,3;4:👍,5:carol,13,4:erin,14;3:1:;,4:dave,20;0:,3:bob,15"; again != wantText {
		t.Fatalf("written back as %q, want %q", again, wantText)
	}
	var m protocol.Message
	if _, err := ShowStored(&m, text); err != nil {
		t.Fatal(err)
	}
	wantShown := []protocol.Reaction{{Body: "👍", Users: []string{"carol", "erin"}}, {Body: "1:;", Users: []string{"dave"}}}
	if m.Body != want.Body || m.EditedTS != want.EditedTS || !reflect.DeepEqual(m.ReactionList(), wantShown) {
		t.Fatalf("%q shows %+v (%v), want body %q, edited_ts %d, %v", text, m, m.ReactionList(), want.Body, want.EditedTS, wantShown)
	}
}

// TestTargetStateMalformed: a damaged state is an error, never a panic
// nor a wrong state.
func TestTargetStateMalformed(t *testing.T) {
	for _, text := range []string{"{}", "t1;", "t1;1;2;0;;5:abc", "t1;1;2;0;x;0:", "t1;1;2;0;;0:;3:bob,", "t1;1;2;0;;0:;-1:,1,0:", "t1;a;2;0;;0:",
		"t2;", "t2;1;2;0;;0:x", "t2;1;2;0;;0:;", "t2;1;2;0;;0:;1,1;1:x", "t2;1;2;0;;0:;1,1;1:x,1:a", "t2;1;2;0;;0:;1,1;1:x,1:a,",
		"t2;1;2;0;;0:;1,1;1:x,1:a,3;0:", "t2;1;2;0;;0:;0,0;0:,1:a,3;1:x,1:b,4", "t2;1;2;0;;0:;1,1;1:x,1:a,3,"} {
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
	f.Add("t2;3;99;1;2,3;2:ab;2,3;4:👍,3:bob,4,5:carol,9;2:🎉,4:dave,6;0:,3:eve,7")
	f.Add("t2;0;0;0;;0:")
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
		// A row stored in the first form shows the same.
		old := encodeV1(st)
		got = protocol.Message{Body: "stored", EditedTS: 1}
		shows, err = ShowStored(&got, old)
		if err != nil {
			t.Fatalf("%q: %v", old, err)
		}
		if !reflect.DeepEqual(got, want) || shows != st.ShowsStoredBody() {
			t.Fatalf("%q shows %+v %v (%s), want %+v %v", old, got, shows, fmt.Sprint(got.ReactionList()), want, st.ShowsStoredBody())
		}
	})
}

// BenchmarkShowStored is the read of one message of
// BenchmarkHistoryPage's page with relations (server package): edited
// once, reacted to by four users with two distinct reactions; stored in
// the current form and in the first.
func BenchmarkShowStored(b *testing.B) {
	st := TargetState{EditSeq: 1490, Body: "Message 0480 of the benchmark, a line of ordinary length", EditedTS: 1763800000123, Edits: []int64{1490},
		Reactions: []StandingReaction{{"carol", "👍", 1491}, {"dave", "❤️", 1492}, {"erin", "👍", 1493}, {"frank", "❤️", 1494}}}
	text, err := st.Encode()
	if err != nil {
		b.Fatal(err)
	}
	for _, form := range []struct{ name, text string }{{"t2", text}, {"t1", encodeV1(st)}} {
		b.Run(form.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m := protocol.Message{Body: "message 0480 of the benchmark, a line of ordinary length"}
				if _, err := ShowStored(&m, form.text); err != nil || len(m.ReactionList()) != 2 {
					b.Fatal(m, err)
				}
			}
		})
	}
}
