package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/server/store/memstore"
)

// The seqs a conversation's newest page skips are the holes an owner
// gives to its next messages.
func TestSkippedSeqsOfTheNewestPage(t *testing.T) {
	page := func(seqs ...int64) []protocol.Message {
		out := make([]protocol.Message, len(seqs))
		for i, s := range seqs {
			out[i] = protocol.Message{Seq: s}
		}
		return out
	}
	for _, c := range []struct {
		name  string
		page  []protocol.Message
		whole bool
		known []int64
		want  []int64
	}{
		{"empty", nil, true, nil, nil},
		{"contiguous", page(1, 2, 3), true, nil, nil},
		{"a hole in the middle", page(5, 6, 9, 10), false, nil, []int64{7, 8}},
		{"the whole log starts late", page(3, 4), true, nil, []int64{1, 2}},
		{"a partial page says nothing below it", page(3, 4), false, nil, nil},
		{"known holes are not taken twice", page(1, 4), true, []int64{2}, []int64{3}},
	} {
		got := skipped(c.page, c.whole, c.known)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: skipped %v, want %v", c.name, got, c.want)
		}
	}
}

// unreadableHistory is a raisedMax whose History fails while failures is
// above zero, once per call: a DynamoDB outage, or a request cut short.
type unreadableHistory struct {
	raisedMax
	failures *atomic.Int32
}

func (u unreadableHistory) History(ctx context.Context, conv string, q store.HistoryQuery) ([]protocol.Message, bool, error) {
	if u.failures.Add(-1) >= 0 {
		return nil, false, errors.New("injected: the log is unreadable")
	}
	return u.raisedMax.History(ctx, conv, q)
}

// An owner that could not read a conversation's newest page gives no seq
// until it has: the holes that page shows (seqs 2 and 3 here, raised by a
// dead owner and never written) go to the next messages, not past them
// into a gap nothing fills.
func TestNoSeqIsGivenBeforeTheHolesAreRead(t *testing.T) {
	log := seqLog{memstore.New()}
	ctx := t.Context()
	if _, err := log.Append(ctx, protocol.Message{Conv: "d:alice:bob", MsgID: "m1", From: "alice", Body: "hi", Seq: 1}); err != nil {
		t.Fatal(err)
	}
	failures := &atomic.Int32{}
	failures.Store(1)
	e, err := New(ctx, unreadableHistory{raisedMax{log, 3}, failures}, Options{Owners: &elsewhere{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	send := func(id string) (store.AppendResult, error) {
		return e.Append(ctx, store.AppendRequest{Msg: protocol.Message{Conv: "d:alice:bob", MsgID: id, From: "alice", Body: "again"}, Members: []string{"alice", "bob"}})
	}
	if res, err := send("n0"); err == nil {
		t.Fatalf("the send was given seq %d while the log was unreadable; want an error", res.Msg.Seq)
	}
	var seqs []int64
	for i := range 3 {
		res, err := send(fmt.Sprint("n", i))
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, res.Msg.Seq)
	}
	if fmt.Sprint(seqs) != "[2 3 4]" {
		t.Fatalf("the sends once the log was readable took seqs %v; want [2 3 4]", seqs)
	}
}

// promisedLog is a seqLog whose conversation has a max seq raised to
// *max by another writer (a node that lost the conversation), above its
// newest message.
type promisedLog struct {
	seqLog
	max *atomic.Int64
}

func (p promisedLog) Conversation(ctx context.Context, conv string) (store.ConvRecord, error) {
	rec, err := p.seqLog.Conversation(ctx, conv)
	rec.MaxSeq = max(rec.MaxSeq, p.max.Load())
	return rec, err
}

func (p promisedLog) NewestSeq(ctx context.Context, conv string) (int64, error) {
	newest, err := p.seqLog.NewestSeq(ctx, conv)
	return max(newest, p.max.Load()), err
}

// A node that lost the conversation stored seq 3 and raised the max seq
// to 5 without writing 4 and 5: the owner, whose seq 3 is taken, goes on
// above the max seq, and gives 4 and 5, which it passed over, to its next
// messages rather than leave them a gap.
func TestSeqsPassedOverAfterASeqTakenGoToTheNextMessages(t *testing.T) {
	log := seqLog{memstore.New()}
	ctx := t.Context()
	if _, err := log.Append(ctx, protocol.Message{Conv: "d:alice:bob", MsgID: "m1", From: "alice", Body: "hi", Seq: 1}); err != nil {
		t.Fatal(err)
	}
	promised := &atomic.Int64{}
	e, err := New(ctx, promisedLog{log, promised}, Options{Owners: &elsewhere{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	send := func(id string) int64 {
		t.Helper()
		res, err := e.Append(ctx, store.AppendRequest{Msg: protocol.Message{Conv: "d:alice:bob", MsgID: id, From: "alice", Body: id}, Members: []string{"alice", "bob"}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Msg.Seq
	}
	if seq := send("n0"); seq != 2 {
		t.Fatalf("the first send took seq %d, want 2", seq)
	}
	// The other writer.
	if _, err := log.Append(ctx, protocol.Message{Conv: "d:alice:bob", MsgID: "stale", From: "bob", Body: "late", Seq: 3}); err != nil {
		t.Fatal(err)
	}
	promised.Store(5)
	var seqs []int64
	for i := 1; i <= 3; i++ {
		seqs = append(seqs, send(fmt.Sprint("n", i)))
	}
	if fmt.Sprint(seqs) != "[4 5 6]" {
		t.Fatalf("the sends after seq 3 was taken took seqs %v; want [4 5 6]", seqs)
	}
}

// A seq given back goes to the next message even once the max seq moved
// past it (a message placed above it by the backend, derived meanwhile):
// lowering the newest seq given instead lost seqs 5 to 9 of a
// conversation for good in a cluster fault run.
func TestASeqGivenBackIsGivenAgainAfterTheMaxSeqMovedPastIt(t *testing.T) {
	cs := &convState{conv: "d:alice:bob", maxSeq: 4, assigned: 4}
	for range 5 {
		cs.takeSeqAbove(0) // 5 to 9, in flight
	}
	for seq := int64(9); seq >= 5; seq-- {
		cs.giveBack(seq) // their writes failed, newest first
	}
	cs.maxSeq = 10 // a repeat of an earlier send, placed above them
	var seqs []int64
	for range 6 {
		seqs = append(seqs, cs.takeSeqAbove(0))
	}
	if fmt.Sprint(seqs) != "[5 6 7 8 9 11]" {
		t.Fatalf("the next messages took seqs %v; want [5 6 7 8 9 11]", seqs)
	}
}
