package server_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server"
	"github.com/imcore/im/server/servertest"
)

// People: settings, blocks, presence, read receipts off and requests
// (PROTOCOL.md, "People: presence, settings, names and blocking"), end to
// end on the backend of the pass.

// settingsOf asks c's settings, changing the keys of change (nil: a read).
func settingsOf(c *servertest.Client, change map[string]any) protocol.UserSettings {
	c.T.Helper()
	f := &protocol.SettingsRequest{}
	if change != nil {
		raw, err := json.Marshal(change)
		if err != nil {
			c.T.Fatal(err)
		}
		f.Settings = jsontext.Value(raw)
	}
	got, ok := c.RequestOK(f).(*protocol.SettingsReply)
	if !ok {
		c.T.Fatalf("settings: not a settings answer")
	}
	return got.Settings
}

// presenceOf asks the presence of users (and watches them).
func presenceOf(c *servertest.Client, users ...string) []protocol.Presence {
	c.T.Helper()
	got, ok := c.RequestOK(&protocol.PresenceRequest{Users: users}).(*protocol.PresenceReply)
	if !ok {
		c.T.Fatalf("presence: not a presence answer")
	}
	return got.Users
}

func wantPresence(t *testing.T, what string, got []protocol.Presence, want ...protocol.Presence) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: presence %+v, want %+v", what, got, want)
	}
}

func TestSettingsAreReadChangedAndPushedToTheOtherDevices(t *testing.T) {
	env := servertest.Start(t)
	phone := env.Dial(t, "alice", "phone")
	laptop := env.Dial(t, "alice", "laptop")
	if got := settingsOf(phone, nil); !reflect.DeepEqual(got, protocol.DefaultSettings()) {
		t.Fatalf("a new user's settings = %+v, want the defaults", got)
	}
	got := settingsOf(phone, map[string]any{"last_seen": "nobody", "read_receipts": false, "name": "Alice Liddell"})
	want := protocol.UserSettings{LastSeen: "nobody", ReadReceipts: false, Name: "Alice Liddell", Blocked: []string{}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after a change: %+v, want %+v", got, want)
	}
	pushed := laptop.Expect("the settings pushed", servertest.OfType("settings")).(*protocol.SettingsReply)
	if pushed.ID != "" || !reflect.DeepEqual(pushed.Settings, want) {
		t.Errorf("pushed to the laptop: %+v, want %+v without id", pushed, want)
	}
	phone.ExpectNone("a settings push to the device that changed them", servertest.OfType("settings"))

	// Only the keys carried change.
	got = settingsOf(laptop, map[string]any{"name": ""})
	want.Name = ""
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after a change of the name alone: %+v, want %+v", got, want)
	}
	// A bad key or value is invalid and changes nothing.
	for _, bad := range []map[string]any{
		{"last_seen": "friends"}, {"read_receipts": "no"}, {"colour": "blue"}, {"blocked": []string{}},
		{"name": string(make([]rune, 65))}, {"name": "a\nb"}, {"name": "ok", "last_seen": 3},
	} {
		raw, _ := json.Marshal(bad)
		phone.RequestError(&protocol.SettingsRequest{Settings: jsontext.Value(raw)}, protocol.CodeInvalid)
	}
	if got := settingsOf(phone, nil); !reflect.DeepEqual(got, want) {
		t.Errorf("after refused changes: %+v, want %+v", got, want)
	}
}

