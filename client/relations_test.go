package client

import (
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/imcore/im/internal/fakeserver"
	"github.com/imcore/im/protocol"
)

// The relation tests run against scripted servers: the server side of
// replies, edits, deletions and reactions comes later, and what a server
// sends is scripted here as PROTOCOL.md says it.

const team = "g:team"

// teamSession is the session a scripted server syncs for alice's group.
func teamSession() protocol.Session {
	return protocol.Session{Conv: team, Kind: "group", Title: "team", Members: []string{"alice", "bob", "carol"}, ActiveTS: 1, Ticks: protocol.Ticks{}}
}

// entry is relation entry seq of conv from from: kind on ref, with body.
func entry(conv string, seq int64, from, kind string, ref int64, body string) protocol.Message {
	m := chatMsg(conv, seq, from)
	m.Kind, m.RefSeq, m.Body = kind, ref, body
	return m
}

// sendsOf returns the send frames the server received, in order.
func sendsOf(srv *fakeserver.Server) []*protocol.Send {
	var out []*protocol.Send
	for _, f := range srv.Frames("send") {
		out = append(out, f.(*protocol.Send))
	}
	return out
}

// An edit, a reaction and deletions made offline, one of them of a
// message still in the outbox, are sent after a restart and a reconnect:
// once each, in the order they were made, each naming its target's seq.
// Meanwhile the chat shows them at once.
func TestRelationsMadeOfflineAreSentOnceInOrderAfterARestart(t *testing.T) {
	const dm = "d:alice:bob"
	srv := fakeserver.Start(t, fakeserver.Options{})
	alice := newProfile(t, srv.URL, "alice", "").startOnline()
	g, err := alice.client.Send(dm, "g")
	if err != nil {
		t.Fatal(err)
	}
	alice.waitOutboxEmpty()

	alice.net.refuse.Store(true)
	alice.net.cut()
	alice.waitFor("offline", func() bool { return alice.client.Conn().State == Offline })
	must := func(_ Message, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(alice.client.Edit(dm, g.MsgID, "go"))
	must(alice.client.React(dm, g.MsgID, "👍"))
	lo, err := alice.client.Send(dm, "lo group 🎉")
	must(lo, err)
	must(alice.client.DeleteForEveryone(dm, lo.MsgID))
	must(alice.client.DeleteForEveryone(dm, g.MsgID))
	msgs := alice.messages(dm)
	if len(msgs) != 2 || !msgs[0].Deleted || msgs[0].Body != "" || !msgs[1].Deleted || !msgs[1].Outbox {
		t.Fatalf("offline, the chat shows %+v; want both messages deleted, no relation lines", msgs)
	}

	path := alice.path
	alice.close()
	alice = newProfile(t, srv.URL, "alice", path).start()
	alice.waitOutboxEmpty()

	type sent struct {
		kind      string
		ref       int64
		body      string
		sentTimes int
	}
	var got []sent
	index := map[string]int{}
	for _, s := range sendsOf(srv) {
		if i, ok := index[s.MsgID]; ok {
			got[i].sentTimes++
			continue
		}
		index[s.MsgID] = len(got)
		got = append(got, sent{s.Kind, s.RefSeq, s.Body, 1})
	}
	want := []sent{
		{"", 0, "g", 1},
		{protocol.KindEdit, 1, "go", 1},
		{protocol.KindReaction, 1, "👍", 1},
		{"", 0, "lo group 🎉", 1},
		{protocol.KindDelete, 4, "", 1},
		{protocol.KindDelete, 1, "", 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the server received\n%+v\nwant\n%+v", got, want)
	}
	msgs = alice.messages(dm)
	if len(msgs) != 2 || msgs[0].Seq != 1 || !msgs[0].Deleted || msgs[1].Seq != 4 || !msgs[1].Deleted {
		t.Fatalf("after the reconnect the chat shows %+v", msgs)
	}
	for _, q := range []string{"group", "go"} {
		if found, _ := alice.client.SearchMessages("", q, 10); len(found) != 0 {
			t.Fatalf("search %q finds deleted text: %+v", q, found)
		}
	}
}

// Relation entries pushed by the server apply to their targets; only a
// reaction to the user's own message notifies, and none counts as unread.
func TestPushedRelationsApplyAndOnlyReactionsToOwnNotify(t *testing.T) {
	srv := fakeserver.Start(t, fakeserver.Options{Handle: func(c *fakeserver.Conn, f protocol.Frame) bool {
		if s, ok := f.(*protocol.Sync); ok {
			c.Push(&protocol.Sessions{Ref: s.Ref, Sessions: []protocol.Session{teamSession()}, Cursor: 1})
			return true
		}
		return false
	}})
	alice := newProfile(t, srv.URL, "alice", "").start()
	alice.waitFor("the group's session", func() bool { _, ok := alice.session(team); return ok })
	push := func(ms ...protocol.Message) {
		for _, m := range ms {
			srv.Conn(1).Push(&protocol.MsgPush{Msg: m})
		}
	}
	incoming := func(seq int64) Incoming {
		t.Helper()
		return alice.waitEvent("the notice of message "+itoa(seq), func(e Event) bool {
			in, ok := e.(Incoming)
			return ok && in.Last.Seq == seq
		}).(Incoming)
	}

	hello := chatMsg(team, 1, "alice")
	hello.Body = "hello"
	typo := chatMsg(team, 2, "bob")
	typo.Body = "tpyo"
	push(hello, typo)
	if in := incoming(2); in.Count != 1 {
		t.Fatalf("bob's message notified as %+v", in)
	}

	// Bob edits and deletes his message, carol reacts to it: the next
	// notice is carol's message alone.
	push(entry(team, 3, "bob", protocol.KindEdit, 2, "typo"), entry(team, 4, "carol", protocol.KindReaction, 2, "😂"),
		entry(team, 5, "bob", protocol.KindDelete, 2, ""), chatMsg(team, 6, "carol"))
	if in := incoming(6); in.Count != 1 || in.ReactedTo != nil {
		t.Fatalf("after an edit, a reaction to bob and a deletion, the notice is %+v; want carol's message alone", in)
	}
	msgs := alice.messages(team)
	if len(msgs) != 3 || !msgs[1].Deleted || msgs[1].Body != "" || msgs[1].EditedTS == 0 {
		t.Fatalf("chat = %+v; want hello, bob's deleted message, carol's", msgs)
	}
	if s, _ := alice.session(team); s.UnreadCount != 2 || s.WriteSeq != 6 || s.LastMsg == nil || s.LastMsg.Seq != 6 {
		t.Fatalf("session = %+v; want 2 unread (bob's, carol's), write_seq 6, last message 6", s)
	}

	// Bob reacts to alice's message: that notifies, saying to which.
	push(entry(team, 7, "bob", protocol.KindReaction, 1, "🎉"))
	in := incoming(7)
	if in.Count != 1 || in.ReactedTo == nil || in.ReactedTo.Seq != 1 || in.ReactedTo.Body != "hello" || in.Last.Body != "🎉" {
		t.Fatalf("the reaction to alice notified as %+v", in)
	}
	if got := alice.messages(team)[0].ReactionList(); !reflect.DeepEqual(got, []protocol.Reaction{{Body: "🎉", Users: []string{"bob"}}}) {
		t.Fatalf("reactions on hello = %+v", got)
	}
	// Taking it back notifies nobody.
	push(entry(team, 8, "bob", protocol.KindReaction, 1, ""), chatMsg(team, 9, "carol"))
	if in := incoming(9); in.Count != 1 {
		t.Fatalf("after the reaction was taken back the notice is %+v", in)
	}
	if got := alice.messages(team)[0].ReactionList(); got != nil {
		t.Fatalf("reactions on hello after the removal = %+v", got)
	}
	if s, _ := alice.session(team); s.UnreadCount != 3 {
		t.Fatalf("unread = %d, want 3 (the reactions are not unread)", s.UnreadCount)
	}
}

// A device that gets relation entries before their target (pending
// replay), then the target as it stands and older entries by gap fill,
// shows the target as it stands, after a restart too.
func TestGapFillAfterPendingRelationsShowsTheTargetAsItStands(t *testing.T) {
	target := chatMsg(team, 1, "bob")
	target.Body, target.EditedTS = "v3", 1005
	target.SetReactions([]protocol.Reaction{{Body: "🎉", Users: []string{"carol"}}, {Body: "👍", Users: []string{"bob"}}})
	history := []protocol.Message{target,
		entry(team, 2, "bob", protocol.KindEdit, 1, "v2"),
		entry(team, 3, "carol", protocol.KindReaction, 1, "🎉"),
		entry(team, 4, "bob", protocol.KindReaction, 1, "👍"),
		entry(team, 5, "bob", protocol.KindEdit, 1, "v3"),
	}
	srv := fakeserver.Start(t, fakeserver.Options{
		OnOpen: func(c *fakeserver.Conn) {
			if c.N() == 1 {
				c.Push(&protocol.MsgPush{Msg: history[3]})
				c.Push(&protocol.MsgPush{Msg: history[4]})
			}
		},
		Handle: func(c *fakeserver.Conn, f protocol.Frame) bool {
			switch f := f.(type) {
			case *protocol.Sync:
				s := teamSession()
				s.WriteSeq = 5
				c.Push(&protocol.Sessions{Ref: f.Ref, Sessions: []protocol.Session{s}, Cursor: 1})
				return true
			case *protocol.History:
				c.Push(&protocol.Messages{Ref: f.Ref, Conv: team, Messages: history})
				return true
			}
			return false
		},
	})
	alice := newProfile(t, srv.URL, "alice", "").start()
	alice.waitFor("the target", func() bool { return len(alice.messages(team)) == 1 && len(heldSeqs(alice, team)) == 1 })
	alice.waitFor("the whole history", func() bool {
		synced, _ := alice.store.SyncedSeq(team)
		return synced == 5
	})
	check := func(when string) {
		t.Helper()
		msgs := alice.messages(team)
		want := []protocol.Reaction{{Body: "🎉", Users: []string{"carol"}}, {Body: "👍", Users: []string{"bob"}}}
		if len(msgs) != 1 || msgs[0].Body != "v3" || msgs[0].EditedTS != 1005 || !reflect.DeepEqual(msgs[0].ReactionList(), want) {
			t.Fatalf("%s: chat = %+v, reactions %+v", when, msgs, msgs[0].ReactionList())
		}
	}
	check("after the gap fill")
	path := alice.path
	alice.close()
	alice = newProfile(t, srv.URL, "alice", path)
	check("after a restart")
}

// An edit the server refuses is undone in the chat and said; nothing
// comes back to the input.
func TestRefusedEditIsUndone(t *testing.T) {
	const dm = "d:alice:bob"
	srv := fakeserver.Start(t, fakeserver.Options{Handle: func(c *fakeserver.Conn, f protocol.Frame) bool {
		if s, ok := f.(*protocol.Send); ok && s.Kind == protocol.KindEdit {
			c.Push(&protocol.ErrorFrame{Ref: s.Ref, Code: protocol.CodeInvalid, Message: "too late to edit"})
			return true
		}
		return false
	}})
	alice := newProfile(t, srv.URL, "alice", "").startOnline()
	m, err := alice.client.Send(dm, "helo")
	if err != nil {
		t.Fatal(err)
	}
	alice.waitOutboxEmpty()
	if _, err := alice.client.Edit(dm, m.MsgID, "hello"); err != nil {
		t.Fatal(err)
	}
	ev := alice.waitEvent("the refusal", func(e Event) bool {
		_, refused := e.(SendRefused)
		if refused {
			t.Fatal("a refused edit gave its text back as a message")
		}
		_, ok := e.(ErrorEvent)
		return ok
	}).(ErrorEvent)
	if ev.Err == nil || !strings.Contains(ev.Err.Error(), "edit in "+dm+" refused") || !strings.Contains(ev.Err.Error(), "too late to edit") {
		t.Fatalf("error = %v; want it to say the edit was refused, and why", ev.Err)
	}
	alice.waitOutboxEmpty()
	if msgs := alice.messages(dm); len(msgs) != 1 || msgs[0].Body != "helo" || msgs[0].EditedTS != 0 {
		t.Fatalf("after the refusal the chat shows %+v", msgs)
	}
}

// A reaction to a message the server then refuses is never sent.
func TestRelationToARefusedMessageIsDropped(t *testing.T) {
	const dm = "d:alice:bob"
	srv := fakeserver.Start(t, fakeserver.Options{Handle: func(c *fakeserver.Conn, f protocol.Frame) bool {
		if s, ok := f.(*protocol.Send); ok && s.Kind == "" {
			c.Push(&protocol.ErrorFrame{Ref: s.Ref, Code: protocol.CodeForbidden, Message: "not a member"})
			return true
		}
		return false
	}})
	alice := newProfile(t, srv.URL, "alice", "")
	m, err := alice.client.Send(dm, "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.client.React(dm, m.MsgID, "👍"); err != nil {
		t.Fatal(err)
	}
	alice.start()
	alice.waitOutboxEmpty()
	for _, s := range sendsOf(srv) {
		if s.Kind != "" {
			t.Fatalf("sent %+v for a message never stored", s)
		}
	}
	if msgs := alice.messages(dm); len(msgs) != 0 {
		t.Fatalf("chat = %+v", msgs)
	}
}

func TestRelationsTheServerWouldRefuseAreRefusedAtOnce(t *testing.T) {
	const dm = "d:alice:bob"
	alice := newProfile(t, "ws://127.0.0.1:1/ws", "alice", "")
	sys := chatMsg(dm, 3, "bob")
	sys.Kind = protocol.KindSystem
	gone := chatMsg(dm, 4, "alice")
	gone.Deleted, gone.Body = true, ""
	if _, err := alice.store.PutMessages([]protocol.Message{chatMsg(dm, 1, "alice"), chatMsg(dm, 2, "bob"), sys, gone}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		do   func() (Message, error)
		want error
	}{
		{"edit bob's", func() (Message, error) { return alice.client.Edit(dm, "m2", "mine now") }, ErrNotOwn},
		{"delete bob's", func() (Message, error) { return alice.client.DeleteForEveryone(dm, "m2") }, ErrNotOwn},
		{"edit a system message", func() (Message, error) { return alice.client.Edit(dm, "m3", "x") }, ErrNotEditable},
		{"react to a system message", func() (Message, error) { return alice.client.React(dm, "m3", "👍") }, ErrNotEditable},
		{"delete a deleted one", func() (Message, error) { return alice.client.DeleteForEveryone(dm, "m4") }, ErrTargetDeleted},
		{"react to a deleted one", func() (Message, error) { return alice.client.React(dm, "m4", "👍") }, ErrTargetDeleted},
		{"edit one not held", func() (Message, error) { return alice.client.Edit(dm, "m9", "x") }, ErrNoTarget},
	} {
		if _, err := tc.do(); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := alice.client.React(dm, "m2", "thumbs up"); err == nil {
		t.Error("a reaction with a space was taken")
	}
	if _, err := alice.client.Edit(dm, "m1", ""); err == nil {
		t.Error("an edit to nothing was taken")
	}
	if box, _ := alice.store.Outbox(); len(box) != 0 {
		t.Fatalf("refused relations reached the outbox: %+v", box)
	}
	// A reply may answer a system message, and shows its target's seq.
	r, err := alice.client.Reply(dm, "m3", "welcome")
	if err != nil || r.ReplyTo != 3 {
		t.Fatalf("reply = %+v, %v", r.Message, err)
	}
}

// Concurrent relations from several goroutines keep the outbox's order
// and lose none.
func TestConcurrentReactionsAllReachTheOutbox(t *testing.T) {
	const dm = "d:alice:bob"
	alice := newProfile(t, "ws://127.0.0.1:1/ws", "alice", "")
	if _, err := alice.store.PutMessages([]protocol.Message{chatMsg(dm, 1, "bob")}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, r := range []string{"👍", "🎉", "😂", "👀"} {
		wg.Go(func() {
			if _, err := alice.client.React(dm, "m1", r); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	box, err := alice.store.Outbox()
	if err != nil || len(box) != 4 {
		t.Fatalf("outbox = %+v, %v", box, err)
	}
	for i := 1; i < len(box); i++ {
		if box[i].ClientTS <= box[i-1].ClientTS {
			t.Fatalf("outbox out of order: %+v", box)
		}
	}
	last := box[len(box)-1].Body
	if got := alice.messages(dm)[0].ReactionList(); len(got) != 1 || got[0].Body != last || got[0].Users[0] != "alice" {
		t.Fatalf("reactions = %+v, want alice's last, %s", got, last)
	}
}

func itoa(n int64) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
