package protocol_test

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/imcore/im/protocol"
)

// TestRelationSpecExamples decodes the frames of PROTOCOL.md's section
// "Replies, edits, deletions and reactions", and a message object as it
// stands after relations.
func TestRelationSpecExamples(t *testing.T) {
	client := []struct {
		in   string
		want protocol.Send
	}{
		{`{"type":"send","id":"30","conv":"d:alice:bob","msg_id":"01K1","body":"yes, 4pm","reply_to":41}`,
			protocol.Send{Ref: protocol.Ref{ID: "30"}, Conv: "d:alice:bob", MsgID: "01K1", Body: "yes, 4pm", ReplyTo: 41}},
		{`{"type":"send","id":"31","conv":"d:alice:bob","msg_id":"01K2","kind":"edit","ref":42,"body":"hey there"}`,
			protocol.Send{Ref: protocol.Ref{ID: "31"}, Conv: "d:alice:bob", MsgID: "01K2", Kind: protocol.KindEdit, RefSeq: 42, Body: "hey there"}},
		{`{"type":"send","id":"32","conv":"d:alice:bob","msg_id":"01K3","kind":"delete","ref":42}`,
			protocol.Send{Ref: protocol.Ref{ID: "32"}, Conv: "d:alice:bob", MsgID: "01K3", Kind: protocol.KindDelete, RefSeq: 42}},
		{`{"type":"send","id":"33","conv":"d:alice:bob","msg_id":"01K4","kind":"reaction","ref":40,"body":"👍"}`,
			protocol.Send{Ref: protocol.Ref{ID: "33"}, Conv: "d:alice:bob", MsgID: "01K4", Kind: protocol.KindReaction, RefSeq: 40, Body: "👍"}},
	}
	for _, tt := range client {
		f, _, perr := protocol.DecodeClientFrame([]byte(tt.in))
		if perr != nil {
			t.Fatalf("%s: %v", tt.in, perr)
		}
		if got := *f.(*protocol.Send); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s\n got %+v\nwant %+v", tt.in, got, tt.want)
		}
		if perr := f.(*protocol.Send).ValidateRelation(protocol.DefaultLimits); perr != nil {
			t.Errorf("%s: ValidateRelation = %v", tt.in, perr)
		}
	}

	push := `{"type":"msg","msg":{"conv":"d:alice:bob","seq":44,"msg_id":"01K2","from":"alice","kind":"edit","ref":42,"body":"hey there","client_ts":1,"server_ts":2}}`
	f, _, perr := protocol.DecodeServerFrame([]byte(push))
	if perr != nil {
		t.Fatal(perr)
	}
	m := f.(*protocol.MsgPush).Msg
	if m.Kind != protocol.KindEdit || m.RefSeq != 42 || !m.IsRelation() {
		t.Errorf("pushed edit decoded as %+v", m)
	}

	standing := `{"type":"messages","id":"5","conv":"d:alice:bob","has_more":false,"messages":[
		{"conv":"d:alice:bob","seq":40,"msg_id":"a","from":"bob","body":"hey there","client_ts":1,"server_ts":2,"edited_ts":900,
		 "reactions":[{"body":"👍","users":["bob","carol"]},{"body":"🎉","users":["alice"]}]},
		{"conv":"d:alice:bob","seq":41,"msg_id":"b","from":"bob","body":"","client_ts":1,"server_ts":2,"deleted":true},
		{"conv":"d:alice:bob","seq":45,"msg_id":"c","from":"alice","body":"yes","client_ts":1,"server_ts":2,"reply_to":41}]}`
	f, _, perr = protocol.DecodeServerFrame([]byte(standing))
	if perr != nil {
		t.Fatal(perr)
	}
	msgs := f.(*protocol.Messages).Messages
	want := []protocol.Reaction{{Body: "👍", Users: []string{"bob", "carol"}}, {Body: "🎉", Users: []string{"alice"}}}
	if msgs[0].EditedTS != 900 || !reflect.DeepEqual(msgs[0].ReactionList(), want) || msgs[0].IsRelation() {
		t.Errorf("edited message with reactions decoded as %+v", msgs[0])
	}
	if !msgs[1].Deleted || msgs[1].Body != "" {
		t.Errorf("deleted message decoded as %+v", msgs[1])
	}
	if msgs[2].ReplyTo != 41 {
		t.Errorf("reply decoded as %+v", msgs[2])
	}
}

