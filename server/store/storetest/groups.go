package storetest

import (
	"errors"
	"slices"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// groupTests are the promises of ChangeGroup, Group and Membership.
var groupTests = []storeTest{
	{"GroupCreate", testGroupCreate},
	{"GroupCreateKey", testGroupCreateKey},
	{"GroupAdd", testGroupAdd},
	{"GroupRemove", testGroupRemove},
	{"GroupRemoveSlowestRaisesTicks", testGroupRemoveSlowestRaisesTicks},
	{"GroupRename", testGroupRename},
	{"GroupStaleVersion", testGroupStaleVersion},
	{"GroupReAdd", testGroupReAdd},
}

const gCrew = "g:crew"

// groupMsg is a system message for a group change by actor.
func groupMsg(actor, id string) protocol.Message {
	return protocol.Message{MsgID: id, From: actor, Body: actor + " did " + id, ClientTS: 1763800000000}
}

// changeOK applies a change and fails the test on error.
func changeOK(t *testing.T, s Engine, req store.GroupChange) store.GroupResult {
	t.Helper()
	res, err := s.ChangeGroup(t.Context(), req)
	if err != nil {
		t.Fatalf("ChangeGroup(%+v): %v", req, err)
	}
	return res
}

// groupOf reads a group and fails the test on error.
func groupOf(t *testing.T, s Engine, conv string) store.GroupState {
	t.Helper()
	g, err := s.Group(t.Context(), conv)
	if err != nil {
		t.Fatalf("Group(%s): %v", conv, err)
	}
	return g
}

// joinedAt returns user's JoinedSeq in conv, or -1 when not a member.
func joinedAt(t *testing.T, s Engine, conv, user string) int64 {
	t.Helper()
	m, err := s.Membership(t.Context(), conv, user)
	if errors.Is(err, store.ErrNotFound) {
		return -1
	}
	if err != nil {
		t.Fatalf("Membership(%s, %s): %v", conv, user, err)
	}
	return m.JoinedSeq
}

// sendTo appends a plain message to a group at its current membership.
func sendTo(t *testing.T, s Engine, conv, from, msgID string) protocol.Message {
	t.Helper()
	g := groupOf(t, s, conv)
	res, err := s.Append(t.Context(), store.AppendRequest{
		Msg:     protocol.Message{Conv: conv, MsgID: msgID, From: from, Body: "body of " + msgID, ClientTS: 1},
		Members: g.Members, MembersVersion: g.Version,
	})
	if err != nil {
		t.Fatalf("Append(%s, %s): %v", conv, msgID, err)
	}
	return res.Msg
}

func newCrew(t *testing.T, s Engine) store.GroupResult {
	t.Helper()
	return changeOK(t, s, store.GroupChange{
		Conv: gCrew, Create: true, Creator: alice, Title: "crew",
		Add: []string{alice, bob, carol}, Msg: groupMsg(alice, "create"),
	})
}

func testGroupCreate(t *testing.T, s Engine) {
	if _, err := s.Group(t.Context(), gCrew); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Group of a group never created: err = %v, want ErrNotFound", err)
	}
	res := newCrew(t, s)
	want := store.GroupState{Conv: gCrew, Title: "crew", Members: []string{alice, bob, carol}, Version: res.Group.Version}
	if !slices.Equal(res.Group.Members, want.Members) || res.Group.Title != "crew" || res.Existing {
		t.Fatalf("created group = %+v (existing %v), want %+v", res.Group, res.Existing, want)
	}
	if got := groupOf(t, s, gCrew); got.Title != want.Title || !slices.Equal(got.Members, want.Members) || got.Version != want.Version {
		t.Errorf("Group = %+v, want %+v", got, want)
	}
	if m := res.Msg; m.Seq != 1 || m.Kind != protocol.KindSystem || m.From != alice || m.Conv != gCrew {
		t.Errorf("creation message = %+v, want seq 1, kind system, from alice", m)
	}
	if got := seqsOf(all(t, s, gCrew)); !slices.Equal(got, []int64{1}) {
		t.Errorf("history = %v, want [1]", got)
	}
	for _, u := range []string{alice, bob, carol} {
		if j := joinedAt(t, s, gCrew, u); j != 1 {
			t.Errorf("%s joined at %d, want 1", u, j)
		}
		if _, ok := res.Cursors[u]; !ok {
			t.Errorf("Cursors lack %s: %v", u, res.Cursors)
		}
	}
	checkReceipts(t, s, gCrew, rcpt(alice, 1, 1), rcpt(bob, 0, 0), rcpt(carol, 0, 0))
	checkPending(t, s, bob, row(gCrew, 1, 0, 1))
	checkPending(t, s, alice)
	// The creation is a system message: an event, not unread.
	for user, unread := range map[string]int64{alice: 0, bob: 0, carol: 0} {
		ss := sessionOf(t, s, user, gCrew, "")
		if ss.Title != "crew" || ss.Kind != "group" || !slices.Equal(ss.Members, want.Members) || ss.UnreadCount != unread || ss.WriteSeq != 1 {
			t.Errorf("%s's session = %+v, want title crew, members %v, unread %d, write_seq 1", user, ss, want.Members, unread)
		}
		if res.Cursors[user] != ss.ActiveTS {
			t.Errorf("cursor of %s = %d, want its session's active_ts %d", user, res.Cursors[user], ss.ActiveTS)
		}
	}
}

