package engine

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// handingOver is an owner of every user whose conversations it stops
// serving when told (a handover starting).
type handingOver struct {
	*otherNode
	serving atomic.Bool
}

func (h *handingOver) OwnsConv(string) bool { return h.serving.Load() }

// An append that reaches its writer after its conversation stopped being
// served here is refused with store.ErrMoved, writes nothing, and gives its
// seq back: sent again once the conversation is served (at its new owner,
// or here again), it takes that seq, so the log has no gap.
func TestAppendHandedOverBeforeItsWriteGoesToTheNewOwner(t *testing.T) {
	owners := &handingOver{otherNode: newOtherNode()}
	close(owners.written)
	e := startOwnedEngine(t, owners)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req := store.AppendRequest{Msg: protocol.Message{Conv: "d:alice:bob", MsgID: "m1", From: "alice", Body: "hi"}, Members: []string{"alice", "bob"}}

	owners.serving.Store(false)
	if _, err := e.Append(ctx, req); !errors.Is(err, store.ErrMoved) {
		t.Fatalf("append while handed over: %v, want store.ErrMoved", err)
	}
	if msgs, _, err := e.History(ctx, "d:alice:bob", store.HistoryQuery{Limit: 10}); err != nil || len(msgs) != 0 {
		t.Fatalf("history after a refused append = %v, %v; want nothing written", msgs, err)
	}

	owners.serving.Store(true)
	res, err := e.Append(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Msg.Seq != 1 || res.Duplicate {
		t.Errorf("sent again: seq %d (duplicate %v), want seq 1, new", res.Msg.Seq, res.Duplicate)
	}
}
