// Package backendtest is the conformance suite of store.Backend: the
// storage contract alone, below the domain engine. Every backend runs it
// from its own tests (and storetest, the domain's suite, through the
// engine). It tests only what store.Backend documents.
package backendtest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/blob"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/session"
)

// Run runs the suite, one subtest per promise, each against a fresh empty
// backend from open, which arranges to close it when the subtest ends.
// open is given a fresh, empty blob store of the subtest: a backend that
// archives (store.Archiver) must be opened on it, as the Archive case
// reads what was moved there; other backends ignore it.
func Run(t *testing.T, open func(t *testing.T, blobs blob.Store) store.Backend) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, b store.Backend)
	}{
		{"AppendSequences", testAppendSequences},
		{"AppendIdempotent", testAppendIdempotent},
		{"AppendConcurrent", testAppendConcurrent},
		{"AppendAt", testAppendAt},
		{"HistoryPages", testHistoryPages},
		{"MessageAndSenders", testMessageAndSenders},
		{"ConversationRecord", testConversationRecord},
		{"ChangeGroup", testChangeGroup},
		{"ApplyBoundaries", testApplyBoundaries},
		{"ApplyPending", testApplyPending},
		{"ApplyNewerWins", testApplyNewerWins},
		{"ApplyIsIdempotent", testApplyIsIdempotent},
		{"Unrepaired", testUnrepaired},
		{"SessionReads", testSessionReads},
		{"Accounts", testAccounts},
		{"People", testPeople},
		{"Closed", testClosed},
		{"RepliesAndRelationsStored", testRepliesAndRelationsStored},
		{"RelationsApplyToTarget", testRelationsApplyToTarget},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t, newBlobs(t))) })
	}
	t.Run("Archive", func(t *testing.T) {
		blobs := newBlobs(t)
		testArchive(t, open(t, blobs), blobs)
	})
	t.Run("DeletionErases", func(t *testing.T) {
		blobs := newBlobs(t)
		testDeletionErases(t, open(t, blobs), blobs)
	})
}

// newBlobs returns an empty blob store in a directory of the test.
func newBlobs(t *testing.T) blob.Store {
	t.Helper()
	blobs, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return blobs
}

const (
	dAB   = "d:alice:bob"
	gTeam = "g:team"
)

func msg(conv, from, id string) protocol.Message {
	return protocol.Message{Conv: conv, MsgID: id, From: from, Body: "body of " + id, ClientTS: 7, ServerTS: 1763800000000}
}

func appendOK(t *testing.T, b store.Backend, m protocol.Message) store.AppendResult {
	t.Helper()
	res, err := b.Append(t.Context(), m)
	if err != nil {
		t.Fatalf("Append(%s, %s): %v", m.Conv, m.MsgID, err)
	}
	return res
}

func apply(t *testing.T, b store.Backend, d store.Derived) {
	t.Helper()
	if err := b.Apply(t.Context(), d); err != nil {
		t.Fatalf("Apply: %v", err)
	}
}

func conversation(t *testing.T, b store.Backend, conv string) store.ConvRecord {
	t.Helper()
	rec, err := b.Conversation(t.Context(), conv)
	if err != nil {
		t.Fatalf("Conversation(%s): %v", conv, err)
	}
	return rec
}

func member(rec store.ConvRecord, user string) store.MemberRecord {
	for _, m := range rec.Members {
		if m.User == user {
			return m
		}
	}
	return store.MemberRecord{}
}

// createTeam creates gTeam with alice (its creator), bob and carol; the
// creation message is seq 1.
func createTeam(t *testing.T, b store.Backend) store.GroupRecordResult {
	t.Helper()
	res, err := b.ChangeGroup(t.Context(), store.GroupChange{Conv: gTeam, Create: true, Creator: "alice", Key: "k",
		Title: "team", Add: []string{"alice", "bob", "carol"}, Msg: sysMsg(gTeam, "alice", "create")})
	if err != nil {
		t.Fatalf("create %s: %v", gTeam, err)
	}
	return res
}

func sysMsg(conv, from, id string) protocol.Message {
	m := msg(conv, from, id)
	m.Kind = protocol.KindSystem
	return m
}

