package backendtest

import (
	"errors"
	"slices"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// testAppendAt checks AppendAt: a message stored at the seq its owner
// gave, in any order, a seq held refused, the key's rules as Append's, and
// the newest seq held or promised.
func testAppendAt(t *testing.T, b store.Backend) {
	sa := b
	ctx := t.Context()
	at := func(m protocol.Message, seq int64) (store.AppendResult, error) {
		m.Seq = seq
		return sa.AppendAt(ctx, m, seq)
	}
	// Seq 2 is written before seq 1: both are stored where they were given.
	if res, err := at(msg(dAB, "alice", "m2"), 2); err != nil || res.Msg.Seq != 2 || res.Duplicate {
		t.Fatalf("AppendAt seq 2 = %+v, %v", res, err)
	}
	if n, err := sa.NewestSeq(ctx, dAB); err != nil || n < 2 {
		t.Fatalf("NewestSeq with seq 1 still free = %d, %v; want at least 2", n, err)
	}
	if res, err := at(msg(dAB, "bob", "m1"), 1); err != nil || res.Msg.Seq != 1 {
		t.Fatalf("AppendAt seq 1 = %+v, %v", res, err)
	}
	// A seq held is refused, changing nothing.
	if _, err := at(msg(dAB, "alice", "m3"), 2); !errors.Is(err, store.ErrSeqTaken) {
		t.Fatalf("AppendAt a seq held = %v, want ErrSeqTaken", err)
	}
	if _, err := b.MessageSeq(ctx, dAB, "m3"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the refused message's key is stored: %v", err)
	}
	// A key stored is answered as Append answers it, wherever asked.
	if res, err := at(msg(dAB, "alice", "m2"), 5); err != nil || !res.Duplicate || res.Msg.Seq != 2 {
		t.Fatalf("AppendAt a repeat = %+v, %v; want the original at seq 2", res, err)
	}
	if _, err := at(msg(dAB, "bob", "m2"), 6); !errors.Is(err, store.ErrMsgIDTaken) {
		t.Fatalf("AppendAt another sender's key = %v, want ErrMsgIDTaken", err)
	}
	// A seq given past a hole: the hole stays free, and Append takes a
	// seq above the newest held or promised (a backend may promise the
	// seqs of refused attempts too).
	if _, err := at(msg(dAB, "alice", "m4"), 4); err != nil {
		t.Fatal(err)
	}
	newest, err := sa.NewestSeq(ctx, dAB)
	if err != nil || newest < 4 {
		t.Fatalf("NewestSeq = %d, %v; want at least 4", newest, err)
	}
	next := appendOK(t, b, msg(dAB, "bob", "m5")).Msg.Seq
	if next <= newest {
		t.Fatalf("Append after NewestSeq %d took seq %d", newest, next)
	}
	page, _, err := b.History(ctx, dAB, store.HistoryQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, m := range page {
		seqs = append(seqs, m.Seq)
	}
	if want := []int64{1, 2, 4, next}; !slices.Equal(seqs, want) {
		t.Fatalf("history seqs = %v, want %v", seqs, want)
	}
	if _, err := b.Message(ctx, dAB, 3); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the hole at seq 3 reads as %v, want ErrNotFound", err)
	}
}
