package client

import (
	"reflect"
	"testing"

	"github.com/imcore/im/internal/fakeserver"
	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/servertest"
)

// An edit, a reaction and a deletion for everyone made while alice's
// client is offline reach the real server after the reconnect: each sent
// once, in the order made, taking consecutive seqs. Bob's device, closed
// during all three, shows both targets as they stand once it reconnects,
// and again after a restart on the same profile, before it connects and
// once it has.
func TestOfflineRelationsAgainstTheServer(t *testing.T) {
	env := servertest.Start(t)
	dm := conv(t, "alice", "bob")
	// A relay records every frame alice's client sends: the server answers
	// a repeated msg_id without storing it twice, so its history alone
	// cannot tell how many times a message went out.
	rec := fakeserver.Start(t, fakeserver.Options{Upstream: env.URL})
	alice := newProfile(t, rec.URL, "alice", "").start()
	bob := newProfile(t, env.URL, "bob", "").start()
	alice.waitOnline()
	bob.waitOnline()

	m, err := alice.client.Send(dm, "g")
	if err != nil {
		t.Fatal(err)
	}
	m2, err := alice.client.Send(dm, "lo group 🎉")
	if err != nil {
		t.Fatal(err)
	}
	alice.waitOutboxEmpty()
	bob.waitFor("alice's two messages", func() bool { return len(bob.messages(dm)) == 2 })

	// Bob's device goes away with its profile kept; then alice's client
	// loses the server.
	bobPath := bob.path
	bob.close()
	alice.net.refuse.Store(true)
	alice.net.cut()
	alice.waitFor("offline", func() bool { return alice.client.Conn().State == Offline })

	edit, err := alice.client.Edit(dm, m.MsgID, "go")
	if err != nil {
		t.Fatal(err)
	}
	react, err := alice.client.React(dm, m.MsgID, "👍")
	if err != nil {
		t.Fatal(err)
	}
	del, err := alice.client.DeleteForEveryone(dm, m2.MsgID)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rec.Frames("send")); n != 2 {
		t.Fatalf("offline, the server received %d sends, want the 2 made online", n)
	}

	alice.net.refuse.Store(false)
	alice.waitOutboxEmpty()

	// Exactly one send per relation entry, in the order made, after the
	// two messages.
	type sent struct {
		msgID, kind string
		ref         int64
		body        string
	}
	var got []sent
	for _, f := range rec.Frames("send") {
		s := f.(*protocol.Send)
		got = append(got, sent{s.MsgID, s.Kind, s.RefSeq, s.Body})
	}
	want := []sent{
		{m.MsgID, "", 0, "g"},
		{m2.MsgID, "", 0, "lo group 🎉"},
		{edit.MsgID, protocol.KindEdit, 1, "go"},
		{react.MsgID, protocol.KindReaction, 1, "👍"},
		{del.MsgID, protocol.KindDelete, 2, ""},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the server received\n%+v\nwant\n%+v", got, want)
	}

	// The server stores them once each, with consecutive seqs, and shows
	// the targets as they stand.
	history := serverHistory(t, env, dm)
	var ids []string
	for i, h := range history {
		if h.Seq != int64(i+1) {
			t.Fatalf("server history entry %d has seq %d: %+v", i, h.Seq, history)
		}
		ids = append(ids, h.MsgID)
	}
	if wantIDs := []string{m.MsgID, m2.MsgID, edit.MsgID, react.MsgID, del.MsgID}; !reflect.DeepEqual(ids, wantIDs) {
		t.Fatalf("server history holds %v, want %v", ids, wantIDs)
	}
	editTS := history[2].ServerTS
	wantReactions := []protocol.Reaction{{Body: "👍", Users: []string{"alice"}}}
	if s := history[0]; s.Body != "go" || s.EditedTS != editTS || s.Deleted || !reflect.DeepEqual(s.ReactionList(), wantReactions) {
		t.Fatalf("the server holds the edited message as %+v", s)
	}
	if s := history[1]; !s.Deleted || s.Body != "" {
		t.Fatalf("the server holds the deleted message as %+v", s)
	}

	// standing checks that bob's device shows both targets as they stand,
	// and n messages in all: relation entries are no lines of the chat.
	n := 2
	standing := func(p *profile) bool {
		msgs := p.messages(dm)
		if len(msgs) != n {
			return false
		}
		g, lo := msgs[0], msgs[1]
		return g.MsgID == m.MsgID && g.Seq == 1 && g.Body == "go" && g.EditedTS == editTS && !g.Deleted &&
			reflect.DeepEqual(g.ReactionList(), wantReactions) &&
			lo.MsgID == m2.MsgID && lo.Seq == 2 && lo.Deleted && lo.Body == ""
	}
	requireStanding := func(p *profile, when string) {
		t.Helper()
		if !standing(p) {
			t.Fatalf("%s, bob's device shows %+v", when, p.messages(dm))
		}
		if found, err := p.client.SearchMessages("", "group", 10); err != nil || len(found) != 0 {
			t.Fatalf("%s, bob's search finds deleted text: %+v, %v", when, found, err)
		}
	}

	bob = newProfile(t, env.URL, "bob", bobPath)
	if standing(bob) {
		t.Fatal("bob's device shows the relations before it reconnected")
	}
	bob.start()
	bob.waitFor("the targets as they stand", func() bool { return standing(bob) })
	requireStanding(bob, "after the reconnect")

	// A restart on the same profile: the state is the store's, before
	// the connection and after it.
	bob.close()
	bob = newProfile(t, env.URL, "bob", bobPath)
	requireStanding(bob, "after a restart, offline")
	bob.start()
	bob.waitOnline()
	// A message after the relations: once bob holds it, the connection
	// has delivered what it had to.
	after, err := alice.client.Send(dm, "after")
	if err != nil {
		t.Fatal(err)
	}
	bob.waitFor("alice's message after the restart", func() bool {
		msgs := bob.messages(dm)
		return len(msgs) == 3 && msgs[2].MsgID == after.MsgID && msgs[2].Seq == 6
	})
	n = 3
	requireStanding(bob, "after a restart, online")

	if n := len(rec.Frames("send")); n != len(want)+1 {
		t.Fatalf("the server received %d sends in the end, want %d", n, len(want)+1)
	}
}