func testAppendSequences(t *testing.T, b store.Backend) {
	for i := 1; i <= 3; i++ {
		res := appendOK(t, b, msg(dAB, "alice", fmt.Sprint("m", i)))
		want := msg(dAB, "alice", fmt.Sprint("m", i))
		want.Seq = int64(i)
		if res.Duplicate || res.Msg != want {
			t.Fatalf("append %d = %+v, want %+v", i, res, want)
		}
	}
	if _, err := b.Append(t.Context(), msg(gTeam, "alice", "x")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Append to a group that does not exist: %v, want ErrNotFound", err)
	}
	if rec := conversation(t, b, dAB); rec.MaxSeq != 3 || rec.Kind != protocol.ConvDirect || rec.DerivedSeq != 0 {
		t.Errorf("Conversation after 3 appends = %+v", rec)
	}
}

func testAppendIdempotent(t *testing.T, b store.Backend) {
	first := appendOK(t, b, msg(dAB, "alice", "m1"))
	again := msg(dAB, "alice", "m1")
	again.Body = "another body"
	if dup := appendOK(t, b, again); !dup.Duplicate || dup.Msg != first.Msg {
		t.Errorf("repeat = %+v, want the original %+v with Duplicate", dup, first.Msg)
	}
	if _, err := b.Append(t.Context(), msg(dAB, "bob", "m1")); !errors.Is(err, store.ErrMsgIDTaken) {
		t.Errorf("another sender's msg_id: %v, want ErrMsgIDTaken", err)
	}
	if res := appendOK(t, b, msg(dAB, "bob", "m2")); res.Msg.Seq != 2 {
		t.Errorf("after the repeats: seq %d, want 2 (no seq consumed)", res.Msg.Seq)
	}
}

func testAppendConcurrent(t *testing.T, b store.Backend) {
	const n = 50
	seqs := make([]int64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := b.Append(t.Context(), msg(dAB, "alice", fmt.Sprint("c", i)))
			if err != nil {
				t.Errorf("append %d: %v", i, err)
			}
			seqs[i] = res.Msg.Seq
		}()
	}
	wg.Wait()
	slices.Sort(seqs)
	for i, s := range seqs {
		if s != int64(i+1) {
			t.Fatalf("concurrent seqs %v, want 1..%d", seqs, n)
		}
	}
}

func testHistoryPages(t *testing.T, b store.Backend) {
	for i := 1; i <= 10; i++ {
		appendOK(t, b, msg(dAB, "alice", fmt.Sprintf("m%02d", i)))
	}
	seqs := func(q store.HistoryQuery) ([]int64, bool) {
		msgs, more, err := b.History(t.Context(), dAB, q)
		if err != nil {
			t.Fatalf("History(%+v): %v", q, err)
		}
		var out []int64
		for _, m := range msgs {
			out = append(out, m.Seq)
		}
		return out, more
	}
	check := func(q store.HistoryQuery, want []int64, wantMore bool) {
		t.Helper()
		got, more := seqs(q)
		if !slices.Equal(got, want) || more != wantMore {
			t.Errorf("History(%+v) = %v more %v, want %v more %v", q, got, more, want, wantMore)
		}
	}
	check(store.HistoryQuery{Limit: 3}, []int64{8, 9, 10}, true)
	check(store.HistoryQuery{BeforeSeq: 3, Limit: 5}, []int64{1, 2}, false)
	check(store.HistoryQuery{After: true, AfterSeq: 7, Limit: 5}, []int64{8, 9, 10}, false)
	check(store.HistoryQuery{After: true, AfterSeq: 0, MinSeq: 4, Limit: 2}, []int64{4, 5}, true)
	check(store.HistoryQuery{BeforeSeq: 6, MinSeq: 4, Limit: 5}, []int64{4, 5}, false)
	one := msg(dAB, "alice", "m01")
	one.Seq = 1
	check(store.HistoryQuery{Limit: 10, MaxBytes: 1}, []int64{10}, true)
	check(store.HistoryQuery{After: true, Limit: 10, MaxBytes: 2*(one.EncodedLen()+1) + 5}, []int64{1, 2}, true)
	if msgs, more, err := b.History(t.Context(), "d:alice:zed", store.HistoryQuery{Limit: 5}); err != nil || len(msgs) != 0 || more {
		t.Errorf("History of an empty conversation = %v %v %v", msgs, more, err)
	}
}

