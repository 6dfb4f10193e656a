package chat

import (
	"context"
	"slices"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/hub"
	"github.com/imcore/im/server/store"
)

// raceStore is a store caught between the append of bob's message 2 and
// its derivation: the message is in the log, bob's pending row still
// starts at 1 and his delivered boundary is still 0.
type raceStore struct {
	Engine
	msgs []protocol.Message
}

func (s raceStore) Pending(context.Context, string) ([]store.PendingDelivery, error) {
	return []store.PendingDelivery{{Conv: "g1", FirstUndelivered: 1, NewestSeq: int64(len(s.msgs))}}, nil
}

func (s raceStore) History(_ context.Context, _ string, q store.HistoryQuery) ([]protocol.Message, bool, error) {
	return s.msgs[q.AfterSeq:], false, nil
}

type pushRecorder []int64

func (r *pushRecorder) DeliverWait(_ context.Context, p hub.Push) error {
	*r = append(*r, p.Seq)
	return nil
}

// A replay never pushes the user's own messages, even when it reads the
// conversation before storing one has raised its sender's boundaries.
func TestReplaySkipsTheUsersOwnMessages(t *testing.T) {
	st := raceStore{msgs: []protocol.Message{
		{Conv: "g1", Seq: 1, From: "alice", Kind: protocol.KindSystem, Body: "alice created the group"},
		{Conv: "g1", Seq: 2, From: "bob", Body: "mine"},
		{Conv: "g1", Seq: 3, From: "carol", Body: "theirs"},
	}}
	svc := New(st, hub.New(), protocol.DefaultLimits, nil)
	var got pushRecorder
	if err := svc.Replay(context.Background(), "bob", &got, Replayed{}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != 1 || got[1] != 3 {
		t.Fatalf("replayed seqs %v, want [1 3]", got)
	}
}

// lateStore is a conversation whose seq 3 is still being written when a
// replay first reads it (a later message, 4, is already stored), and is
// stored by the next read, unless never.
type lateStore struct {
	Engine
	reads int
	never bool
}

func (s *lateStore) Pending(context.Context, string) ([]store.PendingDelivery, error) {
	return []store.PendingDelivery{{Conv: "g1", FirstUndelivered: 1, NewestSeq: 4}}, nil
}

func (s *lateStore) History(_ context.Context, _ string, q store.HistoryQuery) ([]protocol.Message, bool, error) {
	s.reads++
	var out []protocol.Message
	for seq := q.AfterSeq + 1; seq <= 4; seq++ {
		if seq == 3 && (s.never || s.reads == 1) {
			continue
		}
		out = append(out, protocol.Message{Conv: "g1", Seq: seq, From: "carol", Body: "m"})
	}
	return out, false, nil
}

// A replay that finds a seq missing below the newest waits for it, rather
// than push what comes after it first.
func TestReplayWaitsForASeqStillBeingWritten(t *testing.T) {
	st := &lateStore{}
	svc := New(st, hub.New(), protocol.DefaultLimits, nil)
	var got pushRecorder
	if err := svc.Replay(t.Context(), "bob", &got, Replayed{}); err != nil {
		t.Fatal(err)
	}
	if want := []int64{1, 2, 3, 4}; !slices.Equal(got, want) {
		t.Fatalf("replayed seqs %v, want %v", got, want)
	}
}

// A seq that never comes (its append left it unused) holds the replay up
// only for the pass's time for gaps, then the replay goes on past it.
func TestReplayGoesPastASeqThatNeverComes(t *testing.T) {
	st := &lateStore{never: true}
	svc := New(st, hub.New(), protocol.DefaultLimits, nil)
	svc.gapWait = 0
	var got pushRecorder
	if err := svc.Replay(t.Context(), "bob", &got, Replayed{}); err != nil {
		t.Fatal(err)
	}
	if want := []int64{1, 2, 4}; !slices.Equal(got, want) {
		t.Fatalf("replayed seqs %v, want %v", got, want)
	}
}
