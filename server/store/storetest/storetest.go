// Package storetest is the conformance suite of the engine over a
// backend (chat.Engine, and Close). Every backend
// runs it from its own tests; a backend that passes it keeps the promises
// the Engine interface documents. The suite tests only those promises,
// never a backend's internals.
package storetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/chat"
	"github.com/imcore/im/server/store"
)

// Run runs the conformance suite, one subtest per promise, each against a
// fresh store from open. open must return an empty store, fail t if it
// cannot, and arrange (with t.Cleanup) to close the store when the subtest
// ends, tolerating a store the subtest has already closed. Subtests run one
// after another, never in parallel.
func Run(t *testing.T, open func(t *testing.T) Engine) {
	tests := []storeTest{
		{"AppendAssignsSeqs", testAppendAssignsSeqs},
		{"AppendConcurrentOneConversation", testAppendConcurrentOneConversation},
		{"AppendConcurrentManyConversations", testAppendConcurrentManyConversations},
		{"StartAppendKeepsOrder", testStartAppendKeepsOrder},
		{"AppendIdempotent", testAppendIdempotent},
		{"AppendIdempotentConcurrent", testAppendIdempotentConcurrent},
		{"AppendErrorChangesNothing", testAppendErrorChangesNothing},
		{"ImplicitRead", testImplicitRead},
		{"ReceiptsMembers", testReceiptsMembers},
		{"HistoryBefore", testHistoryBefore},
		{"HistoryAfter", testHistoryAfter},
		{"HistoryEmpty", testHistoryEmpty},
		{"HistoryByteBudget", testHistoryByteBudget},
		{"MarkMaxMerge", testMarkMaxMerge},
		{"MarkClamped", testMarkClamped},
		{"MarkReadImpliesDelivered", testMarkReadImpliesDelivered},
		{"MarkWithoutMessages", testMarkWithoutMessages},
		{"MarkSameConvTwice", testMarkSameConvTwice},
		{"MarkTickChangeDirect", testMarkTickChangeDirect},
		{"MarkTickChangeGroup", testMarkTickChangeGroup},
		{"MarkConcurrent", testMarkConcurrent},
		{"AppendTicks", testAppendTicks},
		{"PendingFirstUndelivered", testPendingFirstUndelivered},
		{"PendingRemovedWhenDelivered", testPendingRemovedWhenDelivered},
		{"PendingRemovedByRead", testPendingRemovedByRead},
		{"PendingRemovedAfterReply", testPendingRemovedAfterReply},
		{"PendingStartsAtFirstUndelivered", testPendingStartsAtFirstUndelivered},
		{"Closed", testClosed},
	}
	for _, tc := range slices.Concat(tests, sessionTests, groupTests, relationTests) {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			if s == nil {
				t.Fatal("open returned a nil store")
			}
			tc.fn(t, s)
		})
	}
}

// Engine is what the suite runs against: the messaging state the chat
// service calls (package engine, over one backend), which it also closes.
type Engine interface {
	chat.Engine
	Close() error
}

// storeTest is one promise of the suite.
type storeTest struct {
	name string
	fn   func(t *testing.T, s Engine)
}

// The users and conversations of the suite.
const (
	alice = "alice"
	bob   = "bob"
	carol = "carol"

	dAB   = "d:alice:bob"
	dAC   = "d:alice:carol"
	gTeam = "g:team"
)

// membersOf are the members of each conversation of the suite, in no
// particular order (the group's are deliberately unsorted).
var membersOf = map[string][]string{
	dAB:   {alice, bob},
	dAC:   {alice, carol},
	gTeam: {carol, alice, bob},
}

// request builds an AppendRequest for a plain text message.
func request(conv, from, msgID string) store.AppendRequest {
	return store.AppendRequest{
		Msg: protocol.Message{
			Conv:     conv,
			MsgID:    msgID,
			From:     from,
			Body:     "body of " + msgID,
			ClientTS: 1763800000000 + int64(len(msgID)),
		},
		Members: membersOf[conv],
	}
}

// appendOK appends and fails the test on error. A group is created, with
// the request's members, before its first message.
func appendOK(t *testing.T, s Engine, req store.AppendRequest) store.AppendResult {
	t.Helper()
	if c, _ := protocol.ParseConv(req.Msg.Conv); c.Kind == protocol.ConvGroup {
		req.MembersVersion = ensureGroup(t, s, req.Msg.Conv, req.Members).Version
	}
	res, err := s.Append(t.Context(), req)
	if err != nil {
		t.Fatalf("Append(%s, %s): %v", req.Msg.Conv, req.Msg.MsgID, err)
	}
	return res
}

// send appends a new message and checks that it was stored as asked.
func send(t *testing.T, s Engine, conv, from, msgID string) store.AppendResult {
	t.Helper()
	req := request(conv, from, msgID)
	res := appendOK(t, s, req)
	if res.Duplicate {
		t.Fatalf("Append(%s, %s): Duplicate = true for a new message", conv, msgID)
	}
	checkStored(t, req.Msg, res.Msg)
	return res
}

// sendN sends n messages from one user, with ids prefix-1..prefix-n.
func sendN(t *testing.T, s Engine, conv, from, prefix string, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		send(t, s, conv, from, fmt.Sprintf("%s-%d", prefix, i))
	}
}

// checkStored checks that got is want as stored: same fields, with a seq and
// a server timestamp assigned.
func checkStored(t *testing.T, want, got protocol.Message) {
	t.Helper()
	if got.Seq <= 0 {
		t.Errorf("stored %s: seq = %d, want > 0", want.MsgID, got.Seq)
	}
	if got.ServerTS <= 0 {
		t.Errorf("stored %s: server_ts = %d, want > 0", want.MsgID, got.ServerTS)
	}
	want.Seq, want.ServerTS = got.Seq, got.ServerTS
	if got != want {
		t.Errorf("stored message = %+v, want %+v", got, want)
	}
}

// history reads a page and fails the test on error.
func history(t *testing.T, s Engine, conv string, q store.HistoryQuery) ([]protocol.Message, bool) {
	t.Helper()
	msgs, more, err := s.History(t.Context(), conv, q)
	if err != nil {
		t.Fatalf("History(%s, %+v): %v", conv, q, err)
	}
	return msgs, more
}

// all reads every message of conv (at most 1000), oldest first.
func all(t *testing.T, s Engine, conv string) []protocol.Message {
	t.Helper()
	msgs, more := history(t, s, conv, store.HistoryQuery{After: true, Limit: 1000})
	if more {
		t.Fatalf("History(%s): more than 1000 messages", conv)
	}
	return msgs
}