func testMessageAndSenders(t *testing.T, b store.Backend) {
	appendOK(t, b, msg(dAB, "alice", "a1"))
	appendOK(t, b, msg(dAB, "bob", "b2"))
	appendOK(t, b, msg(dAB, "alice", "a3"))
	m, err := b.Message(t.Context(), dAB, 2)
	if err != nil || m.MsgID != "b2" || m.Seq != 2 {
		t.Errorf("Message(2) = %+v, %v", m, err)
	}
	if _, err := b.Message(t.Context(), dAB, 9); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Message(9): %v, want ErrNotFound", err)
	}
	senders, err := b.Senders(t.Context(), dAB, 1, 3)
	slices.Sort(senders)
	if err != nil || !slices.Equal(senders, []string{"alice", "bob"}) {
		t.Errorf("Senders(1, 3] = %v, %v", senders, err)
	}
	if senders, _ := b.Senders(t.Context(), dAB, 0, 1); !slices.Equal(senders, []string{"alice"}) {
		t.Errorf("Senders(0, 1] = %v", senders)
	}
}

func testConversationRecord(t *testing.T, b store.Backend) {
	if _, err := b.Conversation(t.Context(), dAB); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Conversation before the first message: %v, want ErrNotFound", err)
	}
	appendOK(t, b, msg(dAB, "alice", "m1"))
	apply(t, b, store.Derived{
		Boundaries: []store.BoundaryRow{{User: "alice", Conv: dAB, DeliveredSeq: 1, ReadSeq: 1}},
		Pending:    []store.PendingRow{{User: "bob", Conv: dAB, FirstUndelivered: 1}},
		Convs:      []store.ConvDerived{{Conv: dAB, Ticks: protocol.Ticks{DeliveredSeq: 0}, DerivedSeq: 1}},
	})
	rec := conversation(t, b, dAB)
	if len(rec.Members) != 2 || rec.Members[0].User != "alice" || rec.Members[1].User != "bob" {
		t.Fatalf("direct members = %+v", rec.Members)
	}
	if a := member(rec, "alice"); a.DeliveredSeq != 1 || a.ReadSeq != 1 || !a.HasBoundaries || a.IsPending {
		t.Errorf("alice = %+v", a)
	}
	if bob := member(rec, "bob"); bob.HasBoundaries || !bob.IsPending || bob.FirstUndelivered != 1 {
		t.Errorf("bob = %+v", bob)
	}
	if rec.DerivedSeq != 1 || rec.MaxSeq != 1 {
		t.Errorf("record = %+v", rec)
	}
}

func testChangeGroup(t *testing.T, b store.Backend) {
	res := createTeam(t, b)
	if res.Existing || res.Msg.Seq != 1 || res.Group.Version != 0 || !slices.Equal(res.Group.Members, []string{"alice", "bob", "carol"}) || res.Group.Title != "team" {
		t.Fatalf("create = %+v", res)
	}
	again, err := b.ChangeGroup(t.Context(), store.GroupChange{Conv: "g:other", Create: true, Creator: "alice", Key: "k",
		Title: "team", Add: []string{"alice"}, Msg: sysMsg("g:other", "alice", "create")})
	if err != nil || !again.Existing || again.Group.Conv != gTeam {
		t.Fatalf("create with the same key = %+v, %v; want the first group", again, err)
	}
	if _, err := b.ChangeGroup(t.Context(), store.GroupChange{Conv: gTeam, Version: 7, Add: []string{"dave"}, Msg: sysMsg(gTeam, "alice", "stale")}); !errors.Is(err, store.ErrStaleMembers) {
		t.Errorf("a change at a stale version: %v, want ErrStaleMembers", err)
	}
	if _, err := b.ChangeGroup(t.Context(), store.GroupChange{Conv: "g:nosuch", Add: []string{"dave"}, Msg: sysMsg("g:nosuch", "alice", "x")}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a change of no group: %v, want ErrNotFound", err)
	}
	ch, err := b.ChangeGroup(t.Context(), store.GroupChange{Conv: gTeam, Version: 0, Add: []string{"dave"}, Remove: []string{"bob"},
		Title: "core", Msg: sysMsg(gTeam, "alice", "change")})
	if err != nil {
		t.Fatal(err)
	}
	if ch.Msg.Seq != 2 || ch.Group.Version != 1 || ch.Group.Title != "core" || !slices.Equal(ch.Group.Members, []string{"alice", "carol", "dave"}) {
		t.Fatalf("change = %+v", ch)
	}
	rec := conversation(t, b, gTeam)
	if rec.Version != 1 || rec.MaxSeq != 2 || rec.Title != "core" || len(rec.Members) != 3 || member(rec, "dave").JoinedSeq != 2 || member(rec, "carol").JoinedSeq != 1 {
		t.Errorf("record after the change = %+v", rec)
	}
	got, err := b.GroupChangeAt(t.Context(), gTeam, 2)
	if err != nil || !slices.Equal(got.Add, []string{"dave"}) || !slices.Equal(got.Remove, []string{"bob"}) || got.Title != "core" || got.Create {
		t.Errorf("GroupChangeAt(2) = %+v, %v", got, err)
	}
	if c, err := b.GroupChangeAt(t.Context(), gTeam, 1); err != nil || !c.Create || !slices.Equal(c.Add, []string{"alice", "bob", "carol"}) {
		t.Errorf("GroupChangeAt(1) = %+v, %v", c, err)
	}
	appendOK(t, b, msg(gTeam, "carol", "plain"))
	if _, err := b.GroupChangeAt(t.Context(), gTeam, 3); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GroupChangeAt of a plain message: %v, want ErrNotFound", err)
	}
}

