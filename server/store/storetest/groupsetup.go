package storetest

import (
	"errors"
	"slices"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// ensureGroup returns conv's state, creating the group with members (the
// first of them its creator) when it does not exist. Creating it writes
// the system message seq 1.
func ensureGroup(t *testing.T, s Engine, conv string, members []string) store.GroupState {
	t.Helper()
	g, err := s.Group(t.Context(), conv)
	if err == nil {
		return g
	}
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Group(%s): %v", conv, err)
	}
	return createGroup(t, s, conv, members[0], members...).Group
}

// createGroup creates group conv by creator with members (sorted by the
// call) and fails the test on error.
func createGroup(t *testing.T, s Engine, conv, creator string, members ...string) store.GroupResult {
	t.Helper()
	res, err := s.ChangeGroup(t.Context(), store.GroupChange{
		Conv:    conv,
		Create:  true,
		Creator: creator,
		Title:   "title of " + conv,
		Add:     protocol.GroupMembers(creator, members),
		Msg:     protocol.Message{MsgID: "create-" + conv, From: creator, Body: creator + " created the group", ClientTS: 1763800000000},
	})
	if err != nil {
		t.Fatalf("create %s: %v", conv, err)
	}
	return res
}

// newTeam creates gTeam (by carol, the first of its members) and has every
// member read its creation message, seq 1, so that every member starts with
// both boundaries and the tick minimum at 1, nothing pending and nothing
// unread: the team's first message in a test is seq 2. It returns the
// group's state (version 0).
func newTeam(t *testing.T, s Engine) store.GroupState {
	t.Helper()
	members := membersOf[gTeam]
	res := createGroup(t, s, gTeam, members[0], members...)
	if res.Msg.Seq != 1 || res.Group.Version != 0 || !slices.Equal(res.Group.Members, []string{alice, bob, carol}) {
		t.Fatalf("create %s = %+v, want the creation message at seq 1, version 0, members [alice bob carol]", gTeam, res)
	}
	for _, user := range res.Group.Members {
		mark(t, s, user, store.MarkRead, mk(gTeam, 1))
	}
	checkReceipts(t, s, gTeam, rcpt(alice, 1, 1), rcpt(bob, 1, 1), rcpt(carol, 1, 1))
	if got, want := minimum(t, s, gTeam), (protocol.Ticks{DeliveredSeq: 1, ReadSeq: 1}); got != want {
		t.Fatalf("%s's minimum after every member read the creation = %+v, want %+v", gTeam, got, want)
	}
	for _, user := range res.Group.Members {
		for _, p := range pending(t, s, user) {
			if p.Conv == gTeam {
				t.Fatalf("Pending(%s) after reading %s's creation has %+v, want no row", user, gTeam, p)
			}
		}
		if ss := sessionOf(t, s, user, gTeam, ""); ss.WriteSeq != 1 || ss.ReadSeq != 1 || ss.UnreadCount != 0 {
			t.Fatalf("%s's %s session after reading the creation = %+v, want write_seq 1, read_seq 1, unread 0", user, gTeam, ss)
		}
	}
	return res.Group
}
