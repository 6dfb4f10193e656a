package localstore

import (
	"reflect"
	"testing"

	"github.com/imcore/im/protocol"
)

// rel is relation entry seq of conv from from: kind on ref, with body.
func rel(seq int64, from, kind string, ref int64, body string) protocol.Message {
	return protocol.Message{Conv: conv, Seq: seq, MsgID: "r" + itoa(seq), From: from, Kind: kind, RefSeq: ref,
		Body: body, ClientTS: seq, ServerTS: 1000 + seq}
}

// shown returns the messages of conv as a chat shows them.
func shown(t *testing.T, s *Store) []Message {
	t.Helper()
	msgs, err := s.Messages(conv, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// only returns the one message a chat shows, failing otherwise.
func only(t *testing.T, s *Store) Message {
	t.Helper()
	msgs := shown(t, s)
	if len(msgs) != 1 {
		t.Fatalf("the chat shows %d messages, want the target alone: %+v", len(msgs), msgs)
	}
	return msgs[0]
}

func TestEditsApplyToTheTargetInSeqOrder(t *testing.T) {
	s, _ := openTemp(t)
	mustPut(t, s, msg(conv, 1, "bob"))
	mustPut(t, s, rel(3, "bob", protocol.KindEdit, 1, "second fix"))
	mustPut(t, s, rel(2, "bob", protocol.KindEdit, 1, "first fix")) // arrives late
	mustPut(t, s, rel(4, "alice", protocol.KindEdit, 1, "not hers to edit"))
	m := only(t, s)
	if m.Body != "second fix" || m.EditedTS != 1003 || m.Deleted {
		t.Fatalf("target = %+v, want the latest edit (seq 3) and its server_ts", m.Message)
	}
}

func TestDeletionErasesTheTargetAndItsEdits(t *testing.T) {
	s, _ := openTemp(t)
	target := msg(conv, 1, "bob")
	target.Body = "I accidentally sent this"
	mustPut(t, s, target, rel(2, "bob", protocol.KindEdit, 1, "an edit to hide too"), rel(3, "bob", protocol.KindReaction, 1, "👍"))
	mustPut(t, s, rel(4, "bob", protocol.KindDelete, 1, ""))
	m := only(t, s)
	if !m.Deleted || m.Body != "" || m.EditedTS != 1002 {
		t.Fatalf("target = %+v, want deleted with an empty body", m.Message)
	}
	requireNoText(t, s, "accidentally", "hide too")
	for _, q := range []string{"accidentally", "hide", "ac"} {
		if found, err := s.SearchMessages("", q, 10); err != nil || len(found) != 0 {
			t.Fatalf("search %q after the deletion = %+v, %v", q, found, err)
		}
	}
	// An edit that arrives after the deletion leaves no text either.
	mustPut(t, s, rel(5, "bob", protocol.KindEdit, 1, "late edit text"))
	requireNoText(t, s, "late edit")
	if m := only(t, s); !m.Deleted || m.Body != "" {
		t.Fatalf("after a late edit: %+v", m.Message)
	}
}

// requireNoText fails if any stored message row holds one of texts.
func requireNoText(t *testing.T, s *Store, texts ...string) {
	t.Helper()
	for _, text := range texts {
		var n int
		if err := s.r.QueryRow(`SELECT count(*) FROM messages WHERE body LIKE ? OR base LIKE ?`, "%"+text+"%", "%"+text+"%").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("%d message rows still hold %q", n, text)
		}
	}
}

func TestReactionsAggregateOnePerUser(t *testing.T) {
	entries := []protocol.Message{
		rel(2, "bob", protocol.KindReaction, 1, "👍"),
		rel(3, "carol", protocol.KindReaction, 1, "🎉"),
		rel(4, "dave", protocol.KindReaction, 1, "👍"),
		rel(5, "bob", protocol.KindReaction, 1, "🎉"),  // replaces his 👍
		rel(6, "carol", protocol.KindReaction, 1, ""), // removes hers
		rel(7, "erin", protocol.KindReaction, 1, "👍"),
		rel(8, "alice", protocol.KindReaction, 1, "🎉"),
	}
	want := []protocol.Reaction{{Body: "👍", Users: []string{"dave", "erin"}}, {Body: "🎉", Users: []string{"bob", "alice"}}}
	for _, order := range [][]int{{0, 1, 2, 3, 4, 5, 6}, {6, 5, 4, 3, 2, 1, 0}, {3, 0, 5, 1, 6, 4, 2}} {
		s, _ := openTemp(t)
		mustPut(t, s, msg(conv, 1, "alice"))
		for _, i := range order {
			mustPut(t, s, entries[i])
		}
		if got := only(t, s).ReactionList(); !reflect.DeepEqual(got, want) {
			t.Fatalf("arrival order %v: reactions %+v, want %+v", order, got, want)
		}
	}
}

func TestRelationsArrivingBeforeTheirTargetApplyWhenItComes(t *testing.T) {
	s, _ := openTemp(t)
	mustPut(t, s, rel(2, "bob", protocol.KindEdit, 1, "edited"), rel(3, "alice", protocol.KindReaction, 1, "🎉"))
	if msgs := shown(t, s); len(msgs) != 0 {
		t.Fatalf("relation entries show as lines: %+v", msgs)
	}
	mustPut(t, s, msg(conv, 1, "bob"))
	m := only(t, s)
	if m.Body != "edited" || m.EditedTS != 1002 || !reflect.DeepEqual(m.ReactionList(), []protocol.Reaction{{Body: "🎉", Users: []string{"alice"}}}) {
		t.Fatalf("target = %+v", m.Message)
	}
}

func TestTargetFromTheServerIsStoredAsItStands(t *testing.T) {
	s, _ := openTemp(t)
	standing := msg(conv, 1, "bob")
	standing.Body, standing.EditedTS = "as edited on the server", 1500
	standing.SetReactions([]protocol.Reaction{{Body: "👍", Users: []string{"carol", "dave"}}})
	gone := msg(conv, 2, "bob")
	gone.Body, gone.Deleted = "", true
	mustPut(t, s, standing, gone)
	msgs := shown(t, s)
	if len(msgs) != 2 || msgs[0].Body != "as edited on the server" || msgs[0].EditedTS != 1500 ||
		len(msgs[0].ReactionList()) != 1 || !msgs[1].Deleted {
		t.Fatalf("messages = %+v", msgs)
	}
	// A reaction given after the server's copy applies on top of it; an
	// edit older than the one it shows changes nothing.
	mustPut(t, s, rel(3, "erin", protocol.KindReaction, 1, "👍"), rel(4, "dave", protocol.KindReaction, 1, "🎉"))
	mustPut(t, s, protocol.Message{Conv: conv, Seq: 5, MsgID: "old-edit", From: "bob", Kind: protocol.KindEdit, RefSeq: 1, Body: "older", ServerTS: 1200})
	m := shown(t, s)[0]
	want := []protocol.Reaction{{Body: "👍", Users: []string{"carol", "erin"}}, {Body: "🎉", Users: []string{"dave"}}}
	if m.Body != "as edited on the server" || m.EditedTS != 1500 || !reflect.DeepEqual(m.ReactionList(), want) {
		t.Fatalf("target = %+v, reactions %+v; want %+v", m.Message, m.ReactionList(), want)
	}
}

func TestSearchFollowsEdits(t *testing.T) {
	s, _ := openTemp(t)
	target := msg(conv, 1, "bob")
	target.Body = "lunch at noon"
	mustPut(t, s, target, rel(2, "bob", protocol.KindEdit, 1, "dinner at eight"), rel(3, "carol", protocol.KindReaction, 1, "yum"))
	if found, _ := s.SearchMessages(conv, "lunch", 10); len(found) != 0 {
		t.Fatalf("the text before the edit is still found: %+v", found)
	}
	found, err := s.SearchMessages(conv, "dinner", 10)
	if err != nil || len(found) != 1 || found[0].Seq != 1 || found[0].EditedTS == 0 {
		t.Fatalf("search for the edited text = %+v, %v; want the target, edited", found, err)
	}
	if found, _ := s.SearchMessages("", "yum", 10); len(found) != 0 {
		t.Fatalf("a reaction is found as a message: %+v", found)
	}
}

func TestOutboxRelationShowsAtOnceAndGoesWhenRefused(t *testing.T) {
	s, _ := openTemp(t)
	target := msg(conv, 1, "alice")
	target.Body = "helo"
	mustPut(t, s, target)
	edit := protocol.Message{Conv: conv, MsgID: "e1", From: "alice", Kind: protocol.KindEdit, RefSeq: 1, Body: "hello", ClientTS: 5000}
	if err := s.EnqueueRelated(edit, ""); err != nil {
		t.Fatal(err)
	}
	if m := only(t, s); m.Body != "hello" || m.EditedTS != 5000 {
		t.Fatalf("with the edit in the outbox: %+v", m.Message)
	}
	box, err := s.Outbox()
	if err != nil || len(box) != 1 || box[0].Kind != protocol.KindEdit || box[0].RefSeq != 1 || box[0].Body != "hello" {
		t.Fatalf("outbox = %+v, %v", box, err)
	}
	if err := s.DropOutbox(conv, "e1"); err != nil {
		t.Fatal(err)
	}
	if m := only(t, s); m.Body != "helo" || m.EditedTS != 0 {
		t.Fatalf("after the refusal: %+v, want the text as sent", m.Message)
	}

	// A deletion in the outbox hides the text, and erases it once stored.
	del := protocol.Message{Conv: conv, MsgID: "d1", From: "alice", Kind: protocol.KindDelete, RefSeq: 1, ClientTS: 5001}
	if err := s.EnqueueRelated(del, ""); err != nil {
		t.Fatal(err)
	}
	if m := only(t, s); !m.Deleted || m.Body != "" {
		t.Fatalf("with the deletion in the outbox: %+v", m.Message)
	}
	if found, _ := s.SearchMessages(conv, "helo", 10); len(found) != 0 {
		t.Fatalf("a message being deleted is found: %+v", found)
	}
	if _, err := s.ConfirmSent(conv, "d1", 2, 1002); err != nil {
		t.Fatal(err)
	}
	requireNoText(t, s, "helo")
}

func TestOutboxRelationToAnOutboxTargetTakesItsSeq(t *testing.T) {
	s, path := openTemp(t)
	if err := s.EnqueueOutbox(protocol.Message{Conv: conv, MsgID: "t1", From: "alice", Body: "g", ClientTS: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.EnqueueRelated(protocol.Message{Conv: conv, MsgID: "x1", From: "alice", Kind: protocol.KindDelete, ClientTS: 2}, "t1"); err != nil {
		t.Fatal(err)
	}
	if err := s.EnqueueRelated(protocol.Message{Conv: conv, MsgID: "r1", From: "alice", Body: "sorry", ClientTS: 3}, "t1"); err != nil {
		t.Fatal(err)
	}
	msgs := shown(t, s)
	if len(msgs) != 2 || !msgs[0].Deleted || msgs[0].Body != "" || msgs[1].Body != "sorry" {
		t.Fatalf("chat = %+v, want the deleted message and the reply", msgs)
	}
	// After a restart, the outbox still names the target by msg_id.
	s.Close()
	s = mustOpenStore(t, path)
	box, err := s.Outbox()
	if err != nil || len(box) != 3 || box[1].Kind != protocol.KindDelete || box[1].RefSeq != 0 || box[1].TargetID != "t1" ||
		box[2].ReplyTo != 0 || box[2].TargetID != "t1" {
		t.Fatalf("outbox after a restart = %+v, %v", box, err)
	}
	if _, err := s.ConfirmSent(conv, "t1", 7, 1007); err != nil {
		t.Fatal(err)
	}
	box, _ = s.Outbox()
	if len(box) != 2 || box[0].RefSeq != 7 || box[1].ReplyTo != 7 {
		t.Fatalf("outbox after the target was stored = %+v, want ref and reply_to 7", box)
	}
	if _, err := s.ConfirmSent(conv, "x1", 8, 1008); err != nil {
		t.Fatal(err)
	}
	requireNoText(t, s, "g")
	if m := shown(t, s)[0]; m.Seq != 7 || !m.Deleted {
		t.Fatalf("target = %+v", m.Message)
	}
}

func mustOpenStore(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestRelationEntriesAreEventsForTheSession(t *testing.T) {
	s, _ := openTemp(t)
	first := msg(conv, 1, "bob")
	if err := s.PutSessions([]protocol.Session{{Conv: conv, Kind: "direct", Title: "bob", Members: []string{"alice", "bob"},
		ReadSeq: 1, WriteSeq: 1, ActiveTS: 10, WriteTS: 100, LastMsg: &first}}); err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, first)
	apply := func(ms ...protocol.Message) {
		t.Helper()
		mustPut(t, s, ms...)
		if _, err := s.ApplyMessages(ms, "alice"); err != nil {
			t.Fatal(err)
		}
	}
	apply(rel(2, "bob", protocol.KindReaction, 1, "👍"), rel(3, "bob", protocol.KindEdit, 1, "fixed"))
	sess, _, _ := s.Session(conv)
	if sess.WriteSeq != 3 || sess.UnreadCount != 0 || sess.WriteTS != 100 || sess.LastMsg == nil || sess.LastMsg.Seq != 1 ||
		sess.LastMsg.Body != "fixed" || sess.LastMsg.EditedTS != 1003 {
		t.Fatalf("session after a reaction and an edit = %+v, last %+v", sess, sess.LastMsg)
	}
	sys := protocol.Message{Conv: conv, Seq: 4, MsgID: "s4", From: "bob", Body: "bob changed something", Kind: protocol.KindSystem, ServerTS: 1004}
	apply(sys, msg(conv, 5, "bob"))
	if sess, _, _ = s.Session(conv); sess.UnreadCount != 1 || sess.WriteSeq != 5 || sess.LastMsg.Seq != 5 {
		t.Fatalf("after a system message and a message: unread %d, write_seq %d, last %+v; want 1, 5, seq 5", sess.UnreadCount, sess.WriteSeq, sess.LastMsg)
	}
	// A server that counts the events too, and names a relation entry as
	// the last message, is corrected by what the device holds.
	apply(rel(6, "bob", protocol.KindDelete, 5, ""))
	entry := rel(6, "bob", protocol.KindDelete, 5, "")
	if err := s.PutSessions([]protocol.Session{{Conv: conv, Kind: "direct", Title: "bob", Members: []string{"alice", "bob"},
		ReadSeq: 1, WriteSeq: 6, UnreadCount: 5, ActiveTS: 20, WriteTS: 1006, LastMsg: &entry}}); err != nil {
		t.Fatal(err)
	}
	sess, _, _ = s.Session(conv)
	if sess.UnreadCount != 1 || sess.LastMsg == nil || sess.LastMsg.Seq != 5 || !sess.LastMsg.Deleted {
		t.Fatalf("after the server's copy: unread %d, last %+v; want 1 and the deleted message 5", sess.UnreadCount, sess.LastMsg)
	}
	// The user's own reaction reads what came before it.
	apply(protocol.Message{Conv: conv, Seq: 7, MsgID: "own", From: "alice", Kind: protocol.KindReaction, RefSeq: 1, Body: "🎉", ServerTS: 1007})
	if sess, _, _ = s.Session(conv); sess.ReadSeq != 7 || sess.UnreadCount != 0 || sess.LastMsg.Seq != 5 {
		t.Fatalf("after her own reaction: %+v", sess)
	}
}

func TestOutboxRelationIsNotTheListsLastMessage(t *testing.T) {
	s, _ := openTemp(t)
	first := msg(conv, 1, "bob")
	if err := s.PutSessions([]protocol.Session{{Conv: conv, Kind: "direct", Title: "bob", Members: []string{"alice", "bob"},
		ReadSeq: 1, WriteSeq: 1, ActiveTS: 10, WriteTS: 100, Deleted: true, LastMsg: &first}}); err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, first)
	if err := s.EnqueueRelated(protocol.Message{Conv: conv, MsgID: "x", From: "alice", Kind: protocol.KindReaction, RefSeq: 1, Body: "👍", ClientTS: 5000}, ""); err != nil {
		t.Fatal(err)
	}
	sess, _, _ := s.Session(conv)
	if !sess.Deleted {
		t.Fatal("a reaction brought a deleted chat back")
	}
	if err := s.PutSessions([]protocol.Session{{Conv: conv, Kind: "direct", Title: "bob", Members: []string{"alice", "bob"},
		ReadSeq: 1, WriteSeq: 1, ActiveTS: 11, WriteTS: 100, LastMsg: &first}}); err != nil {
		t.Fatal(err)
	}
	list, err := s.Sessions("")
	if err != nil || len(list) != 1 || list[0].WriteTS != 100 || list[0].LastMsg.Seq != 1 {
		t.Fatalf("list = %+v, %v; want bob's chat unmoved, its last message seq 1", list, err)
	}
}

func TestMessagesAtAndMessage(t *testing.T) {
	s, _ := openTemp(t)
	mustPut(t, s, msg(conv, 1, "bob"), msg(conv, 2, "bob"), msg(conv, 3, "bob"))
	got, err := s.MessagesAt(conv, []int64{3, 1, 9})
	if err != nil || len(got) != 2 || got[0].Seq != 1 || got[1].Seq != 3 {
		t.Fatalf("MessagesAt = %+v, %v", got, err)
	}
	m, ok, err := s.Message(conv, "m2")
	if err != nil || !ok || m.Seq != 2 {
		t.Fatalf("Message = %+v, %v, %v", m, ok, err)
	}
	if _, ok, _ := s.Message(conv, "nope"); ok {
		t.Fatal("found a message never stored")
	}
}
