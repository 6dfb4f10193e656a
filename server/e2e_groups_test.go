package server_test

// End-to-end tests of PROTOCOL.md "Groups", with what it implies for
// "Receipts and ticks" and "Sessions": creating a group, its operations and
// their validation, what every member's devices are pushed (and are not),
// the lock-out of a member who was removed or left, the rules for a member
// added back, the tick minimum over the current members, a send racing
// with the removal of its sender, and group changes and sends racing with
// each other (on a warm and on a freshly started server).

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server"
	"github.com/imcore/im/server/servertest"
)

// 1. create_group: the answer, the system message pushed to every device
// of every member (the creating one included) and to nobody else, the
// sessions, pending rows for offline members, receipts, typing, and the
// idempotency key.
func TestGroupCreate(t *testing.T) {
	env := servertest.Start(t)
	aliceLaptop := env.DialReplayed(t, "alice", "laptop")
	alicePhone := env.DialReplayed(t, "alice", "phone")
	bob := env.DialReplayed(t, "bob", "laptop")
	carol := env.DialReplayed(t, "carol", "laptop")
	dave := env.DialReplayed(t, "dave", "laptop") // never a member

	// Members listed in any order, with a repeat; erin is offline.
	g := aliceLaptop.CreateGroup(protocol.CreateGroup{Ref: protocol.Ref{ID: "cg-1"}, Title: "team", Members: []string{"carol", "bob", "erin", "bob"}})
	if g.ID != "cg-1" {
		t.Fatalf("group answer id %q, want cg-1", g.ID)
	}
	conv := g.Conv
	members := []string{"alice", "bob", "carol", "erin"}
	servertest.WantGroup(t, g, conv, "team", members...)
	env.WantStoredGroup(conv, "team", members...)

	sys := servertest.WantPushes(conv, servertest.SystemMsg(1, "alice", `alice created the group "team"`), nil, true, aliceLaptop, alicePhone, bob, carol)
	servertest.WantQuiet(dave)

	// The creator has read its own message; for the others it is an event,
	// not unread.
	aliceLaptop.WantSession(servertest.GroupSession(conv, "team", members, 0, 1, 1, sys, protocol.Ticks{}))
	alicePhone.WantSession(servertest.GroupSession(conv, "team", members, 0, 1, 1, sys, protocol.Ticks{}))
	bob.WantSession(servertest.GroupSession(conv, "team", members, 0, 0, 1, sys, protocol.Ticks{}))
	carol.WantSession(servertest.GroupSession(conv, "team", members, 0, 0, 1, sys, protocol.Ticks{}))
	if _, page := bob.SyncAll(""); page.TotalUnread != 0 {
		t.Fatalf("bob total_unread %d, want 0", page.TotalUnread)
	}
	if all, _ := dave.SyncAll(""); len(all) != 0 {
		t.Fatalf("dave, not a member, has sessions %s", servertest.JSON(all))
	}
	bob.WantReceipts(conv, servertest.Receipt("alice", 1, 1), servertest.Receipt("bob", 0, 0), servertest.Receipt("carol", 0, 0), servertest.Receipt("erin", 0, 0))
	if got := carol.WantHistory(protocol.History{Conv: conv}, false, 1); got[0] != sys {
		t.Fatalf("history holds %s, pushed was %s", servertest.JSON(got[0]), servertest.JSON(sys))
	}

	// The offline member has a pending row and gets the message on hello.
	env.WantPending("erin", servertest.PendingRow(conv, 1, 0, 1))
	erin := env.DialReplayed(t, "erin", "laptop")
	if m := erin.ExpectMsg(conv); m != sys {
		t.Fatalf("erin replayed %s, want %s", servertest.JSON(m), servertest.JSON(sys))
	}
	erin.WantSession(servertest.GroupSession(conv, "team", members, 0, 0, 1, sys, protocol.Ticks{}))
	servertest.WantQuiet(erin, aliceLaptop, alicePhone, bob, carol, dave)

	// Typing reaches the other members' devices only.
	bob.Write(&protocol.Typing{Conv: conv})
	servertest.WantQuiet(bob) // bob's frames are handled in order: the typing is pushed by now
	for _, c := range []*servertest.Client{aliceLaptop, alicePhone, carol, erin} {
		got := c.TakePushes()
		if len(got.Typing) != 1 || got.Typing[0] != (protocol.Typing{Conv: conv, User: "bob"}) || len(got.Msgs)+len(got.Status)+len(got.Syncs)+len(got.Other) > 0 {
			t.Fatalf("%s/%s after bob's typing: %s", c.User, c.Device, servertest.JSON(got))
		}
	}
	servertest.WantQuiet(bob, dave)
	dave.Write(&protocol.Typing{Conv: conv})
	if e := dave.ExpectType("error").(*protocol.ErrorFrame); e.Code != protocol.CodeForbidden || e.ID != "" {
		t.Fatalf("typing by a non-member: %s", servertest.JSON(e))
	}
	servertest.WantQuiet(aliceLaptop, alicePhone, bob, carol, erin, dave)

	// A group of the creator alone: its message is read by every member at
	// once, so the minimum rises to 1.
	solo := alicePhone.CreateGroup(protocol.CreateGroup{Title: "notes"})
	servertest.WantGroup(t, solo, solo.Conv, "notes", "alice")
	soloMsg := servertest.WantPushes(solo.Conv, servertest.SystemMsg(1, "alice", `alice created the group "notes"`), servertest.Ticks(1, 1), true, aliceLaptop, alicePhone)
	servertest.WantQuiet(bob, carol, erin, dave)
	aliceLaptop.WantSession(servertest.GroupSession(solo.Conv, "notes", []string{"alice"}, 0, 1, 1, soloMsg, protocol.Ticks{DeliveredSeq: 1, ReadSeq: 1}))

	// The key: a repeat by the same user (from any device, whatever the
	// rest of the frame says) returns the same group and writes nothing.
	k := aliceLaptop.CreateGroup(protocol.CreateGroup{Title: "keyed", Members: []string{"bob"}, Key: "k-1"})
	servertest.WantGroup(t, k, k.Conv, "keyed", "alice", "bob")
	servertest.WantPushes(k.Conv, servertest.SystemMsg(1, "alice", `alice created the group "keyed"`), nil, true, aliceLaptop, alicePhone, bob)
	for _, again := range []*servertest.Client{aliceLaptop, alicePhone} {
		g := again.CreateGroup(protocol.CreateGroup{Title: "other", Members: []string{"carol", "dave"}, Key: "k-1"})
		servertest.WantGroup(t, g, k.Conv, "keyed", "alice", "bob")
		servertest.WantQuiet(aliceLaptop, alicePhone, bob, carol, dave, erin)
	}
	bob.WantHistory(protocol.History{Conv: k.Conv}, false, 1)
	// The same key by another user is another group.
	kb := bob.CreateGroup(protocol.CreateGroup{Title: "keyed", Members: []string{"alice"}, Key: "k-1"})
	if kb.Conv == k.Conv {
		t.Fatalf("bob's create with alice's key returned alice's group %s", k.Conv)
	}
	servertest.WantGroup(t, kb, kb.Conv, "keyed", "alice", "bob")
	servertest.WantPushes(kb.Conv, servertest.SystemMsg(1, "bob", `bob created the group "keyed"`), nil, true, aliceLaptop, alicePhone, bob)
	// Without a key, every create is a new group.
	n1 := bob.CreateGroup(protocol.CreateGroup{Title: "twice", Members: []string{"carol"}})
	servertest.WantPushes(n1.Conv, servertest.SystemMsg(1, "bob", `bob created the group "twice"`), nil, true, bob, carol)
	n2 := bob.CreateGroup(protocol.CreateGroup{Title: "twice", Members: []string{"carol"}})
	servertest.WantPushes(n2.Conv, servertest.SystemMsg(1, "bob", `bob created the group "twice"`), nil, true, bob, carol)
	if n1.Conv == n2.Conv {
		t.Fatalf("two creates without a key made one group %s", n1.Conv)
	}
	// A key of 64 characters is valid.
	long := carol.CreateGroup(protocol.CreateGroup{Title: "long key", Key: strings.Repeat("k", 64)})
	servertest.WantPushes(long.Conv, servertest.SystemMsg(1, "carol", `carol created the group "long key"`), servertest.Ticks(1, 1), true, carol)
	servertest.WantQuiet(aliceLaptop, alicePhone, bob, dave, erin)
}

