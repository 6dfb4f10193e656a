package client

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/servertest"
)

// createGroup creates a group from p and returns its state, skipping the
// test on a server that does not serve groups yet.
func createGroup(t *testing.T, p *profile, title string, members ...string) GroupChanged {
	t.Helper()
	key := p.client.CreateGroup("", title, members)
	e := p.waitEvent("the group", func(e Event) bool {
		switch e := e.(type) {
		case GroupChanged:
			if e.Key != key {
				t.Errorf("the answer to create_group carries key %q, want %q", e.Key, key)
			}
			return true
		case ErrorEvent:
			return e.Op == "create_group"
		}
		return false
	})
	if ev, ok := e.(ErrorEvent); ok {
		var perr *protocol.Error
		if errors.As(ev.Err, &perr) && perr.Code == protocol.CodeInvalid {
			t.Skipf("the server does not serve groups: %v", ev.Err)
		}
		t.Fatalf("create_group: %v", ev.Err)
	}
	return e.(GroupChanged)
}

// A group conversation works like a direct one: its session reaches every
// member, messages (system ones included) are stored, ticks reach the
// sender, and a member that leaves keeps what it stored.
func TestGroupConversation(t *testing.T) {
	env := servertest.Start(t)
	alice := newProfile(t, env.URL, "alice", "").startOnline()
	bob := newProfile(t, env.URL, "bob", "").startOnline()
	carol := newProfile(t, env.URL, "carol", "").startOnline()
	g := createGroup(t, alice, "team", "bob", "carol")
	if !slices.Equal(g.Members, []string{"alice", "bob", "carol"}) || g.Title != "team" {
		t.Fatalf("group %+v", g)
	}
	for _, p := range []*profile{alice, bob, carol} {
		p.waitFor("the group's session and its system message", func() bool {
			s, ok := p.session(g.Conv)
			msgs := p.messages(g.Conv)
			return ok && s.Kind == "group" && s.Title == "team" && len(msgs) >= 1 && msgs[0].Kind == protocol.KindSystem
		})
	}

	sent, err := bob.client.Send(g.Conv, "hello team")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*profile{alice, carol} {
		p.waitFor("bob's message", func() bool {
			msgs := p.messages(g.Conv)
			return len(msgs) > 0 && msgs[len(msgs)-1].MsgID == sent.MsgID
		})
		p.client.MarkRead(g.Conv, p.messages(g.Conv)[len(p.messages(g.Conv))-1].Seq)
	}
	bob.waitFor("blue ticks from both", func() bool {
		msgs := bob.messages(g.Conv)
		last := msgs[len(msgs)-1]
		return !last.Outbox && protocol.TickOf(last.Seq, bob.client.Ticks(g.Conv)) == protocol.TickRead
	})

	alice.client.GroupOp(g.Conv, "rename", nil, "core team")
	alice.waitEvent("the rename", func(e Event) bool { ev, ok := e.(GroupChanged); return ok && ev.Title == "core team" })
	carol.waitFor("the new title", func() bool { s, _ := carol.session(g.Conv); return s.Title == "core team" })

	carol.client.GroupOp(g.Conv, "leave", nil, "")
	carol.waitEvent("the leave", func(e Event) bool { _, ok := e.(GroupChanged); return ok })
	// Her device, online, is pushed the server's message of her leaving
	// and keeps it as the last one once her session says she left, with
	// no notice of its own after it; nothing from the group comes after
	// it.
	carol.waitFor("her session without her, and the message of her leaving", func() bool {
		s, _ := carol.session(g.Conv)
		msgs := carol.messages(g.Conv)
		last := msgs[len(msgs)-1]
		return len(s.Members) == 0 && last.Kind == protocol.KindSystem && last.Body == "carol left" && last.From == "carol"
	})
	for _, m := range carol.messages(g.Conv) {
		if strings.HasPrefix(m.MsgID, "left-") {
			t.Fatalf("carol's device wrote its own notice beside the server's message: %+v", m)
		}
	}
	held := len(carol.messages(g.Conv))
	if _, err := alice.client.Send(g.Conv, "after carol left"); err != nil {
		t.Fatal(err)
	}
	bob.waitFor("alice's message", func() bool {
		msgs := bob.messages(g.Conv)
		return msgs[len(msgs)-1].Body == "after carol left"
	})
	if got := len(carol.messages(g.Conv)); got != held {
		t.Fatalf("carol held %d messages, now %d", held, got)
	}
}

// TestRemovedMemberIsPushedHisRemoval checks that a member removed while
// online stores the server's message naming who removed him, as the
// chat's last message and the list's, with nothing left unread; that
// marking it read (his chat was open) is refused by the server without an
// error for the user; and that, added back, the add follows it.
func TestRemovedMemberIsPushedHisRemoval(t *testing.T) {
	env := servertest.Start(t)
	alice := newProfile(t, env.URL, "alice", "").startOnline()
	bob := newProfile(t, env.URL, "bob", "").startOnline()
	carol := newProfile(t, env.URL, "carol", "").startOnline()
	g := createGroup(t, alice, "team", "bob", "carol")
	bob.waitFor("the group", func() bool { s, ok := bob.session(g.Conv); return ok && len(s.Members) == 3 })

	carol.client.GroupOp(g.Conv, "remove", []string{"bob"}, "")
	var removal Message
	bob.waitFor("the message of his removal", func() bool {
		msgs := bob.messages(g.Conv)
		removal = msgs[len(msgs)-1]
		return removal.Body == "carol removed bob"
	})
	if removal.From != "carol" || removal.Kind != protocol.KindSystem || strings.HasPrefix(removal.MsgID, "left-") {
		t.Fatalf("bob's removal is stored as %+v", removal)
	}
	// His open chat marks it read: the server refuses (he is no longer a
	// member), and that is no error for him. The answer to a later
	// request comes after the read's: every event up to it is checked.
	bob.client.MarkRead(g.Conv, removal.Seq)
	key := bob.client.CreateGroup("", "after", []string{"alice"})
	bob.waitEvent("the answer after the read's", func(e Event) bool {
		if ev, ok := e.(ErrorEvent); ok {
			t.Errorf("bob was shown an error: %s: %v", ev.Op, ev.Err)
		}
		ev, ok := e.(GroupChanged)
		return ok && ev.Key == key
	})
	bob.waitFor("his session without him", func() bool { s, _ := bob.session(g.Conv); return len(s.Members) == 0 })
	s, _ := bob.session(g.Conv)
	if s.LastMsg == nil || s.LastMsg.MsgID != removal.MsgID || s.UnreadCount != 0 {
		t.Fatalf("bob's session after his removal: last %+v, unread %d; want the removal, nothing unread", s.LastMsg, s.UnreadCount)
	}
	if msgs := bob.messages(g.Conv); msgs[len(msgs)-1].MsgID != removal.MsgID {
		t.Fatalf("bob's chat after the sync ends with %+v, want the removal", msgs[len(msgs)-1])
	}
	if pending, err := bob.store.PendingReads(); err != nil || pending[g.Conv] != 0 {
		t.Fatalf("bob's pending reads %v, %v: the refused one is kept", pending, err)
	}

	alice.client.GroupOp(g.Conv, "add", []string{"bob"}, "")
	bob.waitFor("the add", func() bool {
		msgs := bob.messages(g.Conv)
		return msgs[len(msgs)-1].Body == "alice added bob"
	})
	msgs := bob.messages(g.Conv)
	if prev := msgs[len(msgs)-2]; prev.MsgID != removal.MsgID {
		t.Fatalf("added back, the line before the add is %+v, want the removal", prev)
	}
}