func testApplyBoundaries(t *testing.T, b store.Backend) {
	createTeam(t, b)
	for i := 2; i <= 6; i++ {
		appendOK(t, b, msg(gTeam, "alice", fmt.Sprint("m", i)))
	}
	row := func(u string, d, r int64) store.BoundaryRow {
		return store.BoundaryRow{User: u, Conv: gTeam, DeliveredSeq: d, ReadSeq: r}
	}
	apply(t, b, store.Derived{Boundaries: []store.BoundaryRow{row("bob", 4, 2), row("carol", 0, 3)}})
	apply(t, b, store.Derived{Boundaries: []store.BoundaryRow{row("bob", 3, 1)}}) // lower: kept
	rec := conversation(t, b, gTeam)
	if bob := member(rec, "bob"); bob.DeliveredSeq != 4 || bob.ReadSeq != 2 {
		t.Errorf("bob after a lower merge = %+v, want 4/2", bob)
	}
	if carol := member(rec, "carol"); carol.DeliveredSeq != 3 || carol.ReadSeq != 3 {
		t.Errorf("carol = %+v, want read implying delivered: 3/3", carol)
	}
	apply(t, b, store.Derived{Boundaries: []store.BoundaryRow{row("bob", 3, 3)}}) // read rises, delivered is above
	if bob := member(conversation(t, b, gTeam), "bob"); bob.DeliveredSeq != 4 || bob.ReadSeq != 3 {
		t.Errorf("bob after a merge raising only read = %+v, want 4/3", bob)
	}
	// bob leaves at 5 and is added back at 6: the old row's delete does
	// not touch the new one, applied in either order.
	gone := store.Derived{Gone: []store.MemberGone{{User: "bob", Conv: gTeam, Before: 5}}}
	join := store.Derived{Boundaries: []store.BoundaryRow{{User: "bob", Conv: gTeam, DeliveredSeq: 5, ReadSeq: 5, Join: true, JoinedSeq: 6}}}
	apply(t, b, gone)
	apply(t, b, join)
	apply(t, b, gone) // late
	apply(t, b, store.Derived{Boundaries: []store.BoundaryRow{row("bob", 6, 0)}})
	apply(t, b, join) // late: merges, never resets what came after
	if bob := member(conversation(t, b, gTeam), "bob"); !bob.HasBoundaries || bob.DeliveredSeq != 6 || bob.ReadSeq != 5 {
		t.Errorf("bob after leaving and joining again = %+v, want 6/5", bob)
	}
}