// A message that is neither a reply nor a relation, nor acted on, encodes
// exactly as before: none of the new fields appear.
func TestPlainMessageEncodesWithoutRelationFields(t *testing.T) {
	b := mustJSON(t, sampleMessage())
	for _, field := range []string{"reply_to", "ref", "edited_ts", "deleted", "reactions"} {
		if strings.Contains(string(b), `"`+field+`"`) {
			t.Errorf("a plain message carries %q: %s", field, b)
		}
	}
	send := protocol.MustEncode(&protocol.Send{Conv: "d:alice:bob", MsgID: "m", Body: "hi"})
	for _, field := range []string{"reply_to", "ref", "kind"} {
		if strings.Contains(string(send), `"`+field+`"`) {
			t.Errorf("a plain send carries %q: %s", field, send)
		}
	}
}

func TestReactionListAndSet(t *testing.T) {
	var m protocol.Message
	if m.ReactionList() != nil {
		t.Fatal("a message without reactions lists some")
	}
	m.SetReactions([]protocol.Reaction{{Body: "👍", Users: []string{"bob"}}})
	if l := m.ReactionList(); len(l) != 1 || l[0].Body != "👍" {
		t.Fatalf("ReactionList = %+v", l)
	}
	m.SetReactions(nil)
	if m.Reactions != nil {
		t.Fatal("SetReactions(nil) left the field set")
	}
	if strings.Contains(string(mustJSON(t, m)), "reactions") {
		t.Fatal("no reactions, yet the field is on the wire")
	}
}

func TestCheckReaction(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{"", true}, // removes
		{"👍", true},
		{"+1", true},
		{"👨‍👩‍👧", true},
		{"ok!", true},
		{strings.Repeat("a", 32), true},
		{strings.Repeat("a", 33), false},
		{strings.Repeat("😀", 8), true}, // 32 bytes
		{strings.Repeat("😀", 9), false},
		{"thumbs up", false},
		{" 👍", false},
		{"👍\n", false},
		{"a\tb", false},
		{"\u00a0", false}, // no-break space
		{"\u3000", false}, // ideographic space
		{"\x01", false},
		{"\x7f", false},
		{"\u0085", false}, // next line
		{"\xff", false},
		{"\xe2\x82", false},
	}
	for _, tt := range tests {
		perr := protocol.CheckReaction(tt.in)
		if (perr == nil) != tt.ok {
			t.Errorf("CheckReaction(%q) = %v, want ok=%v", tt.in, perr, tt.ok)
		}
		if perr != nil && perr.Code != protocol.CodeInvalid {
			t.Errorf("CheckReaction(%q) code %s, want invalid", tt.in, perr.Code)
		}
	}
}

