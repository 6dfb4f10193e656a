package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server"
	"github.com/imcore/im/server/servertest"
)

// The rules of PROTOCOL.md, "Replies, edits, deletions and reactions", one
// test each, over real WebSockets on the backend IM_TEST_STORE names.

// TestReplyCarriesReplyTo: a reply to an ordinary or a system message is
// stored with reply_to, pushed with it and shown with it in history.
func TestReplyCarriesReplyTo(t *testing.T) {
	env := servertest.Start(t)
	alice := env.Dial(t, "alice", "a")
	bob := env.Dial(t, "bob", "b")
	g := alice.CreateGroup(protocol.CreateGroup{Title: "team", Members: []string{"bob"}}) // 1
	bob.ExpectMsg(g.Conv)
	first := alice.SendMsg(g.Conv, "meet at 4?", bob) // 2
	reply := bob.Reply(g.Conv, "yes, 4pm", first.Seq, alice)
	if reply.ReplyTo != first.Seq || reply.Seq != first.Seq+1 {
		t.Fatalf("reply = %s, want reply_to %d at seq %d", servertest.JSON(reply), first.Seq, first.Seq+1)
	}
	toSystem := alice.Reply(g.Conv, "welcome", 1, bob)
	if got := alice.MessageAt(g.Conv, reply.Seq); servertest.JSON(got) != servertest.JSON(reply) {
		t.Fatalf("history shows %s, want %s", servertest.JSON(got), servertest.JSON(reply))
	}
	if got := bob.MessageAt(g.Conv, toSystem.Seq); got.ReplyTo != 1 {
		t.Fatalf("a reply to the system message shows reply_to %d, want 1", got.ReplyTo)
	}
}

// TestReplyToWhatIsNoMessageIsInvalid: reply_to naming no message of the
// conversation, or a relation entry, is invalid and takes no seq.
func TestReplyToWhatIsNoMessageIsInvalid(t *testing.T) {
	env := servertest.Start(t)
	alice := env.Dial(t, "alice", "a")
	bob := env.Dial(t, "bob", "b")
	conv := servertest.Direct("alice", "bob")
	m := alice.SendMsg(conv, "hi", bob)
	edit := alice.Relate(conv, protocol.KindEdit, m.Seq, "hello", bob)
	other := alice.SendMsg(servertest.Direct("alice", "carol"), "elsewhere")
	for _, replyTo := range []int64{edit.Seq, 99, other.Seq + 5} {
		alice.RequestError(&protocol.Send{Conv: conv, MsgID: "r" + env.ID(), Body: "x", ReplyTo: replyTo}, protocol.CodeInvalid)
	}
	if newest := alice.NewestSeq(conv); newest != edit.Seq {
		t.Fatalf("newest seq %d after refused replies, want %d: a refusal takes no seq", newest, edit.Seq)
	}
	servertest.WantQuiet(bob)
}

// TestEditBySender: the sender edits its message; everyone is pushed the
// edit entry, and history shows the target with the latest edit's body
// and edited_ts, and the entries with their own bodies.
func TestEditBySender(t *testing.T) {
	env := servertest.Start(t)
	alice := env.Dial(t, "alice", "a")
	bob := env.Dial(t, "bob", "b")
	conv := servertest.Direct("alice", "bob")
	m := alice.SendMsg(conv, "helo", bob)
	first := alice.Relate(conv, protocol.KindEdit, m.Seq, "hello", bob)
	second := alice.Relate(conv, protocol.KindEdit, m.Seq, "hello there", bob)
	got := bob.MessageAt(conv, m.Seq)
	if got.Body != "hello there" || got.EditedTS != second.ServerTS || got.Deleted {
		t.Fatalf("target after two edits = %s, want the second's body and edited_ts %d", servertest.JSON(got), second.ServerTS)
	}
	page := bob.WantHistory(servertest.After(conv, 0), false, m.Seq, first.Seq, second.Seq)
	if page[1].Body != "hello" || page[1].Kind != protocol.KindEdit || page[1].RefSeq != m.Seq {
		t.Fatalf("the first edit entry in history = %s", servertest.JSON(page[1]))
	}
}