func testApplyPending(t *testing.T, b store.Backend) {
	appendOK(t, b, msg(dAB, "alice", "m1"))
	appendOK(t, b, msg(dAB, "alice", "m2"))
	appendOK(t, b, msg(dAB, "alice", "m3"))
	pending := func() []store.PendingDelivery {
		ps, err := b.Pending(t.Context(), "bob")
		if err != nil {
			t.Fatal(err)
		}
		return ps
	}
	apply(t, b, store.Derived{Pending: []store.PendingRow{{User: "bob", Conv: dAB, FirstUndelivered: 2}}})
	apply(t, b, store.Derived{Pending: []store.PendingRow{{User: "bob", Conv: dAB, FirstUndelivered: 3}}}) // present: kept
	apply(t, b, store.Derived{Boundaries: []store.BoundaryRow{{User: "bob", Conv: dAB, DeliveredSeq: 1}}})
	if got, want := pending(), []store.PendingDelivery{{Conv: dAB, FirstUndelivered: 2, LastDeliveredSeq: 1, NewestSeq: 3}}; !slices.Equal(got, want) {
		t.Errorf("Pending = %+v, want %+v", got, want)
	}
	apply(t, b, store.Derived{Pending: []store.PendingRow{{User: "bob", Conv: dAB, Clear: 1}}}) // below the row: kept
	if len(pending()) != 1 {
		t.Errorf("a clear below the row's first seq deleted it")
	}
	apply(t, b, store.Derived{Pending: []store.PendingRow{{User: "bob", Conv: dAB, Clear: 3, FirstUndelivered: 4}}})
	if got := pending(); len(got) != 1 || got[0].FirstUndelivered != 4 {
		t.Errorf("a clear then a put in one row = %+v, want the row put at 4", got)
	}
	apply(t, b, store.Derived{Pending: []store.PendingRow{{User: "bob", Conv: dAB, Clear: 3, FirstUndelivered: 2}}}) // the row is above the clear: kept
	if got := pending(); len(got) != 1 || got[0].FirstUndelivered != 4 {
		t.Errorf("a clear below the row with a put = %+v, want the row kept at 4", got)
	}
	apply(t, b, store.Derived{Pending: []store.PendingRow{{User: "bob", Conv: dAB, Clear: 4}}})
	if got := pending(); len(got) != 0 {
		t.Errorf("after the clear = %+v", got)
	}
}

func testApplyNewerWins(t *testing.T, b store.Backend) {
	appendOK(t, b, msg(dAB, "alice", "m1"))
	st := session.State{User: "bob", Conv: dAB, WriteSeq: 1, UnreadCount: 1, ActiveTS: 100, WriteTS: 100, LastConv: dAB, LastSeq: 1, Request: true,
		Ticks: protocol.Ticks{DeliveredSeq: 1}}
	older := st
	older.ActiveTS, older.UnreadCount = 90, 7
	apply(t, b, store.Derived{Sessions: []session.State{st}, Totals: []store.TotalRow{{User: "bob", List: "", Total: 1, At: 100}}})
	apply(t, b, store.Derived{Sessions: []session.State{older}, Totals: []store.TotalRow{{User: "bob", List: "", Total: 7, At: 90}}})
	got, err := b.Sessions(t.Context(), dAB, []string{"bob", "carol"})
	if err != nil || len(got) != 1 || got["bob"] != st {
		t.Errorf("Sessions after an older write = %+v, %v; want %+v", got, err, st)
	}
	// A tick rise written in place, at the same active_ts: the ticks
	// max-merge, whichever of two such writes comes last.
	risen, lower := st, st
	risen.Ticks = protocol.Ticks{DeliveredSeq: 1, ReadSeq: 1}
	lower.Ticks = protocol.Ticks{}
	apply(t, b, store.Derived{Sessions: []session.State{risen}})
	apply(t, b, store.Derived{Sessions: []session.State{lower}})
	if got, err := b.Sessions(t.Context(), dAB, []string{"bob"}); err != nil || got["bob"] != risen {
		t.Errorf("Sessions after a rise in place and a lower write at the same active_ts = %+v, %v; want %+v", got, err, risen)
	}
	// At the same active_ts nothing but the ticks changes: another write
	// of that version (a replay, a stale writer) merges its ticks and
	// leaves every other column as it was.
	other := risen
	other.UnreadCount, other.Muted, other.Priority, other.WriteSeq = 9, true, 5, 7
	other.Ticks = protocol.Ticks{DeliveredSeq: 2, ReadSeq: 1}
	apply(t, b, store.Derived{Sessions: []session.State{other}})
	merged := risen
	merged.Ticks = protocol.Ticks{DeliveredSeq: 2, ReadSeq: 1}
	if got, err := b.Sessions(t.Context(), dAB, []string{"bob"}); err != nil || got["bob"] != merged {
		t.Errorf("Sessions after another write at the same active_ts = %+v, %v; want only the ticks merged: %+v", got, err, merged)
	}
	if want := session.Merge(session.Merge(session.Merge(st, risen), lower), other); want != merged {
		t.Errorf("session.Merge = %+v; want %+v", want, merged)
	}
	u, err := b.User(t.Context(), "bob")
	if err != nil || u.Clock != 100 || u.Totals[""] != 1 {
		t.Errorf("User(bob) = %+v, %v; want clock 100, total 1", u, err)
	}
	apply(t, b, store.Derived{Convs: []store.ConvDerived{{Conv: dAB, Ticks: protocol.Ticks{DeliveredSeq: 1, ReadSeq: 1}, DerivedSeq: 1}}})
	apply(t, b, store.Derived{Convs: []store.ConvDerived{{Conv: dAB, Ticks: protocol.Ticks{}, DerivedSeq: 0}}}) // older
	if rec := conversation(t, b, dAB); rec.Ticks != (protocol.Ticks{DeliveredSeq: 1, ReadSeq: 1}) || rec.DerivedSeq != 1 {
		t.Errorf("conversation head after an older write = %+v", rec)
	}
}

