package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/server/store/memstore"
)

// seqLog is a memstore that stores a message at the seq it is given, as
// an owner's backend does.
type seqLog struct{ *memstore.Backend }

func (s seqLog) AppendAt(ctx context.Context, m protocol.Message, _ int64) (store.AppendResult, error) {
	// A seq at or below the newest is taken (the log keeps no gap below
	// its newest); one past the next would leave a gap memstore cannot
	// hold.
	page, _, err := s.History(ctx, m.Conv, store.HistoryQuery{Limit: protocol.MaxHistoryLimit})
	if err != nil {
		return store.AppendResult{}, err
	}
	if len(page) > 0 && m.Seq <= page[len(page)-1].Seq {
		for _, stored := range page {
			if stored.MsgID == m.MsgID {
				return store.AppendResult{Msg: stored, Duplicate: true}, nil
			}
		}
		return store.AppendResult{}, store.ErrSeqTaken
	}
	res, err := s.Append(ctx, m)
	if err == nil && !res.Duplicate && res.Msg.Seq != m.Seq {
		return res, fmt.Errorf("stored at %d, not at %d", res.Msg.Seq, m.Seq)
	}
	return res, err
}

func (s seqLog) NewestSeq(ctx context.Context, conv string) (int64, error) {
	msgs, _, err := s.History(ctx, conv, store.HistoryQuery{Limit: 1})
	if err != nil || len(msgs) == 0 {
		return 0, err
	}
	return msgs[0].Seq, nil
}

// elsewhere owns every conversation here and every user on another node,
// whose effects fail while failing is set.
type elsewhere struct {
	mu      sync.Mutex
	failing bool
}

func (o *elsewhere) OwnsConv(string) bool                       { return true }
func (o *elsewhere) HoldUser(string) (func(), bool)             { return nil, false }
func (o *elsewhere) Confirm(context.Context, WriteTicket) error { return nil }
func (o *elsewhere) UserFence(string) (int64, bool)             { return 1, true }
func (o *elsewhere) HoldWrite(string) (func(), func() time.Time, bool) {
	return func() {}, nil, true
}
func (o *elsewhere) Apply(_ context.Context, effects []Effect) ([]EffectResult, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.failing {
		return nil, errors.New("the members' owner is unreachable")
	}
	return make([]EffectResult, len(effects)), nil
}

// A send stored whose answer was an error (its derivation failed) was
// pushed by nobody: its repeat is answered as new, once, so that the
// caller pushes it; the repeat after that is a duplicate again.
func TestARepeatOfAFailedAppendIsAnsweredAsNew(t *testing.T) {
	owners := &elsewhere{failing: true}
	e, err := New(context.Background(), seqLog{memstore.New()}, Options{Owners: owners, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := store.AppendRequest{Msg: protocol.Message{Conv: "d:alice:bob", MsgID: "m1", From: "alice", Body: "hi"}, Members: []string{"alice", "bob"}}
	if _, err := e.Append(ctx, req); err == nil {
		t.Fatal("the first append succeeded though the members' owner failed")
	}
	owners.mu.Lock()
	owners.failing = false
	owners.mu.Unlock()
	res, err := e.Append(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Duplicate || res.Msg.Seq != 1 {
		t.Fatalf("the repeat of a failed append: seq %d, duplicate %v; want seq 1 answered as new", res.Msg.Seq, res.Duplicate)
	}
	res, err = e.Append(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Duplicate || res.Msg.Seq != 1 {
		t.Fatalf("the next repeat: seq %d, duplicate %v; want seq 1, a duplicate", res.Msg.Seq, res.Duplicate)
	}
}

// raisedMax is a log whose conversation record shows a max seq above its
// newest message: an owner raised it beside a write it died before.
type raisedMax struct {
	seqLog
	max int64
}

func (r raisedMax) Conversation(ctx context.Context, conv string) (store.ConvRecord, error) {
	rec, err := r.seqLog.Conversation(ctx, conv)
	rec.MaxSeq = max(rec.MaxSeq, r.max)
	return rec, err
}

// The seqs a dead owner raised the max seq to but never wrote go to the
// next messages of its successor: the log keeps no gap.
func TestSeqsRaisedButNeverWrittenGoToTheNextMessages(t *testing.T) {
	log := seqLog{memstore.New()}
	ctx := t.Context()
	if _, err := log.Append(ctx, protocol.Message{Conv: "d:alice:bob", MsgID: "m1", From: "alice", Body: "hi", Seq: 1}); err != nil {
		t.Fatal(err)
	}
	e, err := New(ctx, raisedMax{log, 3}, Options{Owners: &elsewhere{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var seqs []int64
	for i := range 3 {
		res, err := e.Append(ctx, store.AppendRequest{Msg: protocol.Message{Conv: "d:alice:bob", MsgID: fmt.Sprint("n", i), From: "alice", Body: "again"}, Members: []string{"alice", "bob"}})
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, res.Msg.Seq)
	}
	if fmt.Sprint(seqs) != "[2 3 4]" {
		t.Fatalf("the next messages took seqs %v; want [2 3 4] (2 and 3 were raised, never written)", seqs)
	}
}