func testGroupCreateKey(t *testing.T, s Engine) {
	req := store.GroupChange{Conv: gCrew, Create: true, Creator: alice, Key: "k1", Title: "crew",
		Add: []string{alice, bob}, Msg: groupMsg(alice, "create")}
	first := changeOK(t, s, req)
	retry := req
	retry.Conv, retry.Msg = "g:other", groupMsg(alice, "create-again")
	again := changeOK(t, s, retry)
	if !again.Existing || again.Group.Conv != gCrew || !slices.Equal(again.Group.Members, first.Group.Members) {
		t.Fatalf("retried create = %+v, want the existing %s", again, gCrew)
	}
	if _, err := s.Group(t.Context(), "g:other"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a retried create made a second group: err = %v", err)
	}
	if got := seqsOf(all(t, s, gCrew)); !slices.Equal(got, []int64{1}) {
		t.Errorf("history after a retried create = %v, want [1]", got)
	}
	// The key is the creator's: bob's k1 is another group.
	other := req
	other.Creator, other.Conv, other.Msg = bob, "g:bobs", groupMsg(bob, "create")
	if res := changeOK(t, s, other); res.Existing || res.Group.Conv != "g:bobs" {
		t.Errorf("bob's create with alice's key = %+v, want a new group g:bobs", res)
	}
}

func testGroupAdd(t *testing.T, s Engine) {
	g := newCrew(t, s).Group
	sendTo(t, s, gCrew, bob, "b1") // seq 2
	res := changeOK(t, s, store.GroupChange{Conv: gCrew, Version: g.Version, Add: []string{"dave"}, Msg: groupMsg(alice, "add")})
	if res.Msg.Seq != 3 || res.Msg.Kind != protocol.KindSystem {
		t.Fatalf("add message = %+v, want seq 3, kind system", res.Msg)
	}
	if res.Group.Version == g.Version || !slices.Equal(res.Group.Members, []string{alice, bob, carol, "dave"}) {
		t.Errorf("after add: %+v, want dave a member and the version moved", res.Group)
	}
	if j := joinedAt(t, s, gCrew, "dave"); j != 3 {
		t.Errorf("dave joined at %d, want 3", j)
	}
	// dave's boundaries start before its joining: it holds back nothing older.
	if got := boundary(t, s, gCrew, "dave"); got != rcpt("dave", 2, 2) {
		t.Errorf("dave's boundaries = %+v, want 2/2", got)
	}
	checkPending(t, s, "dave", row(gCrew, 3, 2, 3))
	ds := sessionOf(t, s, "dave", gCrew, "")
	if ds.ReadSeq != 2 || ds.WriteSeq != 3 || ds.UnreadCount != 0 {
		t.Errorf("dave's session = %+v, want read 2, write 3, unread 0 (his adding is a system message)", ds)
	}
	// History from dave's joining on only.
	msgs, more, err := s.History(t.Context(), gCrew, store.HistoryQuery{MinSeq: 3, Limit: 10})
	if err != nil || !slices.Equal(seqsOf(msgs), []int64{3}) || more {
		t.Errorf("history from seq 3 = %v (more %v, err %v), want [3]", seqsOf(msgs), more, err)
	}
	msgs, _, err = s.History(t.Context(), gCrew, store.HistoryQuery{After: true, AfterSeq: 0, MinSeq: 3, Limit: 10})
	if err != nil || !slices.Equal(seqsOf(msgs), []int64{3}) {
		t.Errorf("history after 0 from seq 3 = %v (err %v), want [3]", seqsOf(msgs), err)
	}
}