// checkPage checks a history page's seqs and has_more.
func checkPage(t *testing.T, s Engine, conv string, q store.HistoryQuery, wantSeqs []int64, wantMore bool) {
	t.Helper()
	msgs, more := history(t, s, conv, q)
	if got := seqsOf(msgs); !slices.Equal(got, wantSeqs) {
		t.Errorf("History(%s, %+v) seqs = %v, want %v", conv, q, got, wantSeqs)
	}
	if more != wantMore {
		t.Errorf("History(%s, %+v) has_more = %v, want %v", conv, q, more, wantMore)
	}
}

func seqsOf(msgs []protocol.Message) []int64 {
	out := make([]int64, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, m.Seq)
	}
	return out
}

// seqRange returns from..to inclusive; empty when to < from.
func seqRange(from, to int64) []int64 {
	out := []int64{}
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

// receipts reads conv's receipts, checks that they are ordered by user and
// that read never exceeds delivered, and fails the test on error.
func receipts(t *testing.T, s Engine, conv string) []protocol.MemberReceipt {
	t.Helper()
	rs, err := s.Receipts(t.Context(), conv)
	if err != nil {
		t.Fatalf("Receipts(%s): %v", conv, err)
	}
	if !slices.IsSortedFunc(rs, func(a, b protocol.MemberReceipt) int { return cmp.Compare(a.User, b.User) }) {
		t.Errorf("Receipts(%s) = %+v, not ordered by user", conv, rs)
	}
	for _, r := range rs {
		if r.DeliveredSeq < r.ReadSeq {
			t.Errorf("Receipts(%s): %s delivered %d < read %d", conv, r.User, r.DeliveredSeq, r.ReadSeq)
		}
	}
	return rs
}

// checkReceipts checks conv's receipts against want, ordered by user.
func checkReceipts(t *testing.T, s Engine, conv string, want ...protocol.MemberReceipt) {
	t.Helper()
	if want == nil {
		want = []protocol.MemberReceipt{}
	}
	if got := receipts(t, s, conv); !slices.Equal(got, want) {
		t.Errorf("Receipts(%s) = %+v, want %+v", conv, got, want)
	}
}

// boundary reads one member's boundaries in conv.
func boundary(t *testing.T, s Engine, conv, user string) protocol.MemberReceipt {
	t.Helper()
	for _, r := range receipts(t, s, conv) {
		if r.User == user {
			return r
		}
	}
	t.Fatalf("Receipts(%s): no row for %s", conv, user)
	return protocol.MemberReceipt{}
}

// minimum is the tick minimum of conv computed from its receipts.
func minimum(t *testing.T, s Engine, conv string) protocol.Ticks {
	t.Helper()
	rs := receipts(t, s, conv)
	if len(rs) == 0 {
		return protocol.Ticks{}
	}
	m := protocol.Ticks{DeliveredSeq: rs[0].DeliveredSeq, ReadSeq: rs[0].ReadSeq}
	for _, r := range rs[1:] {
		m.DeliveredSeq = min(m.DeliveredSeq, r.DeliveredSeq)
		m.ReadSeq = min(m.ReadSeq, r.ReadSeq)
	}
	return m
}

func rcpt(user string, delivered, read int64) protocol.MemberReceipt {
	return protocol.MemberReceipt{User: user, DeliveredSeq: delivered, ReadSeq: read}
}

func mk(conv string, seq int64) protocol.Mark { return protocol.Mark{Conv: conv, Seq: seq} }

// mark marks and returns the tick changes ordered by conversation; it fails
// the test on error.
func mark(t *testing.T, s Engine, user string, kind store.MarkKind, marks ...protocol.Mark) []store.TickChange {
	t.Helper()
	res, err := s.Mark(t.Context(), user, kind, marks)
	if err == nil {
		err = res.Written(t.Context())
	}
	changes := res.Ticks
	if err != nil {
		t.Fatalf("Mark(%s, %v, %+v): %v", user, kind, marks, err)
	}
	slices.SortStableFunc(changes, func(a, b store.TickChange) int { return cmp.Compare(a.Conv, b.Conv) })
	return changes
}

// checkMark marks and checks the tick changes reported (nil for none).
func checkMark(t *testing.T, s Engine, user string, kind store.MarkKind, marks []protocol.Mark, want ...store.TickChange) {
	t.Helper()
	got := mark(t, s, user, kind, marks...)
	sameRise := func(a, b store.TickChange) bool { return a.Conv == b.Conv && a.Ticks == b.Ticks }
	if !slices.EqualFunc(got, want, sameRise) {
		t.Errorf("Mark(%s, %v, %+v) changes = %+v, want %+v", user, kind, marks, got, want)
	}
	// Each rise names the members its status goes to: the conversation's.
	for _, ch := range got {
		var members []string
		for _, r := range receipts(t, s, ch.Conv) {
			members = append(members, r.User)
		}
		if !slices.Equal(ch.Members, members) {
			t.Errorf("Mark(%s, %v, %+v): the rise of %s names members %v, want %v", user, kind, marks, ch.Conv, ch.Members, members)
		}
	}
}

func change(conv string, delivered, read int64) store.TickChange {
	return store.TickChange{Conv: conv, Ticks: protocol.Ticks{DeliveredSeq: delivered, ReadSeq: read}}
}

// pending reads user's pending rows ordered by conversation and fails the
// test on error.
func pending(t *testing.T, s Engine, user string) []store.PendingDelivery {
	t.Helper()
	ps, err := s.Pending(t.Context(), user)
	if err != nil {
		t.Fatalf("Pending(%s): %v", user, err)
	}
	slices.SortStableFunc(ps, func(a, b store.PendingDelivery) int { return cmp.Compare(a.Conv, b.Conv) })
	return ps
}

// checkPending checks user's pending rows against want, ordered by
// conversation.
func checkPending(t *testing.T, s Engine, user string, want ...store.PendingDelivery) {
	t.Helper()
	got := pending(t, s, user)
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !slices.Equal(got, want) {
		t.Errorf("Pending(%s) = %+v, want %+v", user, got, want)
	}
}

func row(conv string, first, delivered, newest int64) store.PendingDelivery {
	return store.PendingDelivery{Conv: conv, FirstUndelivered: first, LastDeliveredSeq: delivered, NewestSeq: newest}
}

// parallel runs fn(0..n-1) in n goroutines released together and waits for
// them all.
func parallel(n int, fn func(i int)) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			fn(i)
		}()
	}
	close(start)
	wg.Wait()
}

