package engine_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/engine"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/server/store/memstore"
)

// refusingWrites is a backend whose next derived writes (Apply) fail, as
// DynamoDB's do for a moment when a node's lease is not yet renewed or a
// request times out: the writer retries them.
type refusingWrites struct {
	store.Backend
	refuse  atomic.Int64 // how many of the next writes fail
	refused atomic.Int64
}

func (b *refusingWrites) Apply(ctx context.Context, d store.Derived) error {
	if b.refuse.Add(-1) >= 0 {
		b.refused.Add(1)
		return errors.New("injected: the write timed out")
	}
	return b.Backend.Apply(ctx, d)
}

// TestAMarkOutlastsAFailedWriteOfItsRows: a mark is applied at once and
// answered once its rows are written; a write of them that fails for a
// moment is retried by the writer, and the mark is answered when the retry
// lands, not refused with the first failure (a refusal says nothing was
// changed, while the mark is applied and will be written).
func TestAMarkOutlastsAFailedWriteOfItsRows(t *testing.T) {
	ctx := t.Context()
	mem := memstore.New()
	be := &refusingWrites{Backend: mem}
	opts := engine.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	e, err := engine.New(ctx, be, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.Append(ctx, store.AppendRequest{
		Msg:     protocol.Message{Conv: dAB, MsgID: "m1", From: alice, Body: "hi"},
		Members: []string{alice, bob},
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.Barrier(ctx); err != nil {
		t.Fatal(err)
	}

	be.refuse.Store(2)
	res, err := e.Mark(ctx, bob, store.MarkRead, []protocol.Mark{{Conv: dAB, Seq: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Written(ctx); err != nil {
		t.Fatalf("the mark's rows were written on a retry, but the mark was answered: %v", err)
	}
	if n := be.refused.Load(); n != 2 {
		t.Fatalf("%d writes refused, want 2: the test refused nothing the mark waited on", n)
	}
	// What is stored: the receipts an engine started again reads.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := engine.New(ctx, mem.Reopen(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	rows, err := again.Receipts(ctx, dAB)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.User == bob {
			if r.ReadSeq != 1 {
				t.Fatalf("bob's stored read boundary is %d, want 1", r.ReadSeq)
			}
			return
		}
	}
	t.Fatalf("no stored receipt of bob's in %+v", rows)
}