func testGroupRemove(t *testing.T, s Engine) {
	g := newCrew(t, s).Group
	before := sessionOf(t, s, carol, gCrew, "")
	res := changeOK(t, s, store.GroupChange{Conv: gCrew, Version: g.Version, Remove: []string{carol}, Msg: groupMsg(alice, "remove")})
	if !slices.Equal(res.Group.Members, []string{alice, bob}) {
		t.Fatalf("members after remove = %v", res.Group.Members)
	}
	if j := joinedAt(t, s, gCrew, carol); j != -1 {
		t.Errorf("carol still a member (joined %d)", j)
	}
	checkReceipts(t, s, gCrew, rcpt(alice, 2, 2), rcpt(bob, 0, 0))
	checkPending(t, s, carol)
	after := sessionOf(t, s, carol, gCrew, "")
	// Her session keeps its messages and place; its unread is cleared (she
	// can no longer send the read that would clear it).
	if after.WriteSeq != before.WriteSeq || after.WriteTS != before.WriteTS || after.ReadSeq != before.WriteSeq || after.UnreadCount != 0 {
		t.Errorf("carol's session after removal: %+v -> %+v, want write_seq and write_ts kept, read up to write_seq, unread 0", before, after)
	}
	checkTotal(t, s, carol, "", 0)
	if after.ActiveTS <= before.ActiveTS || res.Cursors[carol] != after.ActiveTS {
		t.Errorf("carol's active_ts %d -> %d (cursor %d), want it moved and reported", before.ActiveTS, after.ActiveTS, res.Cursors[carol])
	}
	if len(after.Members) != 0 {
		t.Errorf("carol's session lists members %v after her removal, want none", after.Members)
	}
	// What the group does next is not hers to see: a rename and a rise of
	// the ticks leave her session's title and ticks as they were.
	g = res.Group
	changeOK(t, s, store.GroupChange{Conv: gCrew, Version: g.Version, Title: "secret", Msg: groupMsg(alice, "rename")})
	mark(t, s, bob, store.MarkRead, mk(gCrew, 3))
	if got := sessionOf(t, s, carol, gCrew, ""); got.Title != "crew" || got.Ticks != after.Ticks || got.ActiveTS != after.ActiveTS {
		t.Errorf("carol's session after a rename and a tick rise = %+v, want title crew, ticks %+v, active_ts %d", got, after.Ticks, after.ActiveTS)
	}
	after = sessionOf(t, s, carol, gCrew, "")
	// Nothing new reaches carol: a message leaves her session alone.
	sendTo(t, s, gCrew, bob, "b1")
	if got := sessionOf(t, s, carol, gCrew, ""); got.ActiveTS != after.ActiveTS || got.WriteSeq != after.WriteSeq {
		t.Errorf("a message after her removal moved carol's session: %+v", got)
	}
	checkPending(t, s, carol)
}

func testGroupRemoveSlowestRaisesTicks(t *testing.T, s Engine) {
	g := newCrew(t, s).Group
	m := sendTo(t, s, gCrew, alice, "a1") // seq 2
	mark(t, s, bob, store.MarkRead, mk(gCrew, m.Seq))
	if got := minimum(t, s, gCrew); got != (protocol.Ticks{}) {
		t.Fatalf("ticks with carol at 0 = %+v", got)
	}
	res := changeOK(t, s, store.GroupChange{Conv: gCrew, Version: g.Version, Remove: []string{carol}, Msg: groupMsg(bob, "remove")})
	// bob sent the removal (seq 3); alice is at 2: the minimum is 2.
	want := protocol.Ticks{DeliveredSeq: 2, ReadSeq: 2}
	if res.Ticks == nil || *res.Ticks != want {
		t.Errorf("removing the slowest member: Ticks = %v, want %+v", res.Ticks, want)
	}
}