func testAppendAssignsSeqs(t *testing.T, s Engine) {
	var stored []protocol.Message
	for i := 1; i <= 5; i++ {
		from := alice
		if i%2 == 0 {
			from = bob
		}
		res := send(t, s, dAB, from, fmt.Sprintf("ab-%d", i))
		if res.Msg.Seq != int64(i) {
			t.Errorf("message %d in %s: seq = %d, want %d", i, dAB, res.Msg.Seq, i)
		}
		stored = append(stored, res.Msg)
	}

	// Another conversation has its own sequence, and does not disturb dAB's.
	for i := 1; i <= 3; i++ {
		if res := send(t, s, dAC, carol, fmt.Sprintf("ac-%d", i)); res.Msg.Seq != int64(i) {
			t.Errorf("message %d in %s: seq = %d, want %d", i, dAC, res.Msg.Seq, i)
		}
	}
	res := send(t, s, dAB, alice, "ab-6")
	if res.Msg.Seq != 6 {
		t.Errorf("message 6 in %s after %s: seq = %d, want 6", dAB, dAC, res.Msg.Seq)
	}
	stored = append(stored, res.Msg)

	// A system message takes a seq too and keeps its kind.
	sys := request(dAB, alice, "ab-sys")
	sys.Msg.Kind = protocol.KindSystem
	sysRes := appendOK(t, s, sys)
	checkStored(t, sys.Msg, sysRes.Msg)
	if sysRes.Msg.Seq != 7 {
		t.Errorf("system message: seq = %d, want 7", sysRes.Msg.Seq)
	}
	stored = append(stored, sysRes.Msg)

	// History returns exactly what Append returned.
	if got := all(t, s, dAB); !slices.Equal(got, stored) {
		t.Errorf("History(%s) =\n%+v\nwant\n%+v", dAB, got, stored)
	}
	if got := seqsOf(all(t, s, dAC)); !slices.Equal(got, seqRange(1, 3)) {
		t.Errorf("History(%s) seqs = %v, want 1..3", dAC, got)
	}
}

// Appends started one after another take their seqs in that order, and
// each is derived fully, though none was waited for before the next began;
// a duplicate among them is answered with the original.
func testStartAppendKeepsOrder(t *testing.T, s Engine) {
	const n = 40
	ctx := context.Background()
	waits := make([]func() (store.AppendResult, error), 0, n+1)
	for i := 1; i <= n; i++ {
		waits = append(waits, s.StartAppend(ctx, request(dAB, alice, fmt.Sprintf("p-%d", i))))
	}
	waits = append(waits, s.StartAppend(ctx, request(dAB, alice, "p-7")))
	for i, wait := range waits[:n] {
		res, err := wait()
		if err != nil {
			t.Fatalf("append %d: %v", i+1, err)
		}
		if res.Duplicate || res.Msg.Seq != int64(i+1) || res.Msg.MsgID != fmt.Sprintf("p-%d", i+1) {
			t.Fatalf("append %d: %+v (duplicate %v), want p-%d at seq %d", i+1, res.Msg, res.Duplicate, i+1, i+1)
		}
	}
	if res, err := waits[n](); err != nil || !res.Duplicate || res.Msg.Seq != 7 {
		t.Fatalf("p-7 again: %+v (duplicate %v), %v; want the original at seq 7", res.Msg, res.Duplicate, err)
	}
	rows := pending(t, s, bob)
	if len(rows) != 1 || rows[0].FirstUndelivered != 1 || rows[0].NewestSeq != n {
		t.Fatalf("bob's pending rows after %d started appends: %+v, want one from 1 to %d", n, rows, n)
	}
}

func testAppendConcurrentOneConversation(t *testing.T, s Engine) {
	const n = 50
	results := make([]store.AppendResult, n)
	errs := make([]error, n)
	parallel(n, func(i int) {
		from := alice
		if i%2 == 1 {
			from = bob
		}
		results[i], errs[i] = s.Append(context.Background(), request(dAB, from, fmt.Sprintf("c-%d", i)))
	})
	seqByID := map[string]int64{}
	var seqs []int64
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
		if results[i].Duplicate {
			t.Errorf("Append %d: Duplicate = true for a new message", i)
		}
		seqs = append(seqs, results[i].Msg.Seq)
		seqByID[results[i].Msg.MsgID] = results[i].Msg.Seq
	}
	slices.Sort(seqs)
	if !slices.Equal(seqs, seqRange(1, n)) {
		t.Errorf("concurrent appends got seqs %v, want exactly 1..%d", seqs, n)
	}
	msgs := all(t, s, dAB)
	if got := seqsOf(msgs); !slices.Equal(got, seqRange(1, n)) {
		t.Errorf("History seqs = %v, want 1..%d", got, n)
	}
	for _, m := range msgs {
		if seqByID[m.MsgID] != m.Seq {
			t.Errorf("History: %s at seq %d, Append returned seq %d", m.MsgID, m.Seq, seqByID[m.MsgID])
		}
	}
}

func testAppendConcurrentManyConversations(t *testing.T, s Engine) {
	// The group exists before the appends: its creation message is seq 1,
	// so its appends take 2..perConv+1; the direct chats are created by
	// their first message and take 1..perConv.
	team := newTeam(t, s)
	convs := []string{dAB, dAC, gTeam}
	first := map[string]int64{dAB: 1, dAC: 1, gTeam: 2}
	const perConv = 20
	errs := make([]error, len(convs)*perConv)
	seqs := make([]int64, len(convs)*perConv)
	parallel(len(errs), func(i int) {
		conv := convs[i%len(convs)]
		req := request(conv, alice, fmt.Sprintf("m-%d", i))
		if conv == gTeam {
			req.MembersVersion = team.Version
		}
		res, err := s.Append(context.Background(), req)
		errs[i], seqs[i] = err, res.Msg.Seq
	})
	byConv := map[string][]int64{}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
		conv := convs[i%len(convs)]
		byConv[conv] = append(byConv[conv], seqs[i])
	}
	for _, conv := range convs {
		got := byConv[conv]
		slices.Sort(got)
		last := first[conv] + perConv - 1
		if !slices.Equal(got, seqRange(first[conv], last)) {
			t.Errorf("%s: seqs %v, want exactly %d..%d", conv, got, first[conv], last)
		}
		if h := seqsOf(all(t, s, conv)); !slices.Equal(h, seqRange(1, last)) {
			t.Errorf("History(%s) seqs = %v, want 1..%d", conv, h, last)
		}
	}
}