// 1. create_group validation: every refused create is invalid and leaves
// no trace; the title and size limits are configurable.
func TestGroupCreateValidation(t *testing.T) {
	env := servertest.Start(t)
	alice := env.DialReplayed(t, "alice", "laptop")
	bob := env.DialReplayed(t, "bob", "laptop")

	bad := map[string]protocol.CreateGroup{
		"empty title":           {Title: "", Members: []string{"bob"}},
		"blank title":           {Title: "   ", Members: []string{"bob"}},
		"101 characters":        {Title: strings.Repeat("a", 101), Members: []string{"bob"}},
		"101 two-byte chars":    {Title: strings.Repeat("é", 101), Members: []string{"bob"}},
		"newline in title":      {Title: "two\nlines", Members: []string{"bob"}},
		"carriage return":       {Title: "cr\rhere", Members: []string{"bob"}},
		"tab in title":          {Title: "tab\there", Members: []string{"bob"}},
		"NUL in title":          {Title: "nul\x00", Members: []string{"bob"}},
		"DEL in title":          {Title: "del\x7f", Members: []string{"bob"}},
		"upper-case member":     {Title: "team", Members: []string{"Bob"}},
		"empty member":          {Title: "team", Members: []string{"bob", ""}},
		"member with space":     {Title: "team", Members: []string{"bob", "no one"}},
		"member of 33":          {Title: "team", Members: []string{strings.Repeat("b", 33)}},
		"key of 65":             {Title: "team", Members: []string{"bob"}, Key: strings.Repeat("k", 65)},
		"bad member, valid key": {Title: "team", Members: []string{"-bob"}, Key: "k"},
	}
	for name, f := range bad {
		e := alice.RequestError(&f, protocol.CodeInvalid)
		if e.Message == "" {
			t.Errorf("%s: invalid without a message", name)
		}
	}
	servertest.WantQuiet(alice, bob)
	for _, c := range []*servertest.Client{alice, bob} {
		if all, _ := c.SyncAll(""); len(all) != 0 {
			t.Fatalf("%s has sessions after refused creates: %s", c.User, servertest.JSON(all))
		}
	}
	// The key of the refused create was not taken.
	g := alice.CreateGroup(protocol.CreateGroup{Title: "team", Members: []string{"bob"}, Key: "k"})
	servertest.WantPushes(g.Conv, servertest.SystemMsg(1, "alice", `alice created the group "team"`), nil, true, alice, bob)

	// Exactly 100 characters (200 bytes) is a valid title.
	title := strings.Repeat("é", 100)
	g = alice.CreateGroup(protocol.CreateGroup{Title: title, Members: []string{"bob"}})
	servertest.WantGroup(t, g, g.Conv, title, "alice", "bob")
	servertest.WantPushes(g.Conv, servertest.SystemMsg(1, "alice", fmt.Sprintf("alice created the group %q", title)), nil, true, alice, bob)

	// Smaller limits.
	small := servertest.Start(t, func(c *server.Config) {
		c.Gateway.Limits.MaxGroupSize = 3
		c.Gateway.Limits.MaxTitle = 5
	})
	alice = small.DialReplayed(t, "alice", "laptop")
	bob = small.DialReplayed(t, "bob", "laptop")
	carol := small.DialReplayed(t, "carol", "laptop")
	dave := small.DialReplayed(t, "dave", "laptop")
	everyone := []*servertest.Client{alice, bob, carol, dave}

	alice.RequestError(&protocol.CreateGroup{Title: "big", Members: []string{"bob", "carol", "dave"}}, protocol.CodeInvalid)
	alice.RequestError(&protocol.CreateGroup{Title: "abcdef", Members: []string{"bob"}}, protocol.CodeInvalid)
	alice.RequestError(&protocol.CreateGroup{Title: "éééééé", Members: []string{"bob"}}, protocol.CodeInvalid)
	servertest.WantQuiet(everyone...)

	// The creator counts once, listed or not.
	full := alice.CreateGroup(protocol.CreateGroup{Title: "abcde", Members: []string{"alice", "bob", "carol"}})
	servertest.WantGroup(t, full, full.Conv, "abcde", "alice", "bob", "carol")
	servertest.WantPushes(full.Conv, servertest.SystemMsg(1, "alice", `alice created the group "abcde"`), nil, true, alice, bob, carol)
	servertest.WantQuiet(dave)

	// Adding beyond the limit is invalid and writes nothing.
	bob.RequestError(&protocol.GroupOp{Conv: full.Conv, Op: protocol.GroupAdd, Users: []string{"dave"}}, protocol.CodeInvalid)
	servertest.WantQuiet(everyone...)
	small.WantStoredGroup(full.Conv, "abcde", "alice", "bob", "carol")
	alice.WantHistory(protocol.History{Conv: full.Conv}, false, 1)
	// Adding a member already in is not beyond it.
	g = bob.GroupOp(protocol.GroupOp{Conv: full.Conv, Op: protocol.GroupAdd, Users: []string{"carol"}})
	servertest.WantGroup(t, g, full.Conv, "abcde", "alice", "bob", "carol")
	servertest.WantQuiet(everyone...)
	// A rename is held to the title limit too.
	bob.RequestError(&protocol.GroupOp{Conv: full.Conv, Op: protocol.GroupRename, Title: "abcdef"}, protocol.CodeInvalid)
	servertest.WantQuiet(everyone...)

	pair := alice.CreateGroup(protocol.CreateGroup{Title: "ééééé", Members: []string{"bob"}})
	servertest.WantGroup(t, pair, pair.Conv, "ééééé", "alice", "bob")
	servertest.WantPushes(pair.Conv, servertest.SystemMsg(1, "alice", `alice created the group "ééééé"`), nil, true, alice, bob)
	alice.RequestError(&protocol.GroupOp{Conv: pair.Conv, Op: protocol.GroupAdd, Users: []string{"carol", "dave"}}, protocol.CodeInvalid)
	servertest.WantQuiet(everyone...)
	small.WantStoredGroup(pair.Conv, "ééééé", "alice", "bob")
	// bob is in already: only carol is added, which fits.
	g = alice.GroupOp(protocol.GroupOp{Conv: pair.Conv, Op: protocol.GroupAdd, Users: []string{"carol", "bob"}})
	servertest.WantGroup(t, g, pair.Conv, "ééééé", "alice", "bob", "carol")
	servertest.WantPushes(pair.Conv, servertest.SystemMsg(2, "alice", "alice added carol"), nil, true, alice, bob, carol)
	servertest.WantQuiet(dave)
}