func testApplyIsIdempotent(t *testing.T, b store.Backend) {
	createTeam(t, b)
	appendOK(t, b, msg(gTeam, "bob", "m2"))
	d := store.Derived{
		Boundaries: []store.BoundaryRow{{User: "bob", Conv: gTeam, DeliveredSeq: 2, ReadSeq: 2}},
		Pending:    []store.PendingRow{{User: "carol", Conv: gTeam, FirstUndelivered: 1}},
		Sessions:   []session.State{{User: "carol", Conv: gTeam, WriteSeq: 2, UnreadCount: 2, ActiveTS: 5, WriteTS: 5, LastConv: gTeam, LastSeq: 2}},
		Totals:     []store.TotalRow{{User: "carol", Total: 2, At: 5}},
		Convs:      []store.ConvDerived{{Conv: gTeam, DerivedSeq: 2}},
		Former:     []store.FormerRow{{User: "zed", Conv: gTeam, Title: "old"}},
	}
	apply(t, b, d)
	snap := func() string {
		rec := conversation(t, b, gTeam)
		ps, _ := b.Pending(t.Context(), "carol")
		ss, _ := b.Sessions(t.Context(), gTeam, []string{"carol"})
		u, _ := b.User(t.Context(), "carol")
		return fmt.Sprintf("%+v %+v %+v %+v", rec, ps, ss, u)
	}
	before := snap()
	apply(t, b, d)
	if after := snap(); after != before {
		t.Errorf("applying twice changed the state:\n%s\n%s", before, after)
	}
}

func testUnrepaired(t *testing.T, b store.Backend) {
	appendOK(t, b, msg(dAB, "alice", "m1"))
	appendOK(t, b, msg(dAB, "alice", "m2"))
	createTeam(t, b)
	got, err := b.Unrepaired(t.Context())
	slices.Sort(got)
	if err != nil || !slices.Equal(got, []string{dAB, gTeam}) {
		t.Fatalf("Unrepaired = %v, %v", got, err)
	}
	apply(t, b, store.Derived{Convs: []store.ConvDerived{{Conv: dAB, DerivedSeq: 1}, {Conv: gTeam, DerivedSeq: 1}}})
	if got, _ := b.Unrepaired(t.Context()); !slices.Equal(got, []string{dAB}) {
		t.Errorf("Unrepaired with %s derived to 1 of 2 = %v", dAB, got)
	}
	apply(t, b, store.Derived{Convs: []store.ConvDerived{{Conv: dAB, DerivedSeq: 2}}})
	if got, _ := b.Unrepaired(t.Context()); len(got) != 0 {
		t.Errorf("Unrepaired with everything derived = %v", got)
	}
}