// TestEditAndDeleteOfAnothersMessageForbidden: only the sender edits or
// deletes; a non-member is forbidden whatever the kind.
func TestEditAndDeleteOfAnothersMessageForbidden(t *testing.T) {
	env := servertest.Start(t)
	alice := env.Dial(t, "alice", "a")
	bob := env.Dial(t, "bob", "b")
	dave := env.Dial(t, "dave", "d")
	g := alice.CreateGroup(protocol.CreateGroup{Title: "team", Members: []string{"bob"}})
	m := alice.SendMsg(g.Conv, "mine")
	bob.RelateError(g.Conv, protocol.KindEdit, m.Seq, "yours", protocol.CodeForbidden)
	bob.RelateError(g.Conv, protocol.KindDelete, m.Seq, "", protocol.CodeForbidden)
	dave.RelateError(g.Conv, protocol.KindReaction, m.Seq, "👍", protocol.CodeForbidden)
	if got := alice.MessageAt(g.Conv, m.Seq); got.Body != "mine" || got.EditedTS != 0 || got.Deleted {
		t.Fatalf("target after refused relations = %s", servertest.JSON(got))
	}
	if newest := alice.NewestSeq(g.Conv); newest != m.Seq {
		t.Fatalf("newest seq %d, want %d: refusals take no seq", newest, m.Seq)
	}
}

// TestRelationToWrongTargetInvalid: a ref naming no message, a system
// message, a relation entry or a deleted message is invalid for every
// kind, the sender's own message included.
func TestRelationToWrongTargetInvalid(t *testing.T) {
	env := servertest.Start(t)
	alice := env.Dial(t, "alice", "a")
	g := alice.CreateGroup(protocol.CreateGroup{Title: "team", Members: []string{"bob"}}) // 1: system
	m := alice.SendMsg(g.Conv, "one")
	edit := alice.Relate(g.Conv, protocol.KindEdit, m.Seq, "uno")
	gone := alice.SendMsg(g.Conv, "two")
	del := alice.Relate(g.Conv, protocol.KindDelete, gone.Seq, "")
	for _, ref := range []int64{1, edit.Seq, del.Seq, gone.Seq, 99} {
		alice.RelateError(g.Conv, protocol.KindEdit, ref, "x", protocol.CodeInvalid)
		alice.RelateError(g.Conv, protocol.KindDelete, ref, "", protocol.CodeInvalid)
		alice.RelateError(g.Conv, protocol.KindReaction, ref, "👍", protocol.CodeInvalid)
	}
	if newest := alice.NewestSeq(g.Conv); newest != del.Seq {
		t.Fatalf("newest seq %d, want %d: refusals take no seq", newest, del.Seq)
	}
}

// TestDeleteForEveryone: a deletion empties the target and its edits'
// bodies in history; a reply to it keeps its reply_to; the deleted
// message takes no more relations.
func TestDeleteForEveryone(t *testing.T) {
	env := servertest.Start(t)
	alice := env.Dial(t, "alice", "a")
	bob := env.Dial(t, "bob", "b")
	conv := servertest.Direct("alice", "bob")
	m := alice.SendMsg(conv, "g", bob)
	edit := alice.Relate(conv, protocol.KindEdit, m.Seq, "lo group", bob)
	reply := bob.Reply(conv, "what?", m.Seq, alice)
	bob.Relate(conv, protocol.KindReaction, m.Seq, "😕", alice)
	del := alice.Relate(conv, protocol.KindDelete, m.Seq, "", bob)
	page := bob.WantHistory(servertest.After(conv, 0), false, m.Seq, edit.Seq, reply.Seq, del.Seq-1, del.Seq)
	if got := page[0]; !got.Deleted || got.Body != "" || got.EditedTS != 0 {
		t.Fatalf("deleted target in history = %s, want deleted with an empty body", servertest.JSON(got))
	}
	if got := page[1]; got.Body != "" || got.Kind != protocol.KindEdit {
		t.Fatalf("its edit in history = %s, want its body erased", servertest.JSON(got))
	}
	if got := page[2]; got.ReplyTo != m.Seq || got.Body != "what?" {
		t.Fatalf("the reply in history = %s, want it whole with reply_to %d", servertest.JSON(got), m.Seq)
	}
	bob.RelateError(conv, protocol.KindReaction, m.Seq, "👍", protocol.CodeInvalid)
	alice.RelateError(conv, protocol.KindEdit, m.Seq, "again", protocol.CodeInvalid)
	alice.RelateError(conv, protocol.KindDelete, m.Seq, "", protocol.CodeInvalid)
}