// 1. add: the new member's boundaries, session and history start at the
// message announcing it; offline new members get a pending row; adding a
// member already in writes nothing; any member may add.
func TestGroupAdd(t *testing.T) {
	env := servertest.Start(t)
	alice := env.DialReplayed(t, "alice", "laptop")
	bob := env.DialReplayed(t, "bob", "laptop")
	carol := env.DialReplayed(t, "carol", "laptop")
	daveLaptop := env.DialReplayed(t, "dave", "laptop")
	davePhone := env.DialReplayed(t, "dave", "phone")
	outsider := env.DialReplayed(t, "zoe", "laptop")

	g := alice.CreateGroup(protocol.CreateGroup{Title: "team", Members: []string{"bob", "carol"}})
	conv := g.Conv
	servertest.WantPushes(conv, servertest.SystemMsg(1, "alice", `alice created the group "team"`), nil, true, alice, bob, carol)
	servertest.WantQuiet(daveLaptop, davePhone, outsider)
	alice.SendMsg(conv, "before dave 1")
	servertest.WantPushes(conv, &servertest.WantMsg{Seq: 2, From: "alice", Body: "before dave 1"}, nil, false, bob, carol)
	alice.SendMsg(conv, "before dave 2")
	servertest.WantPushes(conv, &servertest.WantMsg{Seq: 3, From: "alice", Body: "before dave 2"}, nil, false, bob, carol)
	servertest.WantQuiet(alice, daveLaptop, davePhone, outsider)

	g = alice.GroupOp(protocol.GroupOp{Ref: protocol.Ref{ID: "add-dave"}, Conv: conv, Op: protocol.GroupAdd, Users: []string{"dave"}})
	if g.ID != "add-dave" {
		t.Fatalf("group answer id %q, want add-dave", g.ID)
	}
	members := []string{"alice", "bob", "carol", "dave"}
	servertest.WantGroup(t, g, conv, "team", members...)
	env.WantStoredGroup(conv, "team", members...)
	added := servertest.WantPushes(conv, servertest.SystemMsg(4, "alice", "alice added dave"), nil, true, alice, bob, carol, daveLaptop, davePhone)
	servertest.WantQuiet(outsider)

	// dave's boundaries and session start at seq 3; only seq 4 is his.
	daveLaptop.WantReceipts(conv, servertest.Receipt("alice", 4, 4), servertest.Receipt("bob", 0, 0), servertest.Receipt("carol", 0, 0), servertest.Receipt("dave", 3, 3))
	daveLaptop.WantSession(servertest.GroupSession(conv, "team", members, 0, 3, 4, added, protocol.Ticks{}))
	bob.WantSession(servertest.GroupSession(conv, "team", members, 2, 0, 4, added, protocol.Ticks{})) // 2 and 3; 1 and 4 are events
	if _, page := davePhone.SyncAll(""); page.TotalUnread != 0 {
		t.Fatalf("dave total_unread %d, want 0", page.TotalUnread)
	}
	daveLaptop.WantHistory(protocol.History{Conv: conv}, false, 4)
	daveLaptop.WantHistory(servertest.After(conv, 0), false, 4)
	daveLaptop.WantHistory(servertest.After(conv, 1), false, 4)
	daveLaptop.WantHistory(servertest.After(conv, 4), false)
	daveLaptop.WantHistory(protocol.History{Conv: conv, BeforeSeq: 4}, false)
	daveLaptop.WantHistory(protocol.History{Conv: conv, BeforeSeq: 3, Limit: 1}, false)
	bob.WantHistory(servertest.After(conv, 0), false, 1, 2, 3, 4)
	env.WantPending("dave", servertest.PendingRow(conv, 4, 3, 4))
	davePhone.MarkDelivered(conv, 4)
	env.WantNoPending("dave", conv)
	alice.WantReceipts(conv, servertest.Receipt("alice", 4, 4), servertest.Receipt("bob", 0, 0), servertest.Receipt("carol", 0, 0), servertest.Receipt("dave", 4, 3))
	servertest.WantQuiet(alice, bob, carol, daveLaptop, davePhone)

	// Any member adds; users in any order, one of them already in; the
	// offline new members get a pending row from the announcing message.
	g = bob.GroupOp(protocol.GroupOp{Conv: conv, Op: protocol.GroupAdd, Users: []string{"gina", "alice", "erin", "gina"}})
	members = []string{"alice", "bob", "carol", "dave", "erin", "gina"}
	servertest.WantGroup(t, g, conv, "team", members...)
	added = servertest.WantPushes(conv, servertest.SystemMsg(5, "bob", "bob added erin and gina"), nil, true, alice, bob, carol, daveLaptop, davePhone)
	servertest.WantQuiet(outsider)
	carol.WantReceipts(conv, servertest.Receipt("alice", 4, 4), servertest.Receipt("bob", 5, 5), servertest.Receipt("carol", 0, 0), servertest.Receipt("dave", 4, 3), servertest.Receipt("erin", 4, 4), servertest.Receipt("gina", 4, 4))
	env.WantPending("erin", servertest.PendingRow(conv, 5, 4, 5))
	env.WantPending("gina", servertest.PendingRow(conv, 5, 4, 5))
	erin := env.DialReplayed(t, "erin", "laptop")
	if m := erin.ExpectMsg(conv); m != added {
		t.Fatalf("erin replayed %s, want %s", servertest.JSON(m), servertest.JSON(added))
	}
	servertest.WantQuiet(erin)
	erin.WantSession(servertest.GroupSession(conv, "team", members, 0, 4, 5, added, protocol.Ticks{}))
	erin.WantHistory(servertest.After(conv, 0), false, 5)

	// Adding members already in: the state, no message, no nudge.
	everyone := []*servertest.Client{alice, bob, carol, daveLaptop, davePhone, erin, outsider}
	for _, users := range [][]string{{"carol"}, {"dave", "alice"}, {"bob"}} {
		g = carol.GroupOp(protocol.GroupOp{Conv: conv, Op: protocol.GroupAdd, Users: users})
		servertest.WantGroup(t, g, conv, "team", members...)
		servertest.WantQuiet(everyone...)
	}
	alice.WantHistory(protocol.History{Conv: conv, Limit: 1}, true, 5)
	env.WantStoredGroup(conv, "team", members...)
}

// 1 and 2. remove: the message goes to the remaining members and, once,
// to the removed member's online devices (so they can say who removed
// her), which get nothing of the group after it; her devices are nudged,
// her session stays as it was with no members, her pending row goes, and
// every frame about the group is forbidden to her and changes nothing. Removing a non-member writes nothing; removing
// oneself is invalid.
func TestGroupRemovedMemberIsLockedOut(t *testing.T) {
	env := servertest.Start(t)
	alice := env.DialReplayed(t, "alice", "laptop")
	bob := env.DialReplayed(t, "bob", "laptop")
	carolLaptop := env.DialReplayed(t, "carol", "laptop")
	carolPhone := env.DialReplayed(t, "carol", "phone")
	dave := env.DialReplayed(t, "dave", "laptop")
	const direct = "d:alice:carol"

	g := alice.CreateGroup(protocol.CreateGroup{Title: "team", Members: []string{"bob", "carol", "dave"}})
	conv := g.Conv
	servertest.WantPushes(conv, servertest.SystemMsg(1, "alice", `alice created the group "team"`), nil, true, alice, bob, carolLaptop, carolPhone, dave)
	alice.SendMsg(conv, "two")
	servertest.WantPushes(conv, &servertest.WantMsg{Seq: 2, From: "alice", Body: "two"}, nil, false, bob, carolLaptop, carolPhone, dave)
	three := bob.SendMsg(conv, "three")
	servertest.WantPushes(conv, &servertest.WantMsg{Seq: 3, From: "bob", Body: "three"}, nil, false, alice, carolLaptop, carolPhone, dave)
	alice.SendMsg(direct, "direct one")
	servertest.WantPushes(direct, &servertest.WantMsg{Seq: 1, From: "alice", Body: "direct one"}, nil, false, carolLaptop, carolPhone)
	carolPhone.MarkDelivered(conv, 2)
	dave.WantReceipts(conv, servertest.Receipt("alice", 2, 2), servertest.Receipt("bob", 3, 3), servertest.Receipt("carol", 2, 0), servertest.Receipt("dave", 0, 0))
	if row, ok := env.PendingRows("carol")[conv]; !ok || row.LastDeliveredSeq != 2 || row.NewestSeq != 3 {
		t.Fatalf("carol's pending row in the group: %+v (present %v), want one at delivered 2, newest 3", row, ok)
	}
	servertest.WantQuiet(alice, bob, carolLaptop, carolPhone, dave)

	g = alice.GroupOp(protocol.GroupOp{Conv: conv, Op: protocol.GroupRemove, Users: []string{"carol"}})
	servertest.WantGroup(t, g, conv, "team", "alice", "bob", "dave")
	env.WantStoredGroup(conv, "team", "alice", "bob", "dave")
	servertest.WantPushes(conv, servertest.SystemMsg(4, "alice", "alice removed carol"), nil, true, alice, bob, dave, carolLaptop, carolPhone)

	env.WantNoPending("carol", conv)
	env.WantPending("carol", servertest.PendingRow(direct, 1, 0, 1))
	bob.WantReceipts(conv, servertest.Receipt("alice", 4, 4), servertest.Receipt("bob", 3, 3), servertest.Receipt("dave", 0, 0))
	// Her session keeps what it held, with no members (the removal she was
	// pushed is not in it); its unread is cleared, since she can no longer
	// send the read that would clear it.
	before := carolLaptop.WantSession(servertest.GroupSession(conv, "team", nil, 0, 3, 3, three, protocol.Ticks{}))

	carolLaptop.WantLockedOut(conv, direct)
	carolPhone.WantLockedOut(conv, direct)
	servertest.WantQuiet(alice, bob, dave, carolLaptop, carolPhone)
	// Nothing changed: not her session, not the group, not the direct chat
	// whose mark was in a refused frame.
	if after := carolPhone.SessionOf(conv); !reflect.DeepEqual(after, before) {
		t.Fatalf("carol's session changed while locked out:\n got %s\nwant %s", servertest.JSON(after), servertest.JSON(before))
	}
	bob.WantReceipts(conv, servertest.Receipt("alice", 4, 4), servertest.Receipt("bob", 3, 3), servertest.Receipt("dave", 0, 0))
	alice.WantReceipts(direct, servertest.Receipt("alice", 1, 1), servertest.Receipt("carol", 0, 0))
	alice.WantHistory(servertest.After(conv, 0), false, 1, 2, 3, 4)
	env.WantStoredGroup(conv, "team", "alice", "bob", "dave")
	env.WantNoPending("carol", conv)

	// Nothing new reaches her.
	// dave held the minimum at 0; his message is his implicit read.
	dave.SendMsg(conv, "after carol")
	servertest.WantPushes(conv, &servertest.WantMsg{Seq: 5, From: "dave", Body: "after carol"}, servertest.Ticks(3, 3), false, alice, bob)
	servertest.WantPushes(conv, nil, servertest.Ticks(3, 3), false, dave)
	servertest.WantQuiet(carolLaptop, carolPhone)
	env.WantNoPending("carol", conv)
	bob.Write(&protocol.Typing{Conv: conv})
	servertest.WantQuiet(bob) // bob's frames are handled in order: the typing is pushed by now
	for _, c := range []*servertest.Client{alice, dave} {
		if got := c.TakePushes(); len(got.Typing) != 1 || got.Typing[0] != (protocol.Typing{Conv: conv, User: "bob"}) {
			t.Fatalf("%s after bob's typing: %s", c.User, servertest.JSON(got.Typing))
		}
	}
	servertest.WantQuiet(carolLaptop, carolPhone)

	// Removing a non-member: the state, nothing written, nobody nudged.
	for _, users := range [][]string{{"carol"}, {"zoe"}, {"carol", "zoe"}} {
		g = bob.GroupOp(protocol.GroupOp{Conv: conv, Op: protocol.GroupRemove, Users: users})
		servertest.WantGroup(t, g, conv, "team", "alice", "bob", "dave")
		servertest.WantQuiet(alice, bob, dave, carolLaptop, carolPhone)
	}
	// Removing oneself is invalid, alone or with others.
	bob.RequestError(&protocol.GroupOp{Conv: conv, Op: protocol.GroupRemove, Users: []string{"bob"}}, protocol.CodeInvalid)
	bob.RequestError(&protocol.GroupOp{Conv: conv, Op: protocol.GroupRemove, Users: []string{"dave", "bob"}}, protocol.CodeInvalid)
	servertest.WantQuiet(alice, bob, dave, carolLaptop, carolPhone)
	env.WantStoredGroup(conv, "team", "alice", "bob", "dave")
	alice.WantHistory(protocol.History{Conv: conv, Limit: 1}, true, 5)

	// Removing two, by a member who is not the creator.
	g = dave.GroupOp(protocol.GroupOp{Conv: conv, Op: protocol.GroupRemove, Users: []string{"bob", "alice"}})
	servertest.WantGroup(t, g, conv, "team", "dave")
	removal := servertest.WantPushes(conv, servertest.SystemMsg(6, "dave", "dave removed alice and bob"), servertest.Ticks(6, 6), true, dave)
	if got := servertest.WantPushes(conv, servertest.SystemMsg(6, "dave", "dave removed alice and bob"), nil, true, alice, bob); got != removal {
		t.Fatalf("the removed were pushed %s, the members %s", servertest.JSON(got), servertest.JSON(removal))
	}
	servertest.WantQuiet(carolLaptop, carolPhone)
	alice.WantLockedOut(conv, direct)
	// Nothing after the removal reaches them.
	dave.SendMsg(conv, "after alice and bob")
	servertest.WantPushes(conv, nil, servertest.Ticks(7, 7), false, dave)
	servertest.WantQuiet(alice, bob, carolLaptop, carolPhone)
}

