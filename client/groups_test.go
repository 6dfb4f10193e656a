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
	alice := newProfile(t, env.URL, "alice", "").start()
	bob := newProfile(t, env.URL, "bob", "").start()
	carol := newProfile(t, env.URL, "carol", "").start()
	for _, p := range []*profile{alice, bob, carol} {
		p.waitOnline()
	}
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
	// Her device notes that she is no longer a member when her session
	// says so; nothing from the group comes after it.
	carol.waitFor("the note that she is no longer a member", func() bool {
		msgs := carol.messages(g.Conv)
		last := msgs[len(msgs)-1]
		return last.Kind == protocol.KindSystem && strings.HasPrefix(last.MsgID, "left-") && last.From == "carol"
	})
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