// TestReactionsAggregate: any member reacts, one's own message included;
// a new reaction replaces the user's old one, an empty one removes it;
// the aggregate lists each reaction standing by the seq of its oldest
// giver, givers in order, and is absent when none stands.
func TestReactionsAggregate(t *testing.T) {
	env := servertest.Start(t)
	alice := env.Dial(t, "alice", "a")
	bob := env.Dial(t, "bob", "b")
	carol := env.Dial(t, "carol", "c")
	g := alice.CreateGroup(protocol.CreateGroup{Title: "team", Members: []string{"bob", "carol"}})
	m := alice.SendMsg(g.Conv, "shipped")
	want := func(what string, rs ...protocol.Reaction) {
		t.Helper()
		got := carol.MessageAt(g.Conv, m.Seq)
		if servertest.JSON(got.ReactionList()) != servertest.JSON(rs) || got.Body != "shipped" {
			t.Fatalf("%s: target = %s, want reactions %s", what, servertest.JSON(got), servertest.JSON(rs))
		}
	}
	r := func(body string, users ...string) protocol.Reaction {
		return protocol.Reaction{Body: body, Users: users}
	}
	bob.Relate(g.Conv, protocol.KindReaction, m.Seq, "👍")
	carol.Relate(g.Conv, protocol.KindReaction, m.Seq, "🎉")
	alice.Relate(g.Conv, protocol.KindReaction, m.Seq, "👍")
	want("three reactions", r("👍", "bob", "alice"), r("🎉", "carol"))
	bob.Relate(g.Conv, protocol.KindReaction, m.Seq, "🎉")
	want("bob's replaced", r("🎉", "carol", "bob"), r("👍", "alice"))
	carol.Relate(g.Conv, protocol.KindReaction, m.Seq, "")
	want("carol's removed", r("👍", "alice"), r("🎉", "bob"))
	carol.RelateError(g.Conv, protocol.KindReaction, m.Seq, "two words", protocol.CodeInvalid)
	alice.Relate(g.Conv, protocol.KindReaction, m.Seq, "")
	bob.Relate(g.Conv, protocol.KindReaction, m.Seq, "")
	want("all removed")
}

// TestRelationsInSessions: relation entries are not unread, never the
// last message, and do not move write_ts; they move active_ts of every
// member; the last message shows as it stands, edited and then deleted
// (still unread: it stays as a placeholder); sending one reads.
func TestRelationsInSessions(t *testing.T) {
	env := servertest.Start(t)
	alice := env.Dial(t, "alice", "a")
	bob := env.Dial(t, "bob", "b")
	conv := servertest.Direct("alice", "bob")
	bob.SendMsg(conv, "hey", alice)
	m := alice.SendMsg(conv, "helo", bob)
	before := sessionOf(t, bob, conv)
	if before.UnreadCount != 1 || before.LastMsg == nil || before.LastMsg.Seq != m.Seq {
		t.Fatalf("bob's session = %s, want 1 unread, last %d", servertest.JSON(before), m.Seq)
	}

	edit := alice.Relate(conv, protocol.KindEdit, m.Seq, "hello", bob)
	after := sessionOf(t, bob, conv)
	if after.UnreadCount != 1 || after.WriteTS != before.WriteTS || after.ActiveTS <= before.ActiveTS || after.WriteSeq != edit.Seq {
		t.Fatalf("bob's session after the edit = %s, want unread 1, write_ts kept, active_ts moved, write_seq %d (was %s)",
			servertest.JSON(after), edit.Seq, servertest.JSON(before))
	}
	if l := after.LastMsg; l == nil || l.Seq != m.Seq || l.Body != "hello" || l.EditedTS != edit.ServerTS {
		t.Fatalf("bob's last_msg after the edit = %s, want %d as edited", servertest.JSON(after.LastMsg), m.Seq)
	}

	aliceBefore := sessionOf(t, alice, conv)
	react := bob.Relate(conv, protocol.KindReaction, m.Seq, "👍", alice)
	aliceAfter := sessionOf(t, alice, conv)
	if aliceAfter.UnreadCount != 0 || aliceAfter.WriteTS != aliceBefore.WriteTS || aliceAfter.ActiveTS <= aliceBefore.ActiveTS {
		t.Fatalf("alice's session after bob's reaction = %s, want nothing unread, write_ts kept, active_ts moved", servertest.JSON(aliceAfter))
	}
	if l := aliceAfter.LastMsg; l == nil || l.Seq != m.Seq || servertest.JSON(l.ReactionList()) != `[{"body":"👍","users":["bob"]}]` {
		t.Fatalf("alice's last_msg after the reaction = %s", servertest.JSON(l))
	}
	if got := sessionOf(t, bob, conv); got.ReadSeq != react.Seq || got.UnreadCount != 0 {
		t.Fatalf("bob's session after his reaction = %s, want read up to %d: sending reads", servertest.JSON(got), react.Seq)
	}

	typo := alice.SendMsg(conv, "tpyo", bob)
	alice.Relate(conv, protocol.KindDelete, typo.Seq, "", bob)
	deleted := sessionOf(t, bob, conv)
	if l := deleted.LastMsg; l == nil || l.Seq != typo.Seq || !l.Deleted || l.Body != "" {
		t.Fatalf("bob's last_msg after the deletion = %s, want %d deleted", servertest.JSON(l), typo.Seq)
	}
	_, page := bob.SyncAll("")
	if deleted.UnreadCount != 1 || page.TotalUnread != 1 {
		t.Fatalf("bob's unread after the deletion = %d (total %d), want 1: a deleted message stays unread as a placeholder", deleted.UnreadCount, page.TotalUnread)
	}
}