func testSessionReads(t *testing.T, b store.Backend) {
	createTeam(t, b)
	appendOK(t, b, msg(dAB, "alice", "m1"))
	last := msg(dAB, "alice", "m1")
	last.Seq = 1
	direct := session.State{User: "bob", Conv: dAB, WriteSeq: 1, UnreadCount: 1, ActiveTS: 10, WriteTS: 10, LastConv: dAB, LastSeq: 1}
	team := session.State{User: "bob", Conv: gTeam, WriteSeq: 1, ActiveTS: 20, WriteTS: 20, LastConv: gTeam, LastSeq: 1}
	muted := session.State{User: "bob", Conv: "d:bob:carol", Muted: true, MuteUntil: 50, ActiveTS: 30}
	nested := session.State{User: "bob", Conv: "d:bob:shop", SubBiz: "shop", ActiveTS: 40}
	apply(t, b, store.Derived{
		Sessions: []session.State{direct, team, muted, nested},
		Totals:   []store.TotalRow{{User: "bob", Total: 1, At: 40}, {User: "bob", List: "shop", Total: 0, At: 40}},
		Convs:    []store.ConvDerived{{Conv: dAB, Ticks: protocol.Ticks{DeliveredSeq: 1}}},
	})
	rows, total, err := b.SessionPage(t.Context(), "bob", store.SyncQuery{Since: 0, Limit: 2})
	if err != nil || total != 1 || len(rows) != 3 {
		t.Fatalf("SessionPage(limit 2) = %d rows, total %d, %v; want the limit and one more, total 1", len(rows), total, err)
	}
	if rows[0].State != direct || rows[0].LastMsg == nil || *rows[0].LastMsg != last {
		t.Errorf("first row = %+v", rows[0])
	}
	if rows[1].State.Conv != gTeam || rows[1].Title != "team" || !slices.Equal(rows[1].Members, []string{"alice", "bob", "carol"}) || rows[1].Left {
		t.Errorf("group row = %+v", rows[1])
	}
	if rows, _, _ := b.SessionPage(t.Context(), "bob", store.SyncQuery{Since: 20, Limit: 10}); len(rows) != 1 || rows[0].State.Conv != "d:bob:carol" {
		t.Errorf("SessionPage(since 20) = %+v", rows)
	}
	if rows, total, _ := b.SessionPage(t.Context(), "bob", store.SyncQuery{SubBiz: "shop", Limit: 10}); len(rows) != 1 || rows[0].State != nested || total != 0 {
		t.Errorf("SessionPage(shop) = %+v, total %d", rows, total)
	}
	if rows, _, _ := b.SessionPage(t.Context(), "bob", store.SyncQuery{Conv: "d:bob:shop", Limit: 1}); len(rows) != 1 || rows[0].State != nested {
		t.Errorf("SessionPage(one conv) = %+v", rows)
	}
	if convs, err := b.TimedMutes(t.Context(), "bob", 50); err != nil || !slices.Equal(convs, []string{"d:bob:carol"}) {
		t.Errorf("TimedMutes(50) = %v, %v", convs, err)
	}
	if convs, _ := b.TimedMutes(t.Context(), "bob", 49); len(convs) != 0 {
		t.Errorf("TimedMutes(49) = %v", convs)
	}
	// bob leaves the team: his session shows it as he left it.
	if _, err := b.ChangeGroup(t.Context(), store.GroupChange{Conv: gTeam, Remove: []string{"bob"}, Msg: sysMsg(gTeam, "bob", "left")}); err != nil {
		t.Fatal(err)
	}
	apply(t, b, store.Derived{Former: []store.FormerRow{{User: "bob", Conv: gTeam, Title: "as it was"}}})
	rows, _, _ = b.SessionPage(t.Context(), "bob", store.SyncQuery{Conv: gTeam, Limit: 1})
	if len(rows) != 1 || !rows[0].Left || rows[0].Title != "as it was" {
		t.Errorf("a former member's row = %+v", rows)
	}
}

func testAccounts(t *testing.T, b store.Backend) {
	if c, s, err := b.Account(t.Context(), "acme"); err != nil || c != "" || s != "" {
		t.Errorf("Account before filing = %q %q %v", c, s, err)
	}
	if err := b.SetAccount(t.Context(), "acme", "promotions", "shop"); err != nil {
		t.Fatal(err)
	}
	if c, s, err := b.Account(t.Context(), "acme"); err != nil || c != "promotions" || s != "shop" {
		t.Errorf("Account = %q %q %v", c, s, err)
	}
}

func testClosed(t *testing.T, b store.Backend) {
	appendOK(t, b, msg(dAB, "alice", "m1"))
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := b.Append(t.Context(), msg(dAB, "alice", "m2")); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Append after Close: %v, want ErrClosed", err)
	}
	if _, _, err := b.History(t.Context(), dAB, store.HistoryQuery{Limit: 5}); !errors.Is(err, store.ErrClosed) {
		t.Errorf("History after Close: %v, want ErrClosed", err)
	}
	if err := b.Apply(t.Context(), store.Derived{Convs: []store.ConvDerived{{Conv: dAB, DerivedSeq: 1}}}); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Apply after Close: %v, want ErrClosed", err)
	}
}