func testAppendIdempotent(t *testing.T, s Engine) {
	first := send(t, s, dAB, alice, "m1")
	send(t, s, dAB, bob, "m2")

	// The same key again, with another body and client_ts: the original
	// comes back and nothing changes.
	mark(t, s, bob, store.MarkDelivered, mk(dAB, 2))
	again := request(dAB, alice, "m1")
	again.Msg.Body = "a different body"
	again.Msg.ClientTS = 42
	dup := appendOK(t, s, again)
	if !dup.Duplicate {
		t.Errorf("repeated (%s, m1): Duplicate = false, want true", dAB)
	}
	if dup.Msg != first.Msg {
		t.Errorf("repeated (%s, m1): Msg = %+v, want the original %+v", dAB, dup.Msg, first.Msg)
	}
	// The key belongs to its sender: the other member using it is
	// refused, and neither gets the other's message as its own.
	byBob := request(dAB, bob, "m1")
	byBob.Msg.Body = "bob's body"
	if res, err := s.Append(t.Context(), byBob); !errors.Is(err, store.ErrMsgIDTaken) {
		t.Errorf("(%s, m1) by bob after alice: %+v, %v; want ErrMsgIDTaken", dAB, res, err)
	}
	checkPending(t, s, bob) // the duplicates put no pending row back
	checkReceipts(t, s, dAB, rcpt(alice, 1, 1), rcpt(bob, 2, 2))

	// The duplicates consumed no seq.
	if res := send(t, s, dAB, alice, "m3"); res.Msg.Seq != 3 {
		t.Errorf("next message after duplicates: seq = %d, want 3", res.Msg.Seq)
	}
	msgs := all(t, s, dAB)
	if got := seqsOf(msgs); !slices.Equal(got, seqRange(1, 3)) {
		t.Fatalf("History seqs = %v, want 1..3", got)
	}
	if msgs[0] != first.Msg {
		t.Errorf("History seq 1 = %+v, want the first write %+v", msgs[0], first.Msg)
	}

	// The key is (conv, msg_id): the same msg_id elsewhere is a new message.
	if res := send(t, s, dAC, alice, "m1"); res.Msg.Seq != 1 {
		t.Errorf("m1 in %s: seq = %d, want 1", dAC, res.Msg.Seq)
	}
}

func testAppendIdempotentConcurrent(t *testing.T, s Engine) {
	send(t, s, dAB, bob, "before")
	const n = 20
	results := make([]store.AppendResult, n)
	errs := make([]error, n)
	parallel(n, func(i int) {
		req := request(dAB, alice, "same")
		req.Msg.Body = fmt.Sprintf("attempt %d", i)
		results[i], errs[i] = s.Append(context.Background(), req)
	})
	var originals []store.AppendResult
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
		if !results[i].Duplicate {
			originals = append(originals, results[i])
		}
	}
	if len(originals) != 1 {
		t.Fatalf("%d of %d concurrent appends of one key were not duplicates, want exactly 1", len(originals), n)
	}
	want := originals[0].Msg
	if want.Seq != 2 {
		t.Errorf("seq = %d, want 2", want.Seq)
	}
	for i, r := range results {
		if r.Msg != want {
			t.Errorf("Append %d returned %+v, want the first write %+v", i, r.Msg, want)
		}
	}
	msgs := all(t, s, dAB)
	if len(msgs) != 2 || msgs[1] != want {
		t.Errorf("History = %+v, want [before, %+v]", msgs, want)
	}
}

// testAppendErrorChangesNothing cancels appends and marks while they run: one
// that returned an error must have changed nothing, one that returned nil
// must be stored.
func testAppendErrorChangesNothing(t *testing.T, s Engine) {
	// Cancelled before the call.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Append(ctx, request(dAB, alice, "cancelled"))
	if err != nil {
		if msgs := all(t, s, dAB); len(msgs) != 0 {
			t.Errorf("Append with a cancelled context failed (%v) but stored %+v", err, msgs)
		}
		checkReceipts(t, s, dAB)
	}
	res := appendOK(t, s, request(dAB, alice, "cancelled"))
	if res.Duplicate != (err == nil) {
		t.Errorf("retry after Append returned %v: Duplicate = %v", err, res.Duplicate)
	}

	// Cancelled while running, among appends that are not.
	const n = 40
	results := make([]store.AppendResult, n)
	errs := make([]error, n)
	parallel(n, func(i int) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if i%2 == 0 {
			go cancel()
		}
		results[i], errs[i] = s.Append(ctx, request(dAB, bob, fmt.Sprintf("race-%d", i)))
	})
	stored := map[string]protocol.Message{}
	for _, m := range all(t, s, dAB) {
		stored[m.MsgID] = m
	}
	for i, err := range errs {
		id := fmt.Sprintf("race-%d", i)
		m, ok := stored[id]
		switch {
		case err == nil && !ok:
			t.Errorf("Append %s returned nil (seq %d) but is not stored", id, results[i].Msg.Seq)
		case err == nil && m != results[i].Msg:
			t.Errorf("Append %s returned %+v, stored %+v", id, results[i].Msg, m)
		case err != nil && ok:
			t.Errorf("Append %s returned %v but is stored at seq %d", id, err, m.Seq)
		case err != nil && i%2 == 1:
			t.Errorf("Append %s (not cancelled): %v", id, err)
		}
	}

	// A mark that returned an error changed nothing.
	before := boundary(t, s, dAB, alice)
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	if _, err := s.Mark(ctx, alice, store.MarkRead, []protocol.Mark{mk(dAB, 1000)}); err != nil {
		if after := boundary(t, s, dAB, alice); after != before {
			t.Errorf("Mark with a cancelled context failed (%v) but moved %+v to %+v", err, before, after)
		}
	}
}

func testImplicitRead(t *testing.T, s Engine) {
	send(t, s, dAB, alice, "m1")
	checkReceipts(t, s, dAB, rcpt(alice, 1, 1), rcpt(bob, 0, 0))
	send(t, s, dAB, alice, "m2")
	checkReceipts(t, s, dAB, rcpt(alice, 2, 2), rcpt(bob, 0, 0))
	send(t, s, dAB, bob, "m3")
	checkReceipts(t, s, dAB, rcpt(alice, 2, 2), rcpt(bob, 3, 3))
	send(t, s, dAB, alice, "m4")
	checkReceipts(t, s, dAB, rcpt(alice, 4, 4), rcpt(bob, 3, 3))
}

func testReceiptsMembers(t *testing.T, s Engine) {
	// A conversation that has no message has no members yet.
	checkReceipts(t, s, gTeam)

	// A group's first message is its creation's: bob creates it, with a
	// row for every member.
	createGroup(t, s, gTeam, bob, membersOf[gTeam]...)
	checkReceipts(t, s, gTeam, rcpt(alice, 0, 0), rcpt(bob, 1, 1), rcpt(carol, 0, 0))
	send(t, s, gTeam, carol, "g2")
	checkReceipts(t, s, gTeam, rcpt(alice, 0, 0), rcpt(bob, 1, 1), rcpt(carol, 2, 2))
	// Other conversations are untouched.
	checkReceipts(t, s, dAB)

	// A direct chat's members are those of its first message; the members
	// of later requests do not matter once it exists. (A group's request
	// must carry the group's members: see AppendRequest.)
	send(t, s, dAB, alice, "d1")
	checkReceipts(t, s, dAB, rcpt(alice, 1, 1), rcpt(bob, 0, 0))
	req := request(dAB, bob, "d2")
	req.Members = []string{bob}
	appendOK(t, s, req)
	checkReceipts(t, s, dAB, rcpt(alice, 1, 1), rcpt(bob, 2, 2))
	// ... and the group is untouched.
	checkReceipts(t, s, gTeam, rcpt(alice, 0, 0), rcpt(bob, 1, 1), rcpt(carol, 2, 2))
}