func TestSendValidateRelation(t *testing.T) {
	base := func(mod func(*protocol.Send)) protocol.Send {
		s := protocol.Send{Conv: "d:alice:bob", MsgID: "m1", Body: "hi", ClientTS: 1}
		mod(&s)
		return s
	}
	tests := []struct {
		name string
		s    protocol.Send
		code protocol.Code // "" valid
	}{
		{"plain send", base(func(*protocol.Send) {}), ""},
		{"reply", base(func(s *protocol.Send) { s.ReplyTo = 41 }), ""},
		{"reply to a negative seq", base(func(s *protocol.Send) { s.ReplyTo = -1 }), protocol.CodeInvalid},
		{"reply with an empty body", base(func(s *protocol.Send) { s.ReplyTo = 41; s.Body = "" }), protocol.CodeInvalid},
		{"plain send too large", base(func(s *protocol.Send) { s.Body = strings.Repeat("a", 4097) }), protocol.CodeTooLarge},
		{"ref without a kind", base(func(s *protocol.Send) { s.RefSeq = 4 }), protocol.CodeInvalid},
		{"bad conv", base(func(s *protocol.Send) { s.Kind, s.RefSeq, s.Conv = protocol.KindEdit, 4, "biz:shop" }), protocol.CodeInvalid},
		{"bad msg_id", base(func(s *protocol.Send) { s.Kind, s.RefSeq, s.MsgID = protocol.KindEdit, 4, "" }), protocol.CodeInvalid},

		{"edit", base(func(s *protocol.Send) { s.Kind, s.RefSeq = protocol.KindEdit, 4 }), ""},
		{"edit without ref", base(func(s *protocol.Send) { s.Kind = protocol.KindEdit }), protocol.CodeInvalid},
		{"edit with a negative ref", base(func(s *protocol.Send) { s.Kind, s.RefSeq = protocol.KindEdit, -4 }), protocol.CodeInvalid},
		{"edit to an empty body", base(func(s *protocol.Send) { s.Kind, s.RefSeq, s.Body = protocol.KindEdit, 4, "" }), protocol.CodeInvalid},
		{"edit too large", base(func(s *protocol.Send) { s.Kind, s.RefSeq, s.Body = protocol.KindEdit, 4, strings.Repeat("a", 4097) }), protocol.CodeTooLarge},
		{"edit not UTF-8", base(func(s *protocol.Send) { s.Kind, s.RefSeq, s.Body = protocol.KindEdit, 4, "\xff" }), protocol.CodeInvalid},
		{"edit as a reply", base(func(s *protocol.Send) { s.Kind, s.RefSeq, s.ReplyTo = protocol.KindEdit, 4, 3 }), protocol.CodeInvalid},

		{"delete", base(func(s *protocol.Send) { s.Kind, s.RefSeq, s.Body = protocol.KindDelete, 4, "" }), ""},
		{"delete with a body", base(func(s *protocol.Send) { s.Kind, s.RefSeq = protocol.KindDelete, 4 }), protocol.CodeInvalid},
		{"delete without ref", base(func(s *protocol.Send) { s.Kind, s.Body = protocol.KindDelete, "" }), protocol.CodeInvalid},

		{"reaction", base(func(s *protocol.Send) { s.Kind, s.RefSeq, s.Body = protocol.KindReaction, 4, "👍" }), ""},
		{"reaction removed", base(func(s *protocol.Send) { s.Kind, s.RefSeq, s.Body = protocol.KindReaction, 4, "" }), ""},
		{"reaction with a space", base(func(s *protocol.Send) { s.Kind, s.RefSeq, s.Body = protocol.KindReaction, 4, "a b" }), protocol.CodeInvalid},
		{"reaction too long", base(func(s *protocol.Send) { s.Kind, s.RefSeq, s.Body = protocol.KindReaction, 4, strings.Repeat("x", 33) }), protocol.CodeInvalid},
		{"reaction without ref", base(func(s *protocol.Send) { s.Kind, s.Body = protocol.KindReaction, "👍" }), protocol.CodeInvalid},

		{"system from a client", base(func(s *protocol.Send) { s.Kind, s.RefSeq = protocol.KindSystem, 4 }), protocol.CodeInvalid},
		{"unknown kind", base(func(s *protocol.Send) { s.Kind, s.RefSeq = "poll", 4 }), protocol.CodeInvalid},
	}
	for _, tt := range tests {
		perr := tt.s.ValidateRelation(protocol.DefaultLimits)
		switch {
		case tt.code == "" && perr != nil:
			t.Errorf("%s: %v, want valid", tt.name, perr)
		case tt.code != "" && (perr == nil || perr.Code != tt.code):
			t.Errorf("%s: %v, want %s", tt.name, perr, tt.code)
		}
	}
}

// Validate, which a server that knows nothing of relations calls, is
// unchanged: a deletion's empty body fails it as any empty body does.
func TestSendValidateUnchangedByRelations(t *testing.T) {
	del := protocol.Send{Conv: "d:alice:bob", MsgID: "m1", Kind: protocol.KindDelete, RefSeq: 4}
	if perr := del.Validate(protocol.DefaultLimits); perr == nil || perr.Code != protocol.CodeInvalid {
		t.Errorf("Validate of a deletion = %v, want invalid (empty body)", perr)
	}
	edit := protocol.Send{Conv: "d:alice:bob", MsgID: "m1", Body: "new", Kind: protocol.KindEdit, RefSeq: 4}
	if perr := edit.Validate(protocol.DefaultLimits); perr != nil {
		t.Errorf("Validate of an edit = %v, want it judged as a send", perr)
	}
}

func TestEncodedLenWithRelations(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 2000 {
		m := randomMessage(rng, i)
		if got, want := m.EncodedLen(), len(mustJSON(t, m)); got != want {
			t.Fatalf("message %s: EncodedLen %d, JSON %d", mustJSON(t, m), got, want)
		}
		if bound := m.MaxEncodedLen(); bound < m.EncodedLen() {
			t.Fatalf("message %s: MaxEncodedLen %d, below EncodedLen %d", mustJSON(t, m), bound, m.EncodedLen())
		}
		s := protocol.Session{LastMsg: &m}
		if got, want := s.EncodedLen(), len(mustJSON(t, s)); got != want {
			t.Fatalf("session with %s: EncodedLen %d, JSON %d", mustJSON(t, m), got, want)
		}
	}
}
