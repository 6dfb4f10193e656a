package dynamostore

import (
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// TestAFreshBoundaryRowIsOnePut: a member's first boundary row, marked
// Fresh, is one call (put, not a failed merge then a put); a Fresh row
// that finds a row stored (the hint was wrong) is merged into it, never
// lowering it.
func TestAFreshBoundaryRowIsOnePut(t *testing.T) {
	s, calls := countingBackend(t)
	ctx := t.Context()
	conv, _ := protocol.DirectConv("alice", "bob")
	if err := s.raise(ctx, conv, 5, 5, protocol.ConvDirect); err != nil {
		t.Fatal(err)
	}
	apply := func(r store.BoundaryRow) int64 {
		t.Helper()
		before := calls.Load()
		if err := s.Apply(ctx, store.Derived{Boundaries: []store.BoundaryRow{r}}); err != nil {
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
				return m.DeliveredSeq, m.ReadSeq
			}
		}
		t.Fatalf("no boundary row of %s in %+v", user, rec.Members)
		return 0, 0
	}

	if n := apply(store.BoundaryRow{User: "alice", Conv: conv, DeliveredSeq: 3, ReadSeq: 3, Fresh: true}); n != 1 {
		t.Errorf("a fresh row took %d calls, want 1", n)
	}
	if d, r := boundary("alice"); d != 3 || r != 3 {
		t.Errorf("alice's boundary = %d/%d, want 3/3", d, r)
	}
	// Wrongly fresh, and lower: the stored row stays.
	apply(store.BoundaryRow{User: "alice", Conv: conv, DeliveredSeq: 2, ReadSeq: 1, Fresh: true})
	if d, r := boundary("alice"); d != 3 || r != 3 {
		t.Errorf("alice's boundary after a lower fresh row = %d/%d, want 3/3", d, r)
	}
	// Wrongly fresh, and higher: merged up.
	apply(store.BoundaryRow{User: "alice", Conv: conv, DeliveredSeq: 5, ReadSeq: 4, Fresh: true})
	if d, r := boundary("alice"); d != 5 || r != 4 {
		t.Errorf("alice's boundary after a higher fresh row = %d/%d, want 5/4", d, r)
	}
}