func testHistoryBefore(t *testing.T, s Engine) {
	sendN(t, s, dAB, alice, "h", 25)
	send(t, s, dAC, alice, "other") // another conversation never leaks in

	newest := store.HistoryQuery{Limit: 10}
	checkPage(t, s, dAB, newest, seqRange(16, 25), true)
	checkPage(t, s, dAB, store.HistoryQuery{BeforeSeq: 16, Limit: 10}, seqRange(6, 15), true)
	checkPage(t, s, dAB, store.HistoryQuery{BeforeSeq: 6, Limit: 10}, seqRange(1, 5), false)
	// A page that ends exactly at the first message has no more.
	checkPage(t, s, dAB, store.HistoryQuery{BeforeSeq: 11, Limit: 10}, seqRange(1, 10), false)
	checkPage(t, s, dAB, store.HistoryQuery{BeforeSeq: 12, Limit: 10}, seqRange(2, 11), true)
	checkPage(t, s, dAB, store.HistoryQuery{BeforeSeq: 1, Limit: 10}, seqRange(1, 0), false)
	// Above the newest seq is like the newest page.
	checkPage(t, s, dAB, store.HistoryQuery{BeforeSeq: 1000, Limit: 10}, seqRange(16, 25), true)
	// A limit above the conversation's size returns it all.
	checkPage(t, s, dAB, store.HistoryQuery{Limit: 25}, seqRange(1, 25), false)
	checkPage(t, s, dAB, store.HistoryQuery{Limit: 100}, seqRange(1, 25), false)

	// Paging down from the newest visits every message once.
	var seen []int64
	q := store.HistoryQuery{Limit: 7}
	for {
		msgs, more := history(t, s, dAB, q)
		if len(msgs) == 0 {
			t.Fatalf("History(%+v): empty page with has_more", q)
		}
		seen = append(seqsOf(msgs), seen...)
		if !more {
			break
		}
		q.BeforeSeq = msgs[0].Seq
	}
	if !slices.Equal(seen, seqRange(1, 25)) {
		t.Errorf("paging before: saw %v, want 1..25", seen)
	}

	// Pages carry the messages as stored.
	msgs, _ := history(t, s, dAB, store.HistoryQuery{BeforeSeq: 3, Limit: 1})
	if len(msgs) != 1 || msgs[0].MsgID != "h-2" || msgs[0].Conv != dAB || msgs[0].From != alice || msgs[0].Body != "body of h-2" {
		t.Errorf("History(before 3, limit 1) = %+v, want h-2", msgs)
	}
}

func testHistoryAfter(t *testing.T, s Engine) {
	sendN(t, s, dAB, bob, "h", 25)
	send(t, s, dAC, alice, "other")

	after := func(seq int64, limit int) store.HistoryQuery {
		return store.HistoryQuery{After: true, AfterSeq: seq, Limit: limit}
	}
	checkPage(t, s, dAB, after(0, 10), seqRange(1, 10), true)
	checkPage(t, s, dAB, after(10, 10), seqRange(11, 20), true)
	checkPage(t, s, dAB, after(20, 10), seqRange(21, 25), false)
	// A page that ends exactly at the newest message has no more.
	checkPage(t, s, dAB, after(15, 10), seqRange(16, 25), false)
	checkPage(t, s, dAB, after(14, 10), seqRange(15, 24), true)
	checkPage(t, s, dAB, after(25, 10), seqRange(1, 0), false)
	checkPage(t, s, dAB, after(1000, 10), seqRange(1, 0), false)
	checkPage(t, s, dAB, after(0, 100), seqRange(1, 25), false)
	// BeforeSeq is ignored when After is set.
	checkPage(t, s, dAB, store.HistoryQuery{After: true, AfterSeq: 3, BeforeSeq: 5, Limit: 4}, seqRange(4, 7), true)

	// Paging up from the first visits every message once.
	var seen []int64
	q := after(0, 7)
	for {
		msgs, more := history(t, s, dAB, q)
		if len(msgs) == 0 {
			t.Fatalf("History(%+v): empty page with has_more", q)
		}
		seen = append(seen, seqsOf(msgs)...)
		if !more {
			break
		}
		q.AfterSeq = msgs[len(msgs)-1].Seq
	}
	if !slices.Equal(seen, seqRange(1, 25)) {
		t.Errorf("paging after: saw %v, want 1..25", seen)
	}
}

func testHistoryEmpty(t *testing.T, s Engine) {
	for _, q := range []store.HistoryQuery{
		{Limit: 20},
		{BeforeSeq: 10, Limit: 20},
		{After: true, Limit: 20},
		{After: true, AfterSeq: 5, Limit: 20},
	} {
		checkPage(t, s, dAB, q, seqRange(1, 0), false)
	}
	// Messages elsewhere do not make it non-empty.
	send(t, s, dAC, alice, "m1")
	checkPage(t, s, dAB, store.HistoryQuery{Limit: 20}, seqRange(1, 0), false)
	checkPage(t, s, dAB, store.HistoryQuery{After: true, Limit: 20}, seqRange(1, 0), false)
	// A page must hold at least one message: other limits are an error.
	for _, limit := range []int{0, -1, -2} {
		if msgs, _, err := s.History(context.Background(), dAC, store.HistoryQuery{Limit: limit}); err == nil {
			t.Errorf("History with limit %d = %v, want an error", limit, msgs)
		}
	}
}

func testMarkMaxMerge(t *testing.T, s Engine) {
	sendN(t, s, dAB, alice, "m", 5)
	mark(t, s, bob, store.MarkDelivered, mk(dAB, 4))
	mark(t, s, bob, store.MarkRead, mk(dAB, 3))
	checkReceipts(t, s, dAB, rcpt(alice, 5, 5), rcpt(bob, 4, 3))

	// Lower and equal marks are ignored and report nothing.
	checkMark(t, s, bob, store.MarkDelivered, []protocol.Mark{mk(dAB, 2)})
	checkMark(t, s, bob, store.MarkDelivered, []protocol.Mark{mk(dAB, 4)})
	checkMark(t, s, bob, store.MarkRead, []protocol.Mark{mk(dAB, 1)})
	checkMark(t, s, bob, store.MarkRead, []protocol.Mark{mk(dAB, 0)})
	checkReceipts(t, s, dAB, rcpt(alice, 5, 5), rcpt(bob, 4, 3))

	// A delivered mark below read never lowers anything.
	mark(t, s, bob, store.MarkRead, mk(dAB, 4))
	checkMark(t, s, bob, store.MarkDelivered, []protocol.Mark{mk(dAB, 3)})
	checkReceipts(t, s, dAB, rcpt(alice, 5, 5), rcpt(bob, 4, 4))

	// The sender's own marks below its implicit read change nothing.
	checkMark(t, s, alice, store.MarkDelivered, []protocol.Mark{mk(dAB, 2)})
	checkMark(t, s, alice, store.MarkRead, []protocol.Mark{mk(dAB, 5)})
	checkReceipts(t, s, dAB, rcpt(alice, 5, 5), rcpt(bob, 4, 4))
}