// 1 and 2. leave: the leaver gets the state without itself, every device
// of the members and of the leaver the message (once: nothing later); then
// the leaver is locked out. Leave takes no users or title.
func TestGroupLeave(t *testing.T) {
	env := servertest.Start(t)
	alice := env.DialReplayed(t, "alice", "laptop")
	bobLaptop := env.DialReplayed(t, "bob", "laptop")
	bobPhone := env.DialReplayed(t, "bob", "phone")
	carol := env.DialReplayed(t, "carol", "laptop")

	g := alice.CreateGroup(protocol.CreateGroup{Title: "team", Members: []string{"bob", "carol"}})
	conv := g.Conv
	sys := servertest.WantPushes(conv, servertest.SystemMsg(1, "alice", `alice created the group "team"`), nil, true, alice, bobLaptop, bobPhone, carol)
	alice.SendMsg("d:alice:bob", "direct")
	servertest.WantPushes("d:alice:bob", &servertest.WantMsg{Seq: 1, From: "alice", Body: "direct"}, nil, false, bobLaptop, bobPhone)

	bobLaptop.RequestError(&protocol.GroupOp{Conv: conv, Op: protocol.GroupLeave, Users: []string{"bob"}}, protocol.CodeInvalid)
	bobLaptop.RequestError(&protocol.GroupOp{Conv: conv, Op: protocol.GroupLeave, Title: "bye"}, protocol.CodeInvalid)
	servertest.WantQuiet(alice, bobLaptop, bobPhone, carol)

	g = bobLaptop.GroupOp(protocol.GroupOp{Conv: conv, Op: protocol.GroupLeave})
	servertest.WantGroup(t, g, conv, "team", "alice", "carol")
	servertest.WantPushes(conv, servertest.SystemMsg(2, "bob", "bob left"), nil, true, alice, carol, bobLaptop, bobPhone)
	bobPhone.WantSession(servertest.GroupSession(conv, "team", nil, 0, 1, 1, sys, protocol.Ticks{}))
	carol.WantReceipts(conv, servertest.Receipt("alice", 1, 1), servertest.Receipt("carol", 0, 0))
	env.WantNoPending("bob", conv)
	bobLaptop.WantLockedOut(conv, "d:alice:bob")
	bobPhone.WantLockedOut(conv, "d:alice:bob")
	servertest.WantQuiet(alice, bobLaptop, bobPhone, carol)
	alice.WantReceipts("d:alice:bob", servertest.Receipt("alice", 1, 1), servertest.Receipt("bob", 0, 0))

	// carol held the minimum at 0: with her gone, alice alone has read 1.
	g = carol.GroupOp(protocol.GroupOp{Conv: conv, Op: protocol.GroupLeave})
	servertest.WantGroup(t, g, conv, "team", "alice")
	left := servertest.WantPushes(conv, servertest.SystemMsg(3, "carol", "carol left"), servertest.Ticks(1, 1), true, alice)
	if got := servertest.WantPushes(conv, servertest.SystemMsg(3, "carol", "carol left"), nil, true, carol); got != left {
		t.Fatalf("carol was pushed %s, alice %s", servertest.JSON(got), servertest.JSON(left))
	}
	servertest.WantQuiet(bobLaptop, bobPhone)

	// The last member leaves: nobody is told but its own devices (the
	// message and the nudge).
	g = alice.GroupOp(protocol.GroupOp{Conv: conv, Op: protocol.GroupLeave})
	servertest.WantGroup(t, g, conv, "team")
	servertest.WantPushes(conv, servertest.SystemMsg(4, "alice", "alice left"), nil, true, alice)
	servertest.WantQuiet(bobLaptop, bobPhone, carol)
	alice.WantLockedOut(conv, "d:alice:bob")
	carol.WantLockedOut(conv, "d:alice:carol")
}

// 1. rename: the message, the new title in every member's session; the
// same title writes nothing; any member may rename; a bad title is invalid.
func TestGroupRename(t *testing.T) {
	env := servertest.Start(t)
	alice := env.DialReplayed(t, "alice", "laptop")
	bobLaptop := env.DialReplayed(t, "bob", "laptop")
	bobPhone := env.DialReplayed(t, "bob", "phone")
	carol := env.DialReplayed(t, "carol", "laptop")
	outsider := env.DialReplayed(t, "zoe", "laptop")
	everyone := []*servertest.Client{alice, bobLaptop, bobPhone, carol, outsider}
	members := []string{"alice", "bob", "carol"}

	g := alice.CreateGroup(protocol.CreateGroup{Title: "team", Members: []string{"bob", "carol"}})
	conv := g.Conv
	servertest.WantPushes(conv, servertest.SystemMsg(1, "alice", `alice created the group "team"`), nil, true, alice, bobLaptop, bobPhone, carol)

	g = alice.GroupOp(protocol.GroupOp{Conv: conv, Op: protocol.GroupRename, Title: "core"})
	servertest.WantGroup(t, g, conv, "core", members...)
	renamed := servertest.WantPushes(conv, servertest.SystemMsg(2, "alice", `alice renamed the group to "core"`), nil, true, alice, bobLaptop, bobPhone, carol)
	servertest.WantQuiet(outsider)
	alice.WantSession(servertest.GroupSession(conv, "core", members, 0, 2, 2, renamed, protocol.Ticks{}))
	bobPhone.WantSession(servertest.GroupSession(conv, "core", members, 0, 0, 2, renamed, protocol.Ticks{}))
	carol.WantSession(servertest.GroupSession(conv, "core", members, 0, 0, 2, renamed, protocol.Ticks{}))
	env.WantStoredGroup(conv, "core", members...)

	g = bobLaptop.GroupOp(protocol.GroupOp{Conv: conv, Op: protocol.GroupRename, Title: "core team"})
	servertest.WantGroup(t, g, conv, "core team", members...)
	renamed = servertest.WantPushes(conv, servertest.SystemMsg(3, "bob", `bob renamed the group to "core team"`), nil, true, alice, bobLaptop, bobPhone, carol)
	servertest.WantQuiet(outsider)
	carol.WantSession(servertest.GroupSession(conv, "core team", members, 0, 0, 3, renamed, protocol.Ticks{}))

	// The same title: the state, nothing written, nobody nudged.
	g = carol.GroupOp(protocol.GroupOp{Conv: conv, Op: protocol.GroupRename, Title: "core team"})
	servertest.WantGroup(t, g, conv, "core team", members...)
	servertest.WantQuiet(everyone...)
	alice.WantHistory(protocol.History{Conv: conv, Limit: 1}, true, 3)

	for _, title := range []string{"", "  ", "a\nb", "tab\t", strings.Repeat("x", 101)} {
		carol.RequestError(&protocol.GroupOp{Conv: conv, Op: protocol.GroupRename, Title: title}, protocol.CodeInvalid)
	}
	servertest.WantQuiet(everyone...)
	env.WantStoredGroup(conv, "core team", members...)
	alice.WantHistory(protocol.History{Conv: conv, Limit: 1}, true, 3)
}