func TestABlockRefusesSendsTypingAndAddsButNotGroups(t *testing.T) {
	env := servertest.Start(t)
	alice := env.Dial(t, "alice", "phone")
	mallory := env.Dial(t, "mallory", "phone")
	bob := env.Dial(t, "bob", "phone")
	const dm = "d:alice:mallory"
	mallory.Send(dm, "m1", "hello")
	group := bob.RequestOK(&protocol.CreateGroup{Title: "team", Members: []string{"alice", "mallory"}, Key: "k1"}).(*protocol.Group).Conv

	alice.RequestError(&protocol.Block{User: "alice"}, protocol.CodeInvalid)
	alice.RequestError(&protocol.Block{User: "Not An Id"}, protocol.CodeInvalid)
	alice.RequestOK(&protocol.Block{User: "mallory"})
	alice.RequestOK(&protocol.Block{User: "mallory"}) // again: ok, nothing changes
	if got := settingsOf(alice, nil).Blocked; !reflect.DeepEqual(got, []string{"mallory"}) {
		t.Fatalf("blocked = %v, want [mallory]", got)
	}

	mallory.RequestError(&protocol.Send{Conv: dm, MsgID: "m2", Body: "still there?"}, protocol.CodeForbidden)
	mallory.RequestError(&protocol.Send{Conv: dm, MsgID: "r1", Kind: protocol.KindReaction, RefSeq: 1, Body: "👍"}, protocol.CodeForbidden)
	mallory.Write(&protocol.Typing{Conv: dm})
	mallory.Expect("typing refused", func(f protocol.Frame) bool {
		e, ok := f.(*protocol.ErrorFrame)
		return ok && e.Code == protocol.CodeForbidden
	})
	mallory.RequestError(&protocol.CreateGroup{Title: "trap", Members: []string{"alice"}, Key: "k2"}, protocol.CodeForbidden)
	other := mallory.RequestOK(&protocol.CreateGroup{Title: "other", Members: []string{"bob"}, Key: "k3"}).(*protocol.Group).Conv
	mallory.RequestError(&protocol.GroupOp{Conv: other, Op: protocol.GroupAdd, Users: []string{"alice"}}, protocol.CodeForbidden)
	if h := alice.History(protocol.History{Conv: dm}); len(h.Messages) != 1 {
		t.Errorf("history of the blocked chat: %d messages, want the one stored before the block", len(h.Messages))
	}
	// Alice herself may still write there.
	alice.Send(dm, "a1", "goodbye")

	// The group they share flows both ways.
	mallory.Send(group, "g1", "in the group")
	alice.ExpectMsg(group)
	alice.Send(group, "g2", "here too")
	mallory.ExpectMsg(group)

	alice.RequestOK(&protocol.Unblock{User: "mallory"})
	alice.RequestOK(&protocol.Unblock{User: "mallory"}) // again: ok
	mallory.Send(dm, "m3", "friends again")
	mallory.RequestOK(&protocol.CreateGroup{Title: "trap", Members: []string{"alice"}, Key: "k2"})
}

func TestBlockLimit(t *testing.T) {
	env := servertest.Start(t, func(c *server.Config) { c.People.MaxBlocked = 2 })
	alice := env.Dial(t, "alice", "phone")
	alice.RequestOK(&protocol.Block{User: "u1"})
	alice.RequestOK(&protocol.Block{User: "u2"})
	alice.RequestError(&protocol.Block{User: "u3"}, protocol.CodeTooLarge)
	if got := settingsOf(alice, nil).Blocked; !reflect.DeepEqual(got, []string{"u1", "u2"}) {
		t.Errorf("blocked = %v, want [u1 u2]", got)
	}
}