func testMarkClamped(t *testing.T, s Engine) {
	sendN(t, s, dAB, alice, "m", 3)
	checkMark(t, s, bob, store.MarkDelivered, []protocol.Mark{mk(dAB, 100)}, change(dAB, 3, 0))
	checkReceipts(t, s, dAB, rcpt(alice, 3, 3), rcpt(bob, 3, 0))
	checkMark(t, s, bob, store.MarkRead, []protocol.Mark{mk(dAB, 100)}, change(dAB, 3, 3))
	checkReceipts(t, s, dAB, rcpt(alice, 3, 3), rcpt(bob, 3, 3))

	// The clamp is stored: a new message is not covered by the old mark.
	send(t, s, dAB, alice, "m-4")
	checkReceipts(t, s, dAB, rcpt(alice, 4, 4), rcpt(bob, 3, 3))
	checkMark(t, s, bob, store.MarkRead, []protocol.Mark{mk(dAB, 100)}, change(dAB, 4, 4))
	checkReceipts(t, s, dAB, rcpt(alice, 4, 4), rcpt(bob, 4, 4))
}

func testMarkReadImpliesDelivered(t *testing.T, s Engine) {
	sendN(t, s, dAB, alice, "m", 4)
	checkMark(t, s, bob, store.MarkRead, []protocol.Mark{mk(dAB, 2)}, change(dAB, 2, 2))
	checkReceipts(t, s, dAB, rcpt(alice, 4, 4), rcpt(bob, 2, 2))
	checkMark(t, s, bob, store.MarkDelivered, []protocol.Mark{mk(dAB, 1)})
	checkReceipts(t, s, dAB, rcpt(alice, 4, 4), rcpt(bob, 2, 2))
	checkMark(t, s, bob, store.MarkDelivered, []protocol.Mark{mk(dAB, 3)}, change(dAB, 3, 2))
	checkMark(t, s, bob, store.MarkRead, []protocol.Mark{mk(dAB, 4)}, change(dAB, 4, 4))
	checkReceipts(t, s, dAB, rcpt(alice, 4, 4), rcpt(bob, 4, 4))
}

func testMarkWithoutMessages(t *testing.T, s Engine) {
	// Nothing is stored in dAB yet: every mark clamps to 0.
	checkMark(t, s, bob, store.MarkDelivered, []protocol.Mark{mk(dAB, 5)})
	checkMark(t, s, bob, store.MarkRead, []protocol.Mark{mk(dAB, 5)})
	checkReceipts(t, s, dAB)
	checkPending(t, s, bob)
	checkPage(t, s, dAB, store.HistoryQuery{Limit: 20}, seqRange(1, 0), false)

	// The marks left nothing behind that covers the first message.
	send(t, s, dAB, alice, "m1")
	checkReceipts(t, s, dAB, rcpt(alice, 1, 1), rcpt(bob, 0, 0))

	// A mark on a conversation without messages (gTeam was never created)
	// next to a real one changes only the real one.
	checkMark(t, s, bob, store.MarkDelivered, []protocol.Mark{mk(gTeam, 3), mk(dAB, 1)}, change(dAB, 1, 0))
	checkReceipts(t, s, gTeam)
}

func testMarkSameConvTwice(t *testing.T, s Engine) {
	newTeam(t, s) // every member at 1
	sendN(t, s, dAB, alice, "ab", 4)
	sendN(t, s, gTeam, alice, "g", 3) // seqs 2..4
	mark(t, s, carol, store.MarkDelivered, mk(gTeam, 4))

	// One call with several marks per conversation: the highest counts,
	// wherever it is, and each conversation is reported once.
	checkMark(t, s, bob, store.MarkDelivered,
		[]protocol.Mark{mk(dAB, 1), mk(gTeam, 3), mk(dAB, 3), mk(gTeam, 2), mk(dAB, 2)},
		change(dAB, 3, 0), change(gTeam, 3, 1))
	checkReceipts(t, s, dAB, rcpt(alice, 4, 4), rcpt(bob, 3, 0))
	checkReceipts(t, s, gTeam, rcpt(alice, 4, 4), rcpt(bob, 3, 1), rcpt(carol, 4, 1))

	checkMark(t, s, bob, store.MarkRead,
		[]protocol.Mark{mk(dAB, 4), mk(dAB, 1)},
		change(dAB, 4, 4))
	checkReceipts(t, s, dAB, rcpt(alice, 4, 4), rcpt(bob, 4, 4))
}

func testMarkTickChangeDirect(t *testing.T, s Engine) {
	sendN(t, s, dAB, alice, "m", 3)
	// alice's boundaries are at 3, bob's at 0: the minimum is bob's.
	if got, want := minimum(t, s, dAB), (protocol.Ticks{}); got != want {
		t.Fatalf("minimum = %+v, want %+v", got, want)
	}
	checkMark(t, s, bob, store.MarkDelivered, []protocol.Mark{mk(dAB, 2)}, change(dAB, 2, 0))
	checkMark(t, s, bob, store.MarkDelivered, []protocol.Mark{mk(dAB, 2)})
	checkMark(t, s, bob, store.MarkDelivered, []protocol.Mark{mk(dAB, 1)})
	checkMark(t, s, bob, store.MarkRead, []protocol.Mark{mk(dAB, 1)}, change(dAB, 2, 1))
	checkMark(t, s, bob, store.MarkDelivered, []protocol.Mark{mk(dAB, 3)}, change(dAB, 3, 1))
	checkMark(t, s, bob, store.MarkRead, []protocol.Mark{mk(dAB, 3)}, change(dAB, 3, 3))
	checkMark(t, s, bob, store.MarkRead, []protocol.Mark{mk(dAB, 3)})
	// alice's own marks never move the minimum: she is ahead.
	checkMark(t, s, alice, store.MarkRead, []protocol.Mark{mk(dAB, 3)})
	if got, want := minimum(t, s, dAB), (protocol.Ticks{DeliveredSeq: 3, ReadSeq: 3}); got != want {
		t.Errorf("minimum = %+v, want %+v", got, want)
	}
}