// 1. group_op errors: unknown ops and malformed frames are invalid, a
// direct conversation is invalid, a group that does not exist is not_found,
// a user who was never a member is forbidden; none writes anything.
func TestGroupOpErrors(t *testing.T) {
	env := servertest.Start(t)
	alice := env.DialReplayed(t, "alice", "laptop")
	bob := env.DialReplayed(t, "bob", "laptop")
	zoe := env.DialReplayed(t, "zoe", "laptop")
	everyone := []*servertest.Client{alice, bob, zoe}

	g := alice.CreateGroup(protocol.CreateGroup{Title: "team", Members: []string{"bob"}})
	conv := g.Conv
	servertest.WantPushes(conv, servertest.SystemMsg(1, "alice", `alice created the group "team"`), nil, true, alice, bob)
	alice.SendMsg("d:alice:bob", "direct")
	servertest.WantPushes("d:alice:bob", &servertest.WantMsg{Seq: 1, From: "alice", Body: "direct"}, nil, false, bob)

	invalid := []protocol.GroupOp{
		{Conv: conv, Op: "promote", Users: []string{"bob"}},
		{Conv: conv, Op: ""},
		{Conv: conv, Op: "ADD", Users: []string{"zoe"}},
		{Conv: conv, Op: protocol.GroupLeave, Users: []string{"alice"}},
		{Conv: conv, Op: protocol.GroupLeave, Users: []string{"bob"}},
		{Conv: conv, Op: protocol.GroupAdd},
		{Conv: conv, Op: protocol.GroupAdd, Users: []string{}},
		{Conv: conv, Op: protocol.GroupAdd, Users: []string{"Zoe"}},
		{Conv: conv, Op: protocol.GroupAdd, Users: []string{"zoe", ""}},
		{Conv: conv, Op: protocol.GroupRemove},
		{Conv: conv, Op: protocol.GroupRemove, Users: []string{"no one"}},
		{Conv: conv, Op: protocol.GroupRename},
		{Conv: conv, Op: protocol.GroupRemove, Users: []string{"alice"}},
		{Conv: "d:alice:bob", Op: protocol.GroupAdd, Users: []string{"zoe"}},
		{Conv: "d:alice:bob", Op: protocol.GroupLeave},
		{Conv: "d:alice:bob", Op: protocol.GroupRename, Title: "x"},
		{Conv: "g:", Op: protocol.GroupLeave},
		{Conv: "biz:shop", Op: protocol.GroupLeave},
		{Conv: "", Op: protocol.GroupLeave},
		{Conv: "team", Op: protocol.GroupLeave},
	}
	for _, f := range invalid {
		alice.RequestError(&f, protocol.CodeInvalid)
	}
	for _, op := range []protocol.GroupOp{
		{Conv: "g:nosuch", Op: protocol.GroupAdd, Users: []string{"zoe"}},
		{Conv: "g:nosuch", Op: protocol.GroupRemove, Users: []string{"bob"}},
		{Conv: "g:nosuch", Op: protocol.GroupLeave},
		{Conv: "g:nosuch", Op: protocol.GroupRename, Title: "x"},
	} {
		alice.RequestError(&op, protocol.CodeNotFound)
		zoe.RequestError(&op, protocol.CodeNotFound)
	}
	for _, op := range []protocol.GroupOp{
		{Conv: conv, Op: protocol.GroupAdd, Users: []string{"zoe"}},
		{Conv: conv, Op: protocol.GroupAdd, Users: []string{"alice"}},
		{Conv: conv, Op: protocol.GroupRemove, Users: []string{"bob"}},
		{Conv: conv, Op: protocol.GroupRemove, Users: []string{"zoe"}},
		{Conv: conv, Op: protocol.GroupLeave},
		{Conv: conv, Op: protocol.GroupRename, Title: "zoe's"},
		{Conv: conv, Op: protocol.GroupRename, Title: "team"},
	} {
		zoe.RequestError(&op, protocol.CodeForbidden)
	}
	servertest.WantQuiet(everyone...)
	env.WantStoredGroup(conv, "team", "alice", "bob")
	alice.WantHistory(servertest.After(conv, 0), false, 1)
	alice.WantHistory(servertest.After("d:alice:bob", 0), false, 1)
	if _, err := env.Server.Store().Group(context.Background(), "g:nosuch"); err == nil {
		t.Fatalf("g:nosuch exists after ops on it")
	}
	if all, _ := zoe.SyncAll(""); len(all) != 0 {
		t.Fatalf("zoe has sessions: %s", servertest.JSON(all))
	}
}

// 2. A member removed and added back keeps its session, is sent the
// message of its removal and nothing of what was said while it was out, reads history from its new joining only,
// and its boundaries restart at the seq before the message that re-added
// it; the statuses of the minimum follow the current members throughout.
func TestGroupReAddedMember(t *testing.T) {
	env := servertest.Start(t)
	alice := env.DialReplayed(t, "alice", "laptop")
	bob := env.DialReplayed(t, "bob", "laptop")
	carol := env.DialReplayed(t, "carol", "laptop")
	members := []string{"alice", "bob", "carol"}

	g := alice.CreateGroup(protocol.CreateGroup{Title: "team", Members: []string{"bob", "carol"}})
	conv := g.Conv
	servertest.WantPushes(conv, servertest.SystemMsg(1, "alice", `alice created the group "team"`), nil, true, alice, bob, carol)
	two := bob.SendMsg(conv, "two")
	servertest.WantPushes(conv, &servertest.WantMsg{Seq: 2, From: "bob", Body: "two"}, nil, false, alice, carol)
	carol.MarkRead(conv, 2)
	servertest.WantStatus(conv, servertest.Ticks(1, 1), alice, bob, carol)
	pinned := protocol.SessionOp{Conv: conv, Op: "pin"}
	carol.RequestOK(&pinned)
	servertest.WantPushes(conv, nil, nil, true, carol)
	servertest.WantQuiet(alice, bob)

	g = alice.GroupOp(protocol.GroupOp{Conv: conv, Op: protocol.GroupRemove, Users: []string{"carol"}})
	servertest.WantGroup(t, g, conv, "team", "alice", "bob")
	removal := servertest.WantPushes(conv, servertest.SystemMsg(3, "alice", "alice removed carol"), servertest.Ticks(2, 2), true, alice, bob)
	if got := servertest.WantPushes(conv, servertest.SystemMsg(3, "alice", "alice removed carol"), nil, true, carol); got != removal {
		t.Fatalf("carol was pushed %s, the members %s", servertest.JSON(got), servertest.JSON(removal))
	}
	// Her session shows the ticks of when she left (1/1), not the rise her
	// leaving caused.
	out := servertest.GroupSession(conv, "team", nil, 0, 2, 2, two, protocol.Ticks{DeliveredSeq: 1, ReadSeq: 1})
	out.Priority = 1
	carol.WantSession(out)

	// While she is out.
	alice.SendMsg(conv, "four")
	servertest.WantPushes(conv, &servertest.WantMsg{Seq: 4, From: "alice", Body: "four"}, nil, false, bob)
	bob.SendMsg(conv, "five")
	servertest.WantPushes(conv, &servertest.WantMsg{Seq: 5, From: "bob", Body: "five"}, servertest.Ticks(4, 4), false, alice)
	servertest.WantStatus(conv, servertest.Ticks(4, 4), bob)
	servertest.WantQuiet(carol)
	env.WantNoPending("carol", conv)

	// Back in: boundaries at 5, only seq 6 on, the pinned session kept.
	g = bob.GroupOp(protocol.GroupOp{Conv: conv, Op: protocol.GroupAdd, Users: []string{"carol"}})
	servertest.WantGroup(t, g, conv, "team", members...)
	env.WantStoredGroup(conv, "team", members...)
	// alice, at 4, still holds the minimum.
	back := servertest.WantPushes(conv, servertest.SystemMsg(6, "bob", "bob added carol"), nil, true, alice, bob, carol)
	carol.WantReceipts(conv, servertest.Receipt("alice", 4, 4), servertest.Receipt("bob", 6, 6), servertest.Receipt("carol", 5, 5))
	in := servertest.GroupSession(conv, "team", members, 0, 5, 6, back, protocol.Ticks{DeliveredSeq: 4, ReadSeq: 4})
	in.Priority = 1
	carol.WantSession(in)
	carol.WantHistory(protocol.History{Conv: conv}, false, 6)
	carol.WantHistory(servertest.After(conv, 0), false, 6)
	carol.WantHistory(servertest.After(conv, 2), false, 6)
	carol.WantHistory(protocol.History{Conv: conv, BeforeSeq: 6}, false)
	carol.WantHistory(protocol.History{Conv: conv, BeforeSeq: 3}, false)
	env.WantPending("carol", servertest.PendingRow(conv, 6, 5, 6))

	// A member again in every way.
	seven := carol.SendMsg(conv, "seven")
	servertest.WantPushes(conv, &servertest.WantMsg{Seq: 7, From: "carol", Body: "seven"}, nil, false, alice, bob)
	env.WantNoPending("carol", conv)
	alice.MarkRead(conv, 7)
	servertest.WantStatus(conv, servertest.Ticks(6, 6), alice, bob, carol)
	bob.MarkRead(conv, 7)
	servertest.WantStatus(conv, servertest.Ticks(7, 7), alice, bob, carol)
	in = servertest.GroupSession(conv, "team", members, 0, 7, 7, seven, protocol.Ticks{DeliveredSeq: 7, ReadSeq: 7})
	in.Priority = 1
	carol.WantSession(in)

	// Out and back in again while offline: the replay starts at the
	// re-adding message.
	g = alice.GroupOp(protocol.GroupOp{Conv: conv, Op: protocol.GroupRemove, Users: []string{"carol"}})
	servertest.WantGroup(t, g, conv, "team", "alice", "bob")
	servertest.WantPushes(conv, servertest.SystemMsg(8, "alice", "alice removed carol"), nil, true, alice, bob, carol)
	carol.Close()
	bob.SendMsg(conv, "nine")
	g = alice.GroupOp(protocol.GroupOp{Conv: conv, Op: protocol.GroupAdd, Users: []string{"carol"}})
	servertest.WantGroup(t, g, conv, "team", members...)
	env.WantPending("carol", servertest.PendingRow(conv, 10, 9, 10))
	carol = env.DialReplayed(t, "carol", "phone")
	if m := carol.ExpectMsg(conv); m.Seq != 10 || m.Body != "alice added carol" || m.Kind != protocol.KindSystem {
		t.Fatalf("carol replayed %s, want seq 10 alice added carol", servertest.JSON(m))
	}
	servertest.WantQuiet(carol)
	carol.WantHistory(servertest.After(conv, 0), false, 10)
	carol.WantReceipts(conv, servertest.Receipt("alice", 10, 10), servertest.Receipt("bob", 9, 9), servertest.Receipt("carol", 9, 9))
}