// TestRelationRepeatIsIdempotent: a relation entry sent again with its
// msg_id is answered with its first seq and changes nothing, even once
// its target no longer allows it (a deletion repeated).
func TestRelationRepeatIsIdempotent(t *testing.T) {
	env := servertest.Start(t)
	alice := env.Dial(t, "alice", "a")
	bob := env.Dial(t, "bob", "b")
	conv := servertest.Direct("alice", "bob")
	m := alice.SendMsg(conv, "oops", bob)
	for _, f := range []protocol.Send{
		{Conv: conv, MsgID: "react-1", Kind: protocol.KindReaction, RefSeq: m.Seq, Body: "👍"},
		{Conv: conv, MsgID: "del-1", Kind: protocol.KindDelete, RefSeq: m.Seq},
	} {
		first := alice.RequestOK(&f).(*protocol.Sent)
		bob.ExpectMsg(conv)
		again := f
		again.ID = ""
		repeat, ok := alice.RequestOK(&again).(*protocol.Sent)
		if !ok || repeat.Seq != first.Seq || repeat.ServerTS != first.ServerTS {
			t.Fatalf("%s repeated: answered %s, want seq %d again", f.Kind, servertest.JSON(repeat), first.Seq)
		}
	}
	if newest := alice.NewestSeq(conv); newest != m.Seq+2 {
		t.Fatalf("newest seq %d, want %d: repeats take no seq", newest, m.Seq+2)
	}
	servertest.WantQuiet(bob)
}

// TestEditWindow: past the edit window a message can be neither edited
// nor deleted (invalid, saying so); reactions are not bounded.
func TestEditWindow(t *testing.T) {
	clock := servertest.NewClock()
	env := servertest.Start(t, clock.Use, func(c *server.Config) { c.EditWindow = time.Hour })
	alice := env.Dial(t, "alice", "a")
	conv := servertest.Direct("alice", "bob")
	m := alice.SendMsg(conv, "old news")
	clock.Advance(59 * time.Minute)
	alice.Relate(conv, protocol.KindEdit, m.Seq, "still news")
	clock.Advance(2 * time.Minute)
	e := alice.RelateError(conv, protocol.KindEdit, m.Seq, "too late", protocol.CodeInvalid)
	if !strings.Contains(e.Message, "too old") || !strings.Contains(e.Message, "1h") {
		t.Fatalf("edit past the window answered %q, want it to say the message is too old and the window", e.Message)
	}
	alice.RelateError(conv, protocol.KindDelete, m.Seq, "", protocol.CodeInvalid)
	clock.Advance(24 * time.Hour)
	alice.Relate(conv, protocol.KindReaction, m.Seq, "👍")
}