func testMarkTickChangeGroup(t *testing.T, s Engine) {
	newTeam(t, s)                     // every member at 1
	sendN(t, s, gTeam, alice, "g", 2) // seqs 2 and 3
	// bob alone cannot raise the minimum: carol is at 1.
	checkMark(t, s, bob, store.MarkDelivered, []protocol.Mark{mk(gTeam, 3)})
	checkMark(t, s, bob, store.MarkRead, []protocol.Mark{mk(gTeam, 3)})
	checkMark(t, s, carol, store.MarkDelivered, []protocol.Mark{mk(gTeam, 2)}, change(gTeam, 2, 1))
	checkMark(t, s, carol, store.MarkDelivered, []protocol.Mark{mk(gTeam, 3)}, change(gTeam, 3, 1))
	checkMark(t, s, carol, store.MarkRead, []protocol.Mark{mk(gTeam, 3)}, change(gTeam, 3, 3))
	if got, want := minimum(t, s, gTeam), (protocol.Ticks{DeliveredSeq: 3, ReadSeq: 3}); got != want {
		t.Errorf("minimum = %+v, want %+v", got, want)
	}

	// A new message from bob: alice and carol are behind it.
	send(t, s, gTeam, bob, "g-4")
	checkMark(t, s, carol, store.MarkRead, []protocol.Mark{mk(gTeam, 4)})
	checkMark(t, s, alice, store.MarkDelivered, []protocol.Mark{mk(gTeam, 4)}, change(gTeam, 4, 3))
	checkMark(t, s, alice, store.MarkRead, []protocol.Mark{mk(gTeam, 4)}, change(gTeam, 4, 4))
}

// testMarkConcurrent raises one boundary from many goroutines: it ends at
// the highest mark, and every rise of the minimum is reported exactly once.
func testMarkConcurrent(t *testing.T, s Engine) {
	const n = 30
	sendN(t, s, dAB, alice, "m", n)
	for _, kind := range []store.MarkKind{store.MarkDelivered, store.MarkRead} {
		changes := make([][]store.TickChange, n)
		errs := make([]error, n)
		parallel(n, func(i int) {
			var res store.MarkResult
			res, errs[i] = s.Mark(context.Background(), bob, kind, []protocol.Mark{mk(dAB, int64(i+1))})
			if errs[i] == nil {
				errs[i] = res.Written(context.Background())
			}
			changes[i] = res.Ticks
		})
		var reported []int64
		for i, err := range errs {
			if err != nil {
				t.Fatalf("Mark %v %d: %v", kind, i+1, err)
			}
			for _, c := range changes[i] {
				if c.Conv != dAB {
					t.Errorf("Mark %v %d reported %+v", kind, i+1, c)
				}
				if kind == store.MarkDelivered {
					if c.Ticks.ReadSeq != 0 || c.Ticks.DeliveredSeq > int64(i+1) {
						t.Errorf("Mark delivered %d reported %+v", i+1, c.Ticks)
					}
					reported = append(reported, c.Ticks.DeliveredSeq)
				} else {
					if c.Ticks.DeliveredSeq != n || c.Ticks.ReadSeq > int64(i+1) {
						t.Errorf("Mark read %d reported %+v", i+1, c.Ticks)
					}
					reported = append(reported, c.Ticks.ReadSeq)
				}
			}
		}
		slices.Sort(reported)
		if len(reported) == 0 || reported[len(reported)-1] != n {
			t.Errorf("Mark %v: reported minima %v, want the last to be %d", kind, reported, n)
		}
		if len(slices.Compact(slices.Clone(reported))) != len(reported) {
			t.Errorf("Mark %v: reported minima %v, want each rise once", kind, reported)
		}
	}
	checkReceipts(t, s, dAB, rcpt(alice, n, n), rcpt(bob, n, n))
}

func testAppendTicks(t *testing.T, s Engine) {
	for i := 1; i <= 3; i++ {
		if res := send(t, s, dAB, alice, fmt.Sprintf("a-%d", i)); res.Ticks != nil {
			t.Errorf("alice's message %d: Ticks = %+v, want nil (bob is at 0)", i, *res.Ticks)
		}
	}
	// bob replies: he has read everything before his message.
	res := send(t, s, dAB, bob, "b-4")
	if want := (protocol.Ticks{DeliveredSeq: 3, ReadSeq: 3}); res.Ticks == nil || *res.Ticks != want {
		t.Errorf("bob's reply: Ticks = %v, want %+v", res.Ticks, want)
	}
	res = send(t, s, dAB, alice, "a-5")
	if want := (protocol.Ticks{DeliveredSeq: 4, ReadSeq: 4}); res.Ticks == nil || *res.Ticks != want {
		t.Errorf("alice's answer: Ticks = %v, want %+v", res.Ticks, want)
	}
	// Consecutive messages from one sender raise nothing.
	if res := send(t, s, dAB, alice, "a-6"); res.Ticks != nil {
		t.Errorf("alice's second message in a row: Ticks = %+v, want nil", *res.Ticks)
	}

	// In a group one reply is not enough while another member is behind.
	newTeam(t, s)                     // every member at 1
	sendN(t, s, gTeam, alice, "g", 2) // seqs 2 and 3
	if res := send(t, s, gTeam, bob, "g-b"); res.Ticks != nil {
		t.Errorf("group reply with carol at 1: Ticks = %+v, want nil", *res.Ticks)
	}
	res = send(t, s, gTeam, carol, "g-c")
	if want := (protocol.Ticks{DeliveredSeq: 3, ReadSeq: 3}); res.Ticks == nil || *res.Ticks != want {
		t.Errorf("group reply by the last member: Ticks = %v, want %+v", res.Ticks, want)
	}
}

func testPendingFirstUndelivered(t *testing.T, s Engine) {
	newTeam(t, s) // every member delivered up to 1: no rows
	checkPending(t, s, bob)

	send(t, s, dAB, alice, "m1")   // a row for bob at 1
	send(t, s, dAB, alice, "m2")   // put-if-absent: still 1
	send(t, s, gTeam, alice, "g2") // a row for bob and carol at 2
	send(t, s, gTeam, alice, "g3") // put-if-absent: still 2
	send(t, s, dAC, alice, "c1")
	checkPending(t, s, bob, row(dAB, 1, 0, 2), row(gTeam, 2, 1, 3))
	checkPending(t, s, carol, row(dAC, 1, 0, 1), row(gTeam, 2, 1, 3))
	checkPending(t, s, alice) // the sender holds its own messages

	// Later messages do not touch the row, but the newest seq it reports
	// follows the conversation.
	send(t, s, dAB, alice, "m3")
	checkPending(t, s, bob, row(dAB, 1, 0, 3), row(gTeam, 2, 1, 3))

	// ReplayFrom is the later of the row and the delivered boundary.
	ps := pending(t, s, bob)
	if got := ps[0].ReplayFrom(); got != 1 {
		t.Errorf("ReplayFrom of %+v = %d, want 1", ps[0], got)
	}
	mark(t, s, bob, store.MarkDelivered, mk(dAB, 2))
	ps = pending(t, s, bob)
	if want := row(dAB, 1, 2, 3); ps[0] != want {
		t.Fatalf("Pending(bob)[0] = %+v, want %+v", ps[0], want)
	}
	if got := ps[0].ReplayFrom(); got != 3 {
		t.Errorf("ReplayFrom of %+v = %d, want 3", ps[0], got)
	}
}