// 3. A user who is not a member may neither ask for a group's receipts nor
// mark it; a refused frame changes nothing, its other marks included.
func TestGroupNonMemberReceiptsForbidden(t *testing.T) {
	env := servertest.Start(t)
	alice := env.DialReplayed(t, "alice", "laptop")
	bob := env.DialReplayed(t, "bob", "laptop")
	zoe := env.DialReplayed(t, "zoe", "laptop")
	const direct = "d:alice:zoe"

	g := alice.CreateGroup(protocol.CreateGroup{Title: "team", Members: []string{"bob"}})
	conv := g.Conv
	servertest.WantPushes(conv, servertest.SystemMsg(1, "alice", `alice created the group "team"`), nil, true, alice, bob)
	alice.SendMsg(conv, "two")
	servertest.WantPushes(conv, &servertest.WantMsg{Seq: 2, From: "alice", Body: "two"}, nil, false, bob)
	alice.SendMsg(direct, "hi zoe")
	servertest.WantPushes(direct, &servertest.WantMsg{Seq: 1, From: "alice", Body: "hi zoe"}, nil, false, zoe)

	zoe.RequestError(&protocol.ReceiptsRequest{Conv: conv}, protocol.CodeForbidden)
	for _, f := range []protocol.Frame{
		servertest.Delivered(servertest.Mark(conv, 2)),
		servertest.Read(servertest.Mark(conv, 2)),
		servertest.Delivered(servertest.Mark(direct, 1), servertest.Mark(conv, 2)),
		servertest.Read(servertest.Mark(direct, 1), servertest.Mark(conv, 2)),
		servertest.Read(servertest.Mark(conv, 1), servertest.Mark(direct, 1)),
	} {
		zoe.RequestError(f, protocol.CodeForbidden)
	}
	// A group that does not exist is not_found, and the frame is refused
	// as a whole too.
	zoe.RequestError(&protocol.ReceiptsRequest{Conv: "g:nosuch"}, protocol.CodeNotFound)
	zoe.RequestError(servertest.Delivered(servertest.Mark(direct, 1), servertest.Mark("g:nosuch", 1)), protocol.CodeNotFound)
	zoe.RequestError(servertest.Read(servertest.Mark("g:nosuch", 1)), protocol.CodeNotFound)
	// Without an id, the refusal still comes back.
	zoe.Write(servertest.Read(servertest.Mark(conv, 2)))
	if e := zoe.ExpectType("error").(*protocol.ErrorFrame); e.Code != protocol.CodeForbidden || e.ID != "" {
		t.Fatalf("read without id by a non-member: %s", servertest.JSON(e))
	}
	servertest.WantQuiet(alice, bob, zoe)
	alice.WantReceipts(conv, servertest.Receipt("alice", 2, 2), servertest.Receipt("bob", 0, 0))
	alice.WantReceipts(direct, servertest.Receipt("alice", 1, 1), servertest.Receipt("zoe", 0, 0))
	env.WantPending("zoe", servertest.PendingRow(direct, 1, 0, 1))
	if s := zoe.SessionOf(direct); s.UnreadCount != 1 || s.ReadSeq != 0 {
		t.Fatalf("zoe's direct session changed by a refused read: %s", servertest.JSON(s))
	}

	// The same marks from a member do apply.
	bob.MarkDelivered(conv, 2)
	servertest.WantStatus(conv, servertest.Ticks(2, 0), alice, bob)
	bob.WantReceipts(conv, servertest.Receipt("alice", 2, 2), servertest.Receipt("bob", 2, 0))
	servertest.WantQuiet(zoe)
}

// 4. A message's delivered tick appears only after the last member has it,
// its read tick only after the last member read it: no status before, then
// exactly one, to every device of every member; receipts list each member
// correctly throughout.
func TestGroupTicksWaitForLastMember(t *testing.T) {
	env := servertest.Start(t)
	alice := env.DialReplayed(t, "alice", "laptop")
	bobLaptop := env.DialReplayed(t, "bob", "laptop")
	bobPhone := env.DialReplayed(t, "bob", "phone")
	carol := env.DialReplayed(t, "carol", "laptop")
	dave := env.DialReplayed(t, "dave", "laptop")
	zoe := env.DialReplayed(t, "zoe", "laptop")
	all := []*servertest.Client{alice, bobLaptop, bobPhone, carol, dave}

	g := alice.CreateGroup(protocol.CreateGroup{Title: "four", Members: []string{"bob", "carol", "dave"}})
	conv := g.Conv
	servertest.WantPushes(conv, servertest.SystemMsg(1, "alice", `alice created the group "four"`), nil, true, all...)
	msg := alice.SendMsg(conv, "the message")
	servertest.WantPushes(conv, &servertest.WantMsg{Seq: 2, From: "alice", Body: "the message"}, nil, false, bobLaptop, bobPhone, carol, dave)
	servertest.WantQuiet(alice, zoe)
	seq := msg.Seq
	receipts := map[string][2]int64{"alice": {seq, seq}, "bob": {0, 0}, "carol": {0, 0}, "dave": {0, 0}}
	check := func(c *servertest.Client) {
		t.Helper()
		var want []protocol.MemberReceipt
		for _, u := range []string{"alice", "bob", "carol", "dave"} {
			want = append(want, servertest.Receipt(u, receipts[u][0], receipts[u][1]))
		}
		c.WantReceipts(conv, want...)
	}
	check(carol)

	steps := []struct {
		by    *servertest.Client
		read  bool
		ticks *protocol.Ticks // the status every device must get, nil for none
	}{
		{bobLaptop, false, nil},
		{bobPhone, false, nil}, // bob again, from his other device
		{carol, false, nil},
		{alice, false, nil}, // the sender marking its own message
		{dave, false, servertest.Ticks(seq, 0)},
		{dave, false, nil}, // again: no rise, no status
		{carol, true, nil},
		{bobPhone, true, nil},
		{bobLaptop, true, nil},
		{alice, true, nil},
		{dave, true, servertest.Ticks(seq, seq)},
		{carol, true, nil},
	}
	for i, st := range steps {
		var f protocol.Frame = servertest.Delivered(servertest.Mark(conv, seq))
		if st.read {
			f = servertest.Read(servertest.Mark(conv, seq))
		}
		st.by.MarkOK(f)
		servertest.WantStatus(conv, st.ticks, all...)
		servertest.WantStatus(conv, nil, zoe)
		r := receipts[st.by.User]
		r[0] = seq
		if st.read {
			r[1] = seq
		}
		receipts[st.by.User] = r
		check(all[i%len(all)])
	}
	for _, c := range all {
		if s := c.SessionOf(conv); s.Ticks != (protocol.Ticks{DeliveredSeq: seq, ReadSeq: seq}) {
			t.Fatalf("%s/%s: session ticks %s, want %d/%d", c.User, c.Device, servertest.JSON(s.Ticks), seq, seq)
		}
	}
}