func TestPresenceRules(t *testing.T) {
	clock := servertest.NewClock()
	env := servertest.Start(t, clock.Use)
	alice := env.Dial(t, "alice", "phone")
	bob := env.Dial(t, "bob", "phone")
	settingsOf(bob, map[string]any{"name": "Bob"})

	// No conversation shared: the stranger's answer, whoever it is.
	wantPresence(t, "before any message", presenceOf(alice, "bob", "nobody-at-all"),
		protocol.Stranger("bob"), protocol.Stranger("nobody-at-all"))
	alice.Send("d:alice:bob", "m1", "hi")
	wantPresence(t, "after a message", presenceOf(alice, "bob"), protocol.Presence{User: "bob", Online: true, Name: "Bob"})

	// bob goes away: alice, watching, is told, with the time.
	clock.Advance(time.Minute)
	bob.Close()
	left := clock.Ms()
	push := alice.Expect("bob went away", servertest.OfType("presence")).(*protocol.PresenceReply)
	wantPresence(t, "pushed", push.Users, protocol.Presence{User: "bob", LastSeen: left, Name: "Bob"})

	// A group shared is a conversation shared.
	carol := env.Dial(t, "carol", "phone")
	wantPresence(t, "no group yet", presenceOf(carol, "bob"), protocol.Stranger("bob"))
	alice.RequestOK(&protocol.CreateGroup{Title: "t", Members: []string{"bob", "carol"}, Key: "g"})
	wantPresence(t, "a group shared", presenceOf(carol, "bob"), protocol.Presence{User: "bob", LastSeen: left, Name: "Bob"})

	// last_seen nobody is reciprocal.
	settingsOf(alice, map[string]any{"last_seen": "nobody"})
	wantPresence(t, "alice hides hers", presenceOf(alice, "bob"), protocol.Presence{User: "bob", Name: "Bob"})
	wantPresence(t, "alice hidden from carol", presenceOf(carol, "alice"), protocol.Presence{User: "alice"})
	settingsOf(alice, map[string]any{"last_seen": "everyone"})
	wantPresence(t, "shown again", presenceOf(carol, "alice"), protocol.Presence{User: "alice", Online: true})

	// A block: the stranger's answer both ways, the blocker keeps the name.
	bob = env.Dial(t, "bob", "phone")
	alice.RequestOK(&protocol.Block{User: "bob"})
	p := protocol.Stranger("bob")
	p.Name = "Bob"
	wantPresence(t, "alice blocked bob", presenceOf(alice, "bob"), p)
	wantPresence(t, "bob blocked by alice", presenceOf(bob, "alice"), protocol.Stranger("alice"))
	// More than the limit is invalid.
	many := make([]string, protocol.DefaultMaxPresenceUsers+1)
	for i := range many {
		many[i] = "u" + string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	alice.RequestError(&protocol.PresenceRequest{Users: many}, protocol.CodeInvalid)
}

// A user connecting and disconnecting 40 times in a few seconds costs a
// watcher at most one push per interval, and the last push is true.
func TestFlappingIsCoalesced(t *testing.T) {
	servertest.OncePerSuite(t) // the coalescing is the gateway's, the same on every backend
	const interval = 2 * time.Second
	env := servertest.Start(t)
	alice := env.Dial(t, "alice", "phone")
	bob := env.Dial(t, "bob", "phone")
	bob.Send("d:alice:bob", "m1", "hi")
	presenceOf(alice, "bob")
	// 40 flaps over about four seconds: a connection every 100 ms.
	pace := time.NewTicker(100 * time.Millisecond)
	defer pace.Stop()
	start := time.Now()
	for range 40 {
		bob.Close()
		<-pace.C
		bob = env.Dial(t, "bob", "phone")
	}
	bob.Close()
	flapped := time.Since(start)
	// The pushes until the last change (bob offline) has been pushed and
	// an interval more brings nothing.
	var pushes []protocol.Presence
	for {
		if len(pushes) == 0 || pushes[len(pushes)-1].Online {
			f := alice.Expect("a presence push", servertest.OfType("presence")).(*protocol.PresenceReply)
			pushes = append(pushes, f.Users...)
			continue
		}
		quiet := time.NewTimer(interval + 500*time.Millisecond)
		<-quiet.C // a push due within the interval would have come by now
		more := 0
		for _, g := range alice.Barrier() {
			if p, ok := g.(*protocol.PresenceReply); ok {
				pushes = append(pushes, p.Users...)
				more++
			}
		}
		if more == 0 {
			break
		}
	}
	for _, p := range pushes {
		if p.User != "bob" {
			t.Fatalf("a push of %s, want bob alone", p.User)
		}
	}
	if last := pushes[len(pushes)-1]; last.Online || last.LastSeen == 0 {
		t.Errorf("the last push %+v, want bob offline with his last seen", last)
	}
	// One push per interval over the flapping, and the last one after it.
	if bound := int(flapped/interval) + 2; len(pushes) > bound {
		t.Errorf("%d pushes for 40 flaps in %v, want at most %d (one per %v)", len(pushes), flapped, bound, interval)
	}
	t.Logf("40 flaps in %v: %d pushes to the watcher", flapped.Round(time.Millisecond), len(pushes))
}

// With read receipts off on either side, a direct chat's reads are not
// shown; the reader's own session moves all the same; groups show them.
func TestReadReceiptsOffHideReadsInDirectChats(t *testing.T) {
	env := servertest.Start(t)
	alice := env.Dial(t, "alice", "phone")
	bob := env.Dial(t, "bob", "phone")
	const dm = "d:alice:bob"
	settingsOf(bob, map[string]any{"read_receipts": false})

	alice.Send(dm, "m1", "one")
	bob.ExpectMsg(dm)
	bob.RequestOK(&protocol.Read{Marks: []protocol.Mark{{Conv: dm, Seq: 1}}})
	st := alice.ExpectStatus(dm) // delivered shows
	if st.DeliveredSeq != 1 || st.ReadSeq != 0 {
		t.Fatalf("alice's status after bob's hidden read: %+v, want delivered 1, read 0", st)
	}
	if s := bob.SessionOf(dm); s.ReadSeq != 1 || s.UnreadCount != 0 {
		t.Errorf("bob's own session: read %d unread %d, want 1 and 0", s.ReadSeq, s.UnreadCount)
	}
	if s := alice.SessionOf(dm); s.Ticks.ReadSeq != 0 {
		t.Errorf("alice's session ticks %+v, want read 0", s.Ticks)
	}
	rc := alice.RequestOK(&protocol.ReceiptsRequest{Conv: dm}).(*protocol.ReceiptsReply)
	for _, r := range rc.Members {
		if r.User == "bob" && r.ReadSeq != 0 {
			t.Errorf("receipts show bob's read %d, want 0", r.ReadSeq)
		}
	}

	// Either side: alice turns hers off, bob his on: still hidden.
	settingsOf(alice, map[string]any{"read_receipts": false})
	settingsOf(bob, map[string]any{"read_receipts": true})
	alice.Send(dm, "m2", "two")
	bob.ExpectMsg(dm)
	bob.RequestOK(&protocol.Read{Marks: []protocol.Mark{{Conv: dm, Seq: 2}}})
	if st := alice.ExpectStatus(dm); st.ReadSeq != 0 {
		t.Fatalf("read shown while alice has receipts off: %+v", st)
	}

	// Both on again: reads made meanwhile are not shown by themselves;
	// the next read shows them.
	settingsOf(alice, map[string]any{"read_receipts": true})
	alice.ExpectNone("a status without a read", servertest.OfType("status"))
	alice.Send(dm, "m3", "three")
	bob.ExpectMsg(dm)
	bob.RequestOK(&protocol.Read{Marks: []protocol.Mark{{Conv: dm, Seq: 3}}})
	alice.Expect("the read shown", func(f protocol.Frame) bool {
		st, ok := f.(*protocol.Status)
		return ok && st.Conv == dm && st.ReadSeq == 3
	})

	// Groups always show reads, whatever the settings.
	settingsOf(bob, map[string]any{"read_receipts": false})
	g := alice.RequestOK(&protocol.CreateGroup{Title: "g", Members: []string{"bob"}, Key: "g"}).(*protocol.Group).Conv
	sent := alice.Send(g, "g1", "group")
	bob.ExpectMsg(g)
	bob.RequestOK(&protocol.Read{Marks: []protocol.Mark{{Conv: g, Seq: sent.Seq}}})
	alice.Expect("a group read shown", func(f protocol.Frame) bool {
		st, ok := f.(*protocol.Status)
		return ok && st.Conv == g && st.ReadSeq == sent.Seq
	})
}

func TestRequestFlag(t *testing.T) {
	env := servertest.Start(t)
	alice := env.Dial(t, "alice", "phone")
	bob := env.Dial(t, "bob", "phone")
	const dm = "d:alice:bob"
	alice.Send(dm, "m1", "hello, stranger")
	bob.ExpectMsg(dm)
	if s := bob.SessionOf(dm); !s.Request {
		t.Errorf("bob's session of a first message from alice: request false, want true")
	}
	if s := alice.SessionOf(dm); s.Request {
		t.Errorf("alice's own session: request true, want false")
	}
	bob.Send(dm, "b1", "hello")
	if s := bob.SessionOf(dm); s.Request {
		t.Errorf("after bob answered: request true, want false")
	}
}

// A restart keeps every setting and block.
func TestRestartKeepsSettingsAndBlocks(t *testing.T) {
	env := servertest.Start(t)
	alice := env.Dial(t, "alice", "phone")
	settingsOf(alice, map[string]any{"last_seen": "nobody", "read_receipts": false, "name": "Alice"})
	alice.RequestOK(&protocol.Block{User: "mallory"})
	want := settingsOf(alice, nil)
	env = env.Restart(t)
	alice = env.Dial(t, "alice", "phone")
	if got := settingsOf(alice, nil); !reflect.DeepEqual(got, want) {
		t.Fatalf("after a restart: %+v, want %+v", got, want)
	}
	mallory := env.Dial(t, "mallory", "phone")
	mallory.RequestError(&protocol.Send{Conv: "d:alice:mallory", MsgID: "m1", Body: "hi"}, protocol.CodeForbidden)
}