// testPendingStartsAtFirstUndelivered: a row created after some messages
// were delivered starts at the first one that was not, not at the message
// that created it, so nothing between is skipped on replay.
func testPendingStartsAtFirstUndelivered(t *testing.T, s Engine) {
	sendN(t, s, dAB, alice, "m", 3)
	mark(t, s, bob, store.MarkDelivered, mk(dAB, 3))
	checkPending(t, s, bob)
	send(t, s, dAB, alice, "m-4")
	checkPending(t, s, bob, row(dAB, 4, 3, 4))
	mark(t, s, bob, store.MarkDelivered, mk(dAB, 4))

	// Bob's delivered boundary lags: 5 and 6 were pushed, never acknowledged.
	send(t, s, dAB, alice, "m-5")
	send(t, s, dAB, alice, "m-6")
	mark(t, s, bob, store.MarkDelivered, mk(dAB, 5))
	send(t, s, dAB, alice, "m-7")
	checkPending(t, s, bob, row(dAB, 5, 5, 7))
	if got := pending(t, s, bob)[0].ReplayFrom(); got != 6 {
		t.Errorf("ReplayFrom = %d, want 6", got)
	}
}

func testPendingRemovedWhenDelivered(t *testing.T, s Engine) {
	newTeam(t, s) // every member delivered up to 1: no rows
	sendN(t, s, dAB, alice, "m", 3)
	sendN(t, s, gTeam, alice, "g", 2) // seqs 2 and 3
	checkPending(t, s, bob, row(dAB, 1, 0, 3), row(gTeam, 2, 1, 3))

	// Not before the newest seq.
	mark(t, s, bob, store.MarkDelivered, mk(dAB, 2))
	checkPending(t, s, bob, row(dAB, 1, 2, 3), row(gTeam, 2, 1, 3))
	// A new message moves the newest seq: delivering the old newest is not
	// enough.
	send(t, s, dAB, alice, "m-4")
	mark(t, s, bob, store.MarkDelivered, mk(dAB, 3))
	checkPending(t, s, bob, row(dAB, 1, 3, 4), row(gTeam, 2, 1, 3))

	// Delivered up to the newest: the row is gone, the other one stays.
	mark(t, s, bob, store.MarkDelivered, mk(dAB, 4))
	checkPending(t, s, bob, row(gTeam, 2, 1, 3))
	// A clamped mark reaches the newest too.
	mark(t, s, bob, store.MarkDelivered, mk(gTeam, 99))
	checkPending(t, s, bob)

	// New messages: a new row at the first one not delivered.
	send(t, s, dAB, alice, "m-5")
	send(t, s, dAB, alice, "m-6")
	checkPending(t, s, bob, row(dAB, 5, 4, 6))
}

func testPendingRemovedByRead(t *testing.T, s Engine) {
	sendN(t, s, dAB, alice, "m", 3)
	mark(t, s, bob, store.MarkRead, mk(dAB, 2))
	checkPending(t, s, bob, row(dAB, 1, 2, 3))
	// Read implies delivered: reading the newest removes the row.
	mark(t, s, bob, store.MarkRead, mk(dAB, 3))
	checkPending(t, s, bob)
}

// testPendingRemovedAfterReply: bob misses messages, then replies from a
// device that never acknowledged them. Sending implies reading: his
// boundaries move to his own message, the newest, so his pending row goes.
func testPendingRemovedAfterReply(t *testing.T, s Engine) {
	newTeam(t, s) // every member delivered up to 1: no rows
	sendN(t, s, dAB, alice, "m", 2)
	sendN(t, s, gTeam, alice, "g", 2) // seqs 2 and 3
	send(t, s, dAB, bob, "reply")
	checkReceipts(t, s, dAB, rcpt(alice, 2, 2), rcpt(bob, 3, 3))
	checkPending(t, s, bob, row(gTeam, 2, 1, 3)) // only the conversation he replied in
	// ... and alice now has bob's reply pending.
	checkPending(t, s, alice, row(dAB, 3, 2, 3))
	// A delivered mark at the newest seq raises nothing and leaves no row.
	checkMark(t, s, bob, store.MarkDelivered, []protocol.Mark{mk(dAB, 3)})
	checkPending(t, s, bob, row(gTeam, 2, 1, 3))
}

func testClosed(t *testing.T, s Engine) {
	send(t, s, dAB, alice, "m1")
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx := context.Background()
	if _, err := s.Append(ctx, request(dAB, alice, "m2")); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Append after Close: err = %v, want ErrClosed", err)
	}
	if _, err := s.Mark(ctx, bob, store.MarkRead, []protocol.Mark{mk(dAB, 1)}); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Mark after Close: err = %v, want ErrClosed", err)
	}
	if _, _, err := s.History(ctx, dAB, store.HistoryQuery{Limit: 20}); !errors.Is(err, store.ErrClosed) {
		t.Errorf("History after Close: err = %v, want ErrClosed", err)
	}
	if _, err := s.Pending(ctx, bob); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Pending after Close: err = %v, want ErrClosed", err)
	}
	if _, err := s.Receipts(ctx, dAB); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Receipts after Close: err = %v, want ErrClosed", err)
	}
}

// A page stops at its byte budget, keeping the messages nearest the bound
// asked from, and at least one.
func testHistoryByteBudget(t *testing.T, s Engine) {
	for i := range 10 {
		send(t, s, dAB, alice, fmt.Sprintf("m%02d", i))
	}
	msgs := all(t, s, dAB)
	// budget fits the messages from seq first to last, and half another.
	budget := func(first, last int64) int {
		n := 0
		for _, m := range msgs[first-1 : last] {
			n += m.EncodedLen() + 1
		}
		return n + msgs[0].EncodedLen()/2
	}
	checkPage(t, s, dAB, store.HistoryQuery{Limit: 20, MaxBytes: budget(8, 10)}, seqRange(8, 10), true)
	checkPage(t, s, dAB, store.HistoryQuery{BeforeSeq: 8, Limit: 20, MaxBytes: budget(5, 7)}, seqRange(5, 7), true)
	checkPage(t, s, dAB, store.HistoryQuery{After: true, AfterSeq: 2, Limit: 20, MaxBytes: budget(3, 5)}, seqRange(3, 5), true)
	// The budget is not a reason for has_more when nothing more exists.
	checkPage(t, s, dAB, store.HistoryQuery{After: true, AfterSeq: 7, Limit: 20, MaxBytes: budget(8, 10)}, seqRange(8, 10), false)
	// Limit still applies, and one message comes even over the budget.
	checkPage(t, s, dAB, store.HistoryQuery{Limit: 2, MaxBytes: budget(8, 10)}, seqRange(9, 10), true)
	checkPage(t, s, dAB, store.HistoryQuery{Limit: 20, MaxBytes: 1}, seqRange(10, 10), true)
}
