package engine

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/server/store/memstore"
)

// otherNode owns every user on another node: it applies effects in
// memory (recording them) and confirms their rows only when the test lets
// it. A restart makes the rows of its earlier life unconfirmable.
type otherNode struct {
	mu      sync.Mutex
	boot    string
	gen     uint64
	applied []Effect
	written chan struct{} // closed when the node has written its rows
}

func newOtherNode() *otherNode {
	return &otherNode{boot: "life-1", written: make(chan struct{})}
}

func (o *otherNode) OwnsConv(string) bool           { return true }
func (o *otherNode) HoldUser(string) (func(), bool) { return nil, false }
func (o *otherNode) UserFence(string) (int64, bool) { return 1, true }
func (o *otherNode) HoldWrite(string) (func(), func() time.Time, bool) {
	return func() {}, nil, true
}

func (o *otherNode) Apply(_ context.Context, effects []Effect) ([]EffectResult, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.gen++
	o.applied = append(o.applied, effects...)
	out := make([]EffectResult, len(effects))
	for i := range out {
		out[i].Ticket = WriteTicket{Node: "other", Boot: o.boot, Gen: o.gen}
	}
	return out, nil
}

func (o *otherNode) Confirm(ctx context.Context, t WriteTicket) error {
	o.mu.Lock()
	written := o.written
	o.mu.Unlock()
	select {
	case <-written:
	case <-ctx.Done():
		return ctx.Err()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if t.Boot != o.boot {
		// A wait in flight when the node restarted fails too.
		return errors.New("restarted since")
	}
	return nil
}

// restart loses what the node held in memory: tickets of its earlier life
// fail from now on.
func (o *otherNode) restart() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.boot = "life-2"
}

func (o *otherNode) appliedTo(user string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(slices.DeleteFunc(slices.Clone(o.applied), func(ef Effect) bool { return ef.User != user }))
}

// derivedSeq returns conv's derived watermark as the backend has it, once
// every settling derivation ended and every row put is written.
func derivedSeq(t *testing.T, e *Engine, conv string) int64 {
	t.Helper()
	e.settling.Wait()
	if err := e.Barrier(t.Context()); err != nil {
		t.Fatal(err)
	}
	rec, err := e.be.Conversation(t.Context(), conv)
	if err != nil {
		t.Fatal(err)
	}
	return rec.DerivedSeq
}

func startOwnedEngine(t *testing.T, owners Owners) *Engine {
	t.Helper()
	e, err := New(context.Background(), seqLog{memstore.New()}, Options{Owners: owners, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// sendHi sends alice's "hi" to bob.
func sendHi(t *testing.T, e *Engine) store.AppendResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := e.Append(ctx, store.AppendRequest{Msg: protocol.Message{Conv: "d:alice:bob", MsgID: "m1", From: "alice", Body: "hi"}, Members: []string{"alice", "bob"}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A send is answered once its effects on another node's users are applied
// there, before that node writes them; the conversation's watermark moves
// past the message only once the node confirms the rows written.
func TestSentBeforeOtherNodesWriteAndWatermarkAfter(t *testing.T) {
	other := newOtherNode()
	e := startOwnedEngine(t, other)
	res := sendHi(t, e)
	ctx := t.Context()
	if res.Msg.Seq != 1 || other.appliedTo("bob") != 1 {
		t.Fatalf("answered seq %d with %d effects on bob applied; want seq 1 and bob's applied", res.Msg.Seq, other.appliedTo("bob"))
	}
	if err := e.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	if rec, err := e.be.Conversation(ctx, "d:alice:bob"); err != nil || rec.DerivedSeq != 0 {
		t.Fatalf("watermark %d (err %v) before the other node wrote its rows; want 0", rec.DerivedSeq, err)
	}
	close(other.written)
	if got := derivedSeq(t, e, "d:alice:bob"); got != 1 {
		t.Fatalf("watermark %d once the rows are written; want 1", got)
	}
}

// Effects applied on a node that restarted before writing them are
// applied again where their users are now, and the watermark moves only
// once those are written: it never moves over rows that were lost.
func TestEffectsLostWithTheirNodeAreAppliedAgain(t *testing.T) {
	other := newOtherNode()
	e := startOwnedEngine(t, other)
	sendHi(t, e)
	other.restart()
	close(other.written)
	if got := derivedSeq(t, e, "d:alice:bob"); got != 1 {
		t.Fatalf("watermark %d; want 1 once the effects are applied again and written", got)
	}
	if n := other.appliedTo("bob"); n != 2 {
		t.Fatalf("bob's effects applied %d times; want 2 (again after the restart)", n)
	}
}