// TestRelationsReachOfflineDevice: a device offline while a message was
// edited, reacted to and another deleted is replayed the targets as they
// stand with the entries, and history agrees.
func TestRelationsReachOfflineDevice(t *testing.T) {
	env := servertest.Start(t)
	alice := env.Dial(t, "alice", "a")
	conv := servertest.Direct("alice", "bob")
	m := alice.SendMsg(conv, "helo")
	gone := alice.SendMsg(conv, "secret")
	alice.Relate(conv, protocol.KindEdit, m.Seq, "hello")
	alice.Relate(conv, protocol.KindReaction, m.Seq, "👋")
	del := alice.Relate(conv, protocol.KindDelete, gone.Seq, "")

	bob := env.Dial(t, "bob", "b")
	replayed := bob.ExpectSeqs(conv, "alice", m.Seq, del.Seq)
	if got := replayed[0]; got.Body != "hello" || got.EditedTS == 0 || servertest.JSON(got.ReactionList()) != `[{"body":"👋","users":["alice"]}]` {
		t.Fatalf("replayed target = %s, want it edited with alice's reaction", servertest.JSON(got))
	}
	if got := replayed[1]; !got.Deleted || got.Body != "" {
		t.Fatalf("replayed deleted message = %s, want deleted and empty", servertest.JSON(got))
	}
	history := bob.WantHistory(servertest.After(conv, 0), false, servertest.SeqRange(m.Seq, del.Seq)...)
	if servertest.JSON(history) != servertest.JSON(replayed) {
		t.Fatalf("history %s differs from the replay %s", servertest.JSON(history), servertest.JSON(replayed))
	}
}

// sessionOf returns c's session of conv, failing when there is none.
func sessionOf(t *testing.T, c *servertest.Client, conv string) protocol.Session {
	t.Helper()
	all, _ := c.SyncAll("")
	s, ok := all[conv]
	if !ok {
		t.Fatalf("%s has no session of %s", c.User, conv)
	}
	return s
}

// TestRelationToMessageBeforeJoiningInvalid: a member added to a group
// cannot reply to or react to what came before it joined: for it, that
// is no message of the conversation.
func TestRelationToMessageBeforeJoiningInvalid(t *testing.T) {
	env := servertest.Start(t)
	alice := env.Dial(t, "alice", "a")
	carol := env.Dial(t, "carol", "c")
	g := alice.CreateGroup(protocol.CreateGroup{Title: "team", Members: []string{"bob"}})
	before := alice.SendMsg(g.Conv, "before carol")
	alice.GroupOp(protocol.GroupOp{Conv: g.Conv, Op: protocol.GroupAdd, Users: []string{"carol"}})
	after := alice.SendMsg(g.Conv, "after carol")
	carol.RelateError(g.Conv, protocol.KindReaction, before.Seq, "👍", protocol.CodeInvalid)
	carol.RequestError(&protocol.Send{Conv: g.Conv, MsgID: "r" + env.ID(), Body: "?", ReplyTo: before.Seq}, protocol.CodeInvalid)
	carol.Relate(g.Conv, protocol.KindReaction, after.Seq, "👍")
	carol.Reply(g.Conv, "hi all", after.Seq-1) // the message that added her
}

// TestRelationMovesGatewayShowingTarget: when an edit changes the message
// a sub-business gateway shows as its last one, the gateway moves
// (active_ts, not write_ts) and shows it as it stands.
func TestRelationMovesGatewayShowingTarget(t *testing.T) {
	env := servertest.Start(t)
	if err := env.Server.Store().SetAccount(t.Context(), "shop", "", "shopbiz"); err != nil {
		t.Fatal(err)
	}
	const gw, conv = "biz:shopbiz", "d:bob:shop"
	shop := env.Dial(t, "shop", "a")
	bob := env.Dial(t, "bob", "b")
	m := shop.SendMsg(conv, "50% off", bob)
	before := sessionOf(t, bob, gw)
	edit := shop.Relate(conv, protocol.KindEdit, m.Seq, "60% off", bob)
	after := sessionOf(t, bob, gw)
	if after.ActiveTS <= before.ActiveTS || after.WriteTS != before.WriteTS || after.UnreadCount != 1 {
		t.Fatalf("gateway after the edit %s, want active_ts moved, write_ts kept, unread 1 (was %s)", servertest.JSON(after), servertest.JSON(before))
	}
	if l := after.LastMsg; l == nil || l.Seq != m.Seq || l.Body != "60% off" || l.EditedTS != edit.ServerTS {
		t.Fatalf("gateway last_msg %s, want %d as edited", servertest.JSON(l), m.Seq)
	}
}