// The minimum is over the current members: removing or losing the member
// who holds it back raises it; a new member starts at the seq before its
// joining and holds back no older message; a sender's own boundaries move
// to its message.
func TestGroupTicksFollowMembership(t *testing.T) {
	env := servertest.Start(t)
	alice := env.DialReplayed(t, "alice", "laptop")
	bob := env.DialReplayed(t, "bob", "laptop")
	carol := env.DialReplayed(t, "carol", "laptop")
	dave := env.DialReplayed(t, "dave", "laptop")
	erin := env.DialReplayed(t, "erin", "laptop")

	g := alice.CreateGroup(protocol.CreateGroup{Title: "team", Members: []string{"bob", "carol", "dave"}})
	conv := g.Conv
	servertest.WantPushes(conv, servertest.SystemMsg(1, "alice", `alice created the group "team"`), nil, true, alice, bob, carol, dave)
	alice.SendMsg(conv, "two")
	servertest.WantPushes(conv, &servertest.WantMsg{Seq: 2, From: "alice", Body: "two"}, nil, false, bob, carol, dave)
	bob.MarkRead(conv, 2)
	carol.MarkRead(conv, 2)
	servertest.WantStatus(conv, nil, alice, bob, carol, dave)

	// dave holds the minimum at 0; removing him raises it to 2.
	g = alice.GroupOp(protocol.GroupOp{Conv: conv, Op: protocol.GroupRemove, Users: []string{"dave"}})
	servertest.WantGroup(t, g, conv, "team", "alice", "bob", "carol")
	removal := servertest.WantPushes(conv, servertest.SystemMsg(3, "alice", "alice removed dave"), servertest.Ticks(2, 2), true, alice, bob, carol)
	// dave is told of his removal, but not of the rise it caused.
	if got := servertest.WantPushes(conv, servertest.SystemMsg(3, "alice", "alice removed dave"), nil, true, dave); got != removal {
		t.Fatalf("dave was pushed %s, the members %s", servertest.JSON(got), servertest.JSON(removal))
	}
	bob.WantReceipts(conv, servertest.Receipt("alice", 3, 3), servertest.Receipt("bob", 2, 2), servertest.Receipt("carol", 2, 2))

	// carol holds it at 2 after bob reads 3; her leaving raises it to 3.
	bob.MarkRead(conv, 3)
	servertest.WantStatus(conv, nil, alice, bob, carol)
	g = carol.GroupOp(protocol.GroupOp{Conv: conv, Op: protocol.GroupLeave})
	servertest.WantGroup(t, g, conv, "team", "alice", "bob")
	left := servertest.WantPushes(conv, servertest.SystemMsg(4, "carol", "carol left"), servertest.Ticks(3, 3), true, alice, bob)
	if got := servertest.WantPushes(conv, servertest.SystemMsg(4, "carol", "carol left"), nil, true, carol); got != left {
		t.Fatalf("carol was pushed %s, the members %s", servertest.JSON(got), servertest.JSON(left))
	}
	servertest.WantQuiet(dave)

	// erin joins at 4: no fall of the minimum, no status.
	alice.GroupOp(protocol.GroupOp{Conv: conv, Op: protocol.GroupAdd, Users: []string{"erin"}})
	servertest.WantPushes(conv, servertest.SystemMsg(5, "alice", "alice added erin"), nil, true, alice, bob, erin)
	erin.WantReceipts(conv, servertest.Receipt("alice", 5, 5), servertest.Receipt("bob", 3, 3), servertest.Receipt("erin", 4, 4))
	// bob reads everything: erin holds the minimum at 4, not below.
	bob.MarkRead(conv, 5)
	servertest.WantStatus(conv, servertest.Ticks(4, 4), alice, bob, erin)
	// erin's message is her implicit read of everything before it.
	erin.SendMsg(conv, "six")
	servertest.WantPushes(conv, &servertest.WantMsg{Seq: 6, From: "erin", Body: "six"}, servertest.Ticks(5, 5), false, alice, bob)
	servertest.WantStatus(conv, servertest.Ticks(5, 5), erin)
	alice.WantReceipts(conv, servertest.Receipt("alice", 5, 5), servertest.Receipt("bob", 5, 5), servertest.Receipt("erin", 6, 6))
	servertest.WantQuiet(carol, dave)
}

// 5. A send racing with the removal of its sender: every message the
// server accepted precedes the removal's system message, every later
// attempt is forbidden, and the history and the pushes agree.
func TestGroupSendRacesRemoval(t *testing.T) {
	env := servertest.Start(t)
	alice := env.DialReplayed(t, "alice", "laptop")
	carol := env.DialReplayed(t, "carol", "laptop")
	const n = 30
	for round := range 5 {
		title := fmt.Sprintf("race %d", round)
		g := alice.CreateGroup(protocol.CreateGroup{Title: title, Members: []string{"bob", "carol"}})
		conv := g.Conv
		servertest.WantPushes(conv, servertest.SystemMsg(1, "alice", fmt.Sprintf("alice created the group %q", title)), nil, true, alice, carol)

		bob := env.DialOnline(servertest.Async{TB: t}, "bob", fmt.Sprintf("race%d", round))
		type answer struct {
			id   string
			seq  int64
			code protocol.Code
		}
		answers := make([]answer, n)
		head := round * 6 // 0, 6, 12, 18, 24
		started, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			send := func(i int) {
				answers[i].id = fmt.Sprintf("race-%d-%02d", round, i)
				bob.Write(&protocol.Send{Ref: protocol.Ref{ID: answers[i].id}, Conv: conv, MsgID: answers[i].id, Body: "racing " + answers[i].id, ClientTS: 1})
			}
			collect := func(i int) {
				id := answers[i].id
				f := bob.Expect("answer to "+id, func(f protocol.Frame) bool { return servertest.RequestID(f) == id })
				switch f := f.(type) {
				case *protocol.Sent:
					answers[i].seq = f.Seq
				case *protocol.ErrorFrame:
					answers[i].code = f.Code
				default:
					t.Errorf("answer to %s: %s", id, servertest.Describe(f))
				}
			}
			// All are written at once; the removal starts once the
			// answer to send number head is in (a later one each round),
			// and races with the rest.
			for i := range n {
				send(i)
			}
			for i := range n {
				collect(i)
				if i == head {
					close(started)
				}
			}
		}()
		select {
		case <-started:
		case <-done:
			t.FailNow()
		}
		g = alice.GroupOp(protocol.GroupOp{Conv: conv, Op: protocol.GroupRemove, Users: []string{"bob"}})
		servertest.WantGroup(t, g, conv, title, "alice", "carol")
		removal := alice.Expect("the removal message", func(f protocol.Frame) bool {
			m, ok := f.(*protocol.MsgPush)
			return ok && m.Msg.Conv == conv && m.Msg.Kind == protocol.KindSystem && m.Msg.Body == "alice removed bob"
		}).(*protocol.MsgPush).Msg
		<-done
		if t.Failed() {
			t.FailNow()
		}

		// Accepted, then forbidden; the accepted ones are 2.. in order,
		// right below the removal.
		accepted := 0
		for i, a := range answers {
			switch {
			case a.code == "" && a.seq > 0:
				if accepted != i {
					t.Fatalf("round %d: send %d accepted (seq %d) after send %d was refused: %+v", round, i, a.seq, accepted, answers)
				}
				if a.seq != int64(i)+2 || a.seq >= removal.Seq {
					t.Fatalf("round %d: send %d got seq %d; want %d, below the removal at %d", round, i, a.seq, i+2, removal.Seq)
				}
				accepted++
			case a.code != protocol.CodeForbidden:
				t.Fatalf("round %d: send %d answered %+v, want sent or forbidden", round, i, a)
			}
		}
		if removal.Seq != int64(accepted)+2 {
			t.Fatalf("round %d: %d sends accepted (seqs 2..%d) but the removal is seq %d", round, accepted, accepted+1, removal.Seq)
		}
		t.Logf("round %d: %d of %d sends accepted before the removal", round, accepted, n)
		bob.RequestError(&protocol.Send{Conv: conv, MsgID: "after", Body: "after", ClientTS: 1}, protocol.CodeForbidden)

		// History: exactly the accepted messages, then the removal.
		hist := alice.WantHistory(servertest.After(conv, 0), false, servertest.SeqRange(1, removal.Seq)...)
		for i := range accepted {
			if m := hist[i+1]; m.From != "bob" || m.MsgID != answers[i].id {
				t.Fatalf("round %d: history seq %d is %s, want bob's %s", round, m.Seq, servertest.JSON(m), answers[i].id)
			}
		}
		// carol was pushed each of them once, in whatever order; alice
		// had every bob message too, and the rest of her frames are
		// bob's messages only. bob's racing device was pushed none but
		// the removal, once, and nothing of the group after it.
		for _, c := range []*servertest.Client{carol, alice} {
			got := c.TakePushes()
			seen := map[int64]int{}
			for _, m := range got.Msgs {
				seen[m.Seq]++
			}
			for seq := int64(2); seq < removal.Seq; seq++ {
				if seen[seq] != 1 {
					t.Fatalf("round %d: %s got seq %d %d times", round, c.User, seq, seen[seq])
				}
			}
			wantPushes := int(removal.Seq) - 2
			if c == carol {
				wantPushes++ // the removal message; alice's was taken above
				if seen[removal.Seq] != 1 {
					t.Fatalf("round %d: carol got the removal %d times", round, seen[removal.Seq])
				}
			}
			if len(got.Msgs) != wantPushes || len(got.Typing)+len(got.Other) > 0 {
				t.Fatalf("round %d: %s got %s %s", round, c.User, servertest.JSON(got.Msgs), servertest.DescribeAll(got.Other))
			}
		}
		told := 0
		for _, f := range bob.Barrier() {
			switch f := f.(type) {
			case *protocol.MsgPush:
				switch m := f.Msg; {
				case m.Conv != conv:
				case told == 0 && m == removal:
					told++
				case told > 0 || m.Seq != 1: // seq 1 is the replay of the create
					t.Fatalf("round %d: bob's sending device was pushed %s (after the removal: %v)", round, servertest.JSON(m), told > 0)
				}
			case *protocol.Status:
				if f.Conv == conv && told > 0 {
					t.Fatalf("round %d: bob was pushed status %s after his removal", round, servertest.JSON(f))
				}
			}
		}
		if told != 1 {
			t.Fatalf("round %d: bob's sending device was not pushed the removal %s", round, servertest.JSON(removal))
		}
		env.WantNoPending("bob", conv)
		carol.WantReceipts(conv, servertest.Receipt("alice", removal.Seq, removal.Seq), servertest.Receipt("carol", 0, 0))
		bob.Close()
	}
}