func testGroupRename(t *testing.T, s Engine) {
	g := newCrew(t, s).Group
	res := changeOK(t, s, store.GroupChange{Conv: gCrew, Version: g.Version, Title: "core", Msg: groupMsg(bob, "rename")})
	if res.Group.Title != "core" || res.Group.Version != g.Version {
		t.Errorf("after rename: %+v, want title core and the same membership version", res.Group)
	}
	for _, u := range []string{alice, bob, carol} {
		if ss := sessionOf(t, s, u, gCrew, ""); ss.Title != "core" {
			t.Errorf("%s's session title = %q, want core", u, ss.Title)
		}
	}
}

func testGroupStaleVersion(t *testing.T, s Engine) {
	g := newCrew(t, s).Group
	changeOK(t, s, store.GroupChange{Conv: gCrew, Version: g.Version, Add: []string{"dave"}, Msg: groupMsg(alice, "add")})
	_, err := s.ChangeGroup(t.Context(), store.GroupChange{Conv: gCrew, Version: g.Version, Remove: []string{bob}, Msg: groupMsg(alice, "stale")})
	if !errors.Is(err, store.ErrStaleMembers) {
		t.Fatalf("change at a stale version: err = %v, want ErrStaleMembers", err)
	}
	_, err = s.Append(t.Context(), store.AppendRequest{
		Msg:     protocol.Message{Conv: gCrew, MsgID: "late", From: bob, Body: "x", ClientTS: 1},
		Members: g.Members, MembersVersion: g.Version,
	})
	if !errors.Is(err, store.ErrStaleMembers) {
		t.Fatalf("append at a stale version: err = %v, want ErrStaleMembers", err)
	}
	if j := joinedAt(t, s, gCrew, bob); j != 1 {
		t.Errorf("the refused removal changed bob's membership: joined %d", j)
	}
	if got := seqsOf(all(t, s, gCrew)); !slices.Equal(got, []int64{1, 2}) {
		t.Errorf("history = %v, want [1 2]: refused writes store nothing", got)
	}
	_, err = s.Append(t.Context(), store.AppendRequest{
		Msg: protocol.Message{Conv: "g:nosuch", MsgID: "m", From: bob, Body: "x", ClientTS: 1},
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("append to a group never created: err = %v, want ErrNotFound", err)
	}
}

func testGroupReAdd(t *testing.T, s Engine) {
	g := newCrew(t, s).Group
	g = changeOK(t, s, store.GroupChange{Conv: gCrew, Version: g.Version, Remove: []string{carol}, Msg: groupMsg(alice, "remove")}).Group // seq 2
	sendTo(t, s, gCrew, bob, "while-out")                                                                                                 // seq 3
	res := changeOK(t, s, store.GroupChange{Conv: gCrew, Version: g.Version, Add: []string{carol}, Msg: groupMsg(alice, "add")})          // seq 4
	if j := joinedAt(t, s, gCrew, carol); j != 4 {
		t.Errorf("carol re-joined at %d, want 4", j)
	}
	if got := boundary(t, s, gCrew, carol); got != rcpt(carol, 3, 3) {
		t.Errorf("carol's boundaries after re-add = %+v, want 3/3", got)
	}
	ss := sessionOf(t, s, carol, gCrew, "")
	if ss.ReadSeq != 3 || ss.WriteSeq != 4 || ss.UnreadCount != 0 || !slices.Equal(ss.Members, res.Group.Members) {
		t.Errorf("carol's session after re-add = %+v, want read 3, write 4, unread 0 (a system message), members %v", ss, res.Group.Members)
	}
	checkPending(t, s, carol, row(gCrew, 4, 3, 4))
	if ss.Title != "crew" || ss.Ticks != minimum(t, s, gCrew) {
		t.Errorf("carol's session after re-add shows title %q, ticks %+v; want the group's", ss.Title, ss.Ticks)
	}
}
