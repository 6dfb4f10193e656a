package dynamostore

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/imcore/im/internal/testservices"
	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/engine"
	"github.com/imcore/im/server/store"
)

// TestRelationCutAtEveryPointIsRepaired kills a process storing a
// deletion after each of its DynamoDB calls in turn: wherever it stops,
// either the deletion is not stored and the target stands whole, or it is
// in the log and the engine's repair (at the next start, or when a node
// takes the conversation over) applies it — the target deleted, its body
// and its edit's body gone from the items; and the sender's retry of the
// unanswered send finishes it in every case.
func TestRelationCutAtEveryPointIsRepaired(t *testing.T) {
	s, e := openFresh(t, nil)
	ctx := t.Context()
	for cut := int64(0); ; cut++ {
		alice, bob := fmt.Sprintf("alice%d", cut), fmt.Sprintf("bob%d", cut)
		conv, _ := protocol.DirectConv(alice, bob)
		target := mustAppend(t, s, protocol.Message{Conv: conv, MsgID: "t", From: alice, Body: "secret target", ServerTS: 1000}).Msg
		edit := mustAppend(t, s, protocol.Message{Conv: conv, MsgID: "e", From: alice, Body: "secret edit", ServerTS: 1001,
			Kind: protocol.KindEdit, RefSeq: target.Seq}).Msg
		var k killer
		db, err := NewClient(ctx, testservices.DynamoDB(t), "us-east-1", k.option)
		if err != nil {
			t.Fatal(err)
		}
		dying, err := Open(ctx, Options{DynamoDB: db, Redis: e.redis, Prefix: s.prefix})
		if err != nil {
			t.Fatal(err)
		}
		k.dieAfter(cut)
		_, err = dying.Append(ctx, protocol.Message{Conv: conv, MsgID: "d", From: alice, ServerTS: 1002,
			Kind: protocol.KindDelete, RefSeq: target.Seq})
		if err != nil && !errors.Is(err, errKilled) {
			t.Fatalf("cut after %d calls: %v", cut, err)
		}
		finished := err == nil

		restarted, err := Open(ctx, Options{DynamoDB: e.db, Redis: e.redis, Prefix: s.prefix})
		if err != nil {
			t.Fatal(err)
		}
		eng, err := engine.New(ctx, restarted, engine.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err == nil {
			err = eng.Repair(ctx)
		}
		if err != nil {
			t.Fatalf("cut after %d calls: repair: %v", cut, err)
		}
		eng.Close()
		delSeq, notStored := s.MessageSeq(ctx, conv, "d")
		rec, err := s.Conversation(ctx, conv)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Message(ctx, conv, target.Seq)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case notStored != nil:
			if got.Deleted || got.Body != "secret edit" {
				t.Fatalf("cut after %d calls, the deletion not stored: target %+v, want it whole as edited", cut, got)
			}
		case rec.MaxSeq >= delSeq:
			// In the log: repair applied it.
			wantErased(t, s, conv, cut, target.Seq, edit.Seq)
		}
		// The sender, unanswered, sends it again: stored or not, the
		// retry finishes it.
		if _, err := s.Append(ctx, protocol.Message{Conv: conv, MsgID: "d", From: alice, ServerTS: 1003,
			Kind: protocol.KindDelete, RefSeq: target.Seq}); err != nil {
			t.Fatalf("cut after %d calls: retry: %v", cut, err)
		}
		wantErased(t, s, conv, cut, target.Seq, edit.Seq)
		if finished {
			if cut < 4 {
				t.Fatalf("the deletion was stored in %d calls: the test cuts nothing", cut)
			}
			return
		}
	}
}

// wantErased requires the target at seq deleted, and its body and its
// edit's (at editSeq) gone from their items.
func wantErased(t *testing.T, s *Backend, conv string, cut, seq, editSeq int64) {
	t.Helper()
	got, err := s.Message(t.Context(), conv, seq)
	if err != nil || !got.Deleted || got.Body != "" {
		t.Fatalf("cut after %d calls, the deletion stored: target %+v, %v; want it deleted after repair", cut, got, err)
	}
	for _, at := range []int64{seq, editSeq} {
		it, err := s.messageItemAt(t.Context(), conv, at)
		if err != nil {
			t.Fatal(err)
		}
		for name, v := range it {
			if strings.Contains(fmt.Sprint(v), "secret") {
				t.Fatalf("cut after %d calls: item %d still holds the text in %s: %v", cut, at, name, v)
			}
		}
	}
}

// TestApplyRelationIsIdempotent: applying entries again, and an older one
// after a newer, changes nothing (repair may apply any of them again).
func TestApplyRelationIsIdempotent(t *testing.T) {
	s, _ := openFresh(t, nil)
	ctx := t.Context()
	conv, _ := protocol.DirectConv("alice", "bob")
	target := mustAppend(t, s, protocol.Message{Conv: conv, MsgID: "t", From: "alice", Body: "hi", ServerTS: 1}).Msg
	older := mustAppend(t, s, protocol.Message{Conv: conv, MsgID: "r1", From: "bob", Body: "👍", ServerTS: 2, Kind: protocol.KindReaction, RefSeq: target.Seq}).Msg
	newer := mustAppend(t, s, protocol.Message{Conv: conv, MsgID: "r2", From: "bob", Body: "🎉", ServerTS: 3, Kind: protocol.KindReaction, RefSeq: target.Seq}).Msg
	for _, rel := range []protocol.Message{newer, older, newer} {
		if err := s.ApplyRelation(ctx, rel); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Message(ctx, conv, target.Seq)
	if err != nil {
		t.Fatal(err)
	}
	if rs := got.ReactionList(); len(rs) != 1 || rs[0].Body != "🎉" || len(rs[0].Users) != 1 {
		t.Fatalf("reactions after applying again = %+v, want bob's 🎉 alone", rs)
	}
	if err := s.ApplyRelation(ctx, protocol.Message{Conv: conv, Seq: 9, From: "bob", Kind: protocol.KindReaction, RefSeq: 99}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a relation to no message: %v, want ErrNotFound", err)
	}
}
