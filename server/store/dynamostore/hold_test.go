package dynamostore

import (
	"sync/atomic"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/session"
)

// Apply skips, without error, the sessions and totals of a user whose
// Hold refuses (its shard was handed over since the batch was cut), and
// writes the others' under theirs, releasing each hold once written.
func TestApplySkipsTheRowsOfAUserNotHeld(t *testing.T) {
	s, _ := openFresh(t, nil)
	conv, _ := protocol.DirectConv("alice", "bob")
	var released atomic.Int64
	d := store.Derived{
		Sessions: []session.State{
			{User: "alice", Conv: conv, ActiveTS: 100, WriteTS: 100, UnreadCount: 1},
			{User: "bob", Conv: conv, ActiveTS: 100, WriteTS: 100, UnreadCount: 1},
		},
		Totals: []store.TotalRow{{User: "alice", Total: 1, At: 100}, {User: "bob", Total: 1, At: 100}},
		Fences: map[string]int64{"alice": 3, "bob": 3},
		Hold: func(user string) (func(), bool) {
			if user == "bob" {
				return nil, false
			}
			return func() { released.Add(1) }, true
		},
	}
	if err := s.Apply(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	got, err := s.Sessions(t.Context(), conv, []string{"alice", "bob"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got["alice"]; !ok {
		t.Errorf("alice's session, held, was not written")
	}
	if _, ok := got["bob"]; ok {
		t.Errorf("bob's session was written though his hold was refused")
	}
	for user, want := range map[string]int64{"alice": 1, "bob": 0} {
		rec, err := s.User(t.Context(), user)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Totals[""] != want {
			t.Errorf("%s's total = %d, want %d", user, rec.Totals[""], want)
		}
	}
	if released.Load() != 1 {
		t.Errorf("%d holds released, want alice's 1", released.Load())
	}
}