// Group changes racing with each other and with sends: four members adding
// users one by one while a fifth sends. Every send of a member is accepted
// and every add is written once, with its own message; every new member's
// boundaries, joining and pending row are those of its own message; seqs
// stay gapless.
func TestGroupConcurrentAddsAndSends(t *testing.T) {
	env := servertest.Start(t, servertest.OnSQLite)
	alice := env.DialReplayed(t, "alice", "laptop")
	adders := []string{"alice", "bob", "dave", "erin"}
	const perAdder, sends = 12, 24
	g := alice.CreateGroup(protocol.CreateGroup{Title: "busy", Members: []string{"bob", "carol", "dave", "erin"}})
	conv := g.Conv

	done := make(chan struct{})
	run := func(user string, adds bool) {
		defer func() { done <- struct{}{} }()
		c := env.DialOnline(servertest.Async{TB: t}, user, "racer")
		if !adds {
			for i := range sends {
				f := c.Request(&protocol.Send{Conv: conv, MsgID: fmt.Sprintf("c%02d", i), Body: "busy", ClientTS: 1})
				if _, ok := f.(*protocol.Sent); !ok {
					t.Errorf("%s send %d, a member all along: %s", user, i, servertest.Describe(f))
				}
			}
			return
		}
		for i := range perAdder {
			f := c.Request(&protocol.GroupOp{Conv: conv, Op: protocol.GroupAdd, Users: []string{fmt.Sprintf("%s-%02d", user, i)}})
			if _, ok := f.(*protocol.Group); !ok {
				t.Errorf("%s add %d: %s", user, i, servertest.Describe(f))
			}
		}
	}
	for _, u := range adders {
		go run(u, true)
	}
	go run("carol", false)
	for range len(adders) + 1 {
		<-done
	}

	// Whatever failed, what was written must be consistent.
	hist := alice.History(servertest.After(conv, 0)).Messages
	added := map[string]int64{}
	sent := 0
	for i, m := range hist {
		if m.Seq != int64(i)+1 {
			t.Fatalf("history seq %d at position %d: not gapless", m.Seq, i)
		}
		if m.Kind == "" {
			sent++
			continue
		}
		if i == 0 {
			continue
		}
		var actor, user string
		if _, err := fmt.Sscanf(m.Body, "%s added %s", &actor, &user); err != nil || m.From != actor || added[user] != 0 {
			t.Fatalf("message %s: want one \"<actor> added <user>\" per user", servertest.JSON(m))
		}
		added[user] = m.Seq
	}
	total := int64(len(hist))
	members := append([]string{"carol"}, adders...)
	for user := range added {
		members = append(members, user)
	}
	slices.Sort(members)
	env.WantStoredGroup(conv, "busy", members...)
	st := env.Server.Store()
	for user, seq := range added {
		m, err := st.Membership(context.Background(), conv, user)
		if err != nil || m.JoinedSeq != seq {
			t.Fatalf("%s: membership %+v (%v), want joined at %d", user, m, err, seq)
		}
		env.WantPending(user, servertest.PendingRow(conv, seq, seq-1, total))
	}
	f := alice.RequestOK(&protocol.ReceiptsRequest{Conv: conv}).(*protocol.ReceiptsReply)
	for _, r := range f.Members {
		if seq, ok := added[r.User]; ok && (r.DeliveredSeq != seq-1 || r.ReadSeq != seq-1) {
			t.Fatalf("receipts of %s: %+v, want both at %d", r.User, r, seq-1)
		}
	}
	if len(f.Members) != len(members) {
		t.Fatalf("receipts list %d members, want %d", len(f.Members), len(members))
	}
	if len(added) != len(adders)*perAdder || sent != sends {
		t.Fatalf("%d adds and %d sends written, want %d and %d", len(added), sent, len(adders)*perAdder, sends)
	}
}

// Retried creates with one key, all at once from several devices: one
// group, one message.
func TestGroupConcurrentCreateWithKey(t *testing.T) {
	env := servertest.Start(t)
	bob := env.DialReplayed(t, "bob", "laptop")
	const n = 8
	convs := make(chan string, n)
	for i := range n {
		go func() {
			answer := ""
			defer func() { convs <- answer }() // also when a fatal failure ends the goroutine
			c := env.DialOnline(servertest.Async{TB: t}, "alice", fmt.Sprintf("d%d", i))
			f := c.Request(&protocol.CreateGroup{Title: "once", Members: []string{"bob"}, Key: "retry-me"})
			if g, ok := f.(*protocol.Group); ok {
				answer = g.Conv
			} else {
				t.Errorf("create %d: %s", i, servertest.Describe(f))
			}
		}()
	}
	first := <-convs
	for range n - 1 {
		if c := <-convs; c != first || c == "" {
			t.Fatalf("concurrent creates with one key answered %q and %q", first, c)
		}
	}
	got := bob.TakePushes()
	if len(got.Msgs) != 1 || got.Msgs[0].Conv != first || got.Msgs[0].Seq != 1 {
		t.Fatalf("bob got %s, want the one create message", servertest.JSON(got.Msgs))
	}
	bob.WantHistory(servertest.After(first, 0), false, 1)
	if all, _ := bob.SyncAll(""); len(all) != 1 {
		t.Fatalf("bob has %d sessions, want 1: %s", len(all), servertest.JSON(all))
	}
}

// Right after a server starts, 48 members of a group send at the same
// moment, each from its own connection: every send is answered (seqs
// 2..49), and the server still answers and shuts down afterwards. Ten fresh
// servers, for what only happens before the first reads of the store.
func TestGroupColdStartConcurrentSends(t *testing.T) {
	for range 10 {
		grpColdStartSends(t, 48)
		if t.Failed() {
			return
		}
	}
}

func grpColdStartSends(t *testing.T, n int) {
	t.Helper()
	env := servertest.Start(t, servertest.OnSQLite)
	var users []string
	clients := make([]*servertest.Client, n)
	for i := range clients {
		users = append(users, fmt.Sprintf("u%02d", i))
		clients[i] = env.DialReplayed(t, users[i], "laptop")
	}
	g := clients[0].CreateGroup(protocol.CreateGroup{Title: "cold", Members: users[1:]})
	for i, c := range clients {
		c.Write(&protocol.Send{Ref: protocol.Ref{ID: fmt.Sprintf("cold-%d", i)}, Conv: g.Conv, MsgID: fmt.Sprintf("cold-%d", i), Body: "now", ClientTS: 1})
	}
	var seqs []int64
	for i, c := range clients {
		id := fmt.Sprintf("cold-%d", i)
		f := c.Expect("answer to "+id, func(f protocol.Frame) bool { return servertest.RequestID(f) == id })
		sent, ok := f.(*protocol.Sent)
		if !ok {
			t.Fatalf("%s: %s", id, servertest.Describe(f))
		}
		seqs = append(seqs, sent.Seq)
	}
	slices.Sort(seqs)
	if !slices.Equal(seqs, servertest.SeqRange(2, int64(n)+1)) {
		t.Fatalf("seqs %v, want 2..%d", seqs, n+1)
	}
	clients[0].WantHistory(servertest.After(g.Conv, 0), false, servertest.SeqRange(1, int64(n)+1)...)
}
