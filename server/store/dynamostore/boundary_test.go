package dynamostore

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// TestADirectChatsBoundariesAreWrittenWithItsHead: a direct chat's
// boundary rows go on its conversation's item, in the write of its head
// (one call for both); rows without the head are written alone; a row
// never lowers a boundary; and a boundary row stored in message_status
// before (the earlier layout) still counts, the higher of the two.
func TestADirectChatsBoundariesAreWrittenWithItsHead(t *testing.T) {
	s, calls := countingBackend(t)
	ctx := t.Context()
	conv, _ := protocol.DirectConv("alice", "bob")
	if err := s.raise(ctx, conv, 9, 9, protocol.ConvDirect); err != nil {
		t.Fatal(err)
	}
	apply := func(d store.Derived) int64 {
		t.Helper()
		before := calls.Load()
		if err := s.Apply(ctx, d); err != nil {
			t.Fatal(err)
		}
		return calls.Load() - before
	}
	boundary := func(user string) (delivered, read int64) {
		t.Helper()
		rec, err := s.Conversation(ctx, conv)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range rec.Members {
			if m.User == user {
				if !m.HasBoundaries {
					t.Fatalf("%s has no boundaries in %+v", user, rec.Members)
				}
				return m.DeliveredSeq, m.ReadSeq
			}
		}
		t.Fatalf("%s is not a member: %+v", user, rec.Members)
		return 0, 0
	}
	row := func(user string, delivered, read int64) store.BoundaryRow {
		return store.BoundaryRow{User: user, Conv: conv, DeliveredSeq: delivered, ReadSeq: read}
	}
	head := store.ConvDerived{Conv: conv, DerivedSeq: 3, Ticks: protocol.Ticks{DeliveredSeq: 2}}

	// A send's rows: the sender's boundary, with the head.
	if n := apply(store.Derived{Boundaries: []store.BoundaryRow{row("alice", 3, 3)}, Convs: []store.ConvDerived{head}}); n != 1 {
		t.Errorf("a direct chat's boundary row with its head took %d calls, want 1", n)
	}
	if d, r := boundary("alice"); d != 3 || r != 3 {
		t.Errorf("alice = %d/%d, want 3/3", d, r)
	}
	// A mark's rows, both members', with the head: still one write.
	head.Ticks = protocol.Ticks{DeliveredSeq: 3, ReadSeq: 2}
	if n := apply(store.Derived{Boundaries: []store.BoundaryRow{row("bob", 3, 2), row("alice", 3, 3)}, Convs: []store.ConvDerived{head}}); n != 1 {
		t.Errorf("two members' rows with the head took %d calls, want 1", n)
	}
	if d, r := boundary("bob"); d != 3 || r != 2 {
		t.Errorf("bob = %d/%d, want 3/2", d, r)
	}
	// Without the head, and lower: written alone, lowering nothing.
	apply(store.Derived{Boundaries: []store.BoundaryRow{row("bob", 1, 1)}})
	if d, r := boundary("bob"); d != 3 || r != 2 {
		t.Errorf("bob after a lower row = %d/%d, want 3/2", d, r)
	}
	// A read implies delivered.
	apply(store.Derived{Boundaries: []store.BoundaryRow{row("bob", 3, 5)}})
	if d, r := boundary("bob"); d != 5 || r != 5 {
		t.Errorf("bob after reading 5 = %d/%d, want 5/5", d, r)
	}
	// A row of the earlier layout, higher, still counts.
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: s.table(tStatus),
		Item: item{aUser: strV("alice"), aConv: strV(conv), aDelivered: numV(8), aRead: numV(7), aJoined: numV(0)}}); err != nil {
		t.Fatal(err)
	}
	if d, r := boundary("alice"); d != 8 || r != 7 {
		t.Errorf("alice with a message_status row at 8/7 = %d/%d, want 8/7", d, r)
	}
	// Pending deliveries show the delivered boundary from the item.
	if err := s.Apply(ctx, store.Derived{Pending: []store.PendingRow{{User: "bob", Conv: conv, FirstUndelivered: 6}}}); err != nil {
		t.Fatal(err)
	}
	pending, err := s.Pending(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1 || pending[0].LastDeliveredSeq != 5 || pending[0].NewestSeq != 9 {
		t.Errorf("bob's pending deliveries = %+v, want one with delivered 5 of 9", pending)
	}
}
