package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
		Hold: func(user string) (func(), func() time.Time, bool) {
			if user == "bob" {
				return nil, nil, false
			}
			return func() { released.Add(1) }, nil, true
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

// A user's rows are not attempted past the deadline of their hold (when
// the writer stops trusting its lease of the user's shard): a write that
// landed later could land after a successor read the tables.
func TestApplyWritesNothingOfAUserPastItsHold(t *testing.T) {
	s, _ := openFresh(t, nil)
	conv, _ := protocol.DirectConv("alice", "bob")
	d := store.Derived{
		Sessions: []session.State{
			{User: "alice", Conv: conv, ActiveTS: 100, WriteTS: 100, UnreadCount: 1},
		},
		Fences: map[string]int64{"alice": 3},
		Hold: func(user string) (func(), func() time.Time, bool) {
			return func() {}, func() time.Time { return time.Now().Add(-time.Millisecond) }, true
		},
	}
	if err := s.Apply(t.Context(), d); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Apply past alice's hold's deadline: %v, want context.DeadlineExceeded", err)
	}
	got, err := s.Sessions(t.Context(), conv, []string{"alice"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got["alice"]; ok {
		t.Errorf("alice's session was written past her hold's deadline")
	}
}

// Each user's hold bounds that user's write alone: users written side by
// side under deadlines to spare are all written.
func TestApplyBoundsEachUsersWriteByItsOwnHold(t *testing.T) {
	s, _ := openFresh(t, nil)
	var users []string
	var d store.Derived
	d.Fences = map[string]int64{}
	for i := range 2 * applyWorkers {
		u := fmt.Sprintf("user%02d", i)
		users = append(users, u)
		conv, _ := protocol.DirectConv("alice", u)
		d.Sessions = append(d.Sessions, session.State{User: u, Conv: conv, ActiveTS: 100, WriteTS: 100, UnreadCount: 1})
		d.Fences[u] = 3
	}
	d.Hold = func(string) (func(), func() time.Time, bool) {
		return func() {}, func() time.Time { return time.Now().Add(time.Minute) }, true
	}
	if err := s.Apply(t.Context(), d); err != nil {
		t.Fatalf("Apply with every hold's deadline a minute away: %v", err)
	}
	for _, u := range users {
		conv, _ := protocol.DirectConv("alice", u)
		got, err := s.Sessions(t.Context(), conv, []string{u})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := got[u]; !ok {
			t.Errorf("%s's session was not written", u)
		}
	}
}

// A user's sessions are written one after another, each under the trust
// end of the hold as it is right before that write: a lease renewed during
// a long write of many rows carries it on. (Bounded once, by the trust end
// at the first row, a user with many sessions on a slow store never got
// its write done: each retry was cut at the same point.)
func TestApplyAsksEachSessionWriteItsOwnDeadline(t *testing.T) {
	var mu sync.Mutex
	var deadlines []time.Time // of each sessions write, in order
	s := backendCalling(t, func(ctx context.Context, op string) {
		if op != "PutItem" && op != "UpdateItem" {
			return
		}
		d, _ := ctx.Deadline()
		mu.Lock()
		deadlines = append(deadlines, d)
		mu.Unlock()
	})
	const n = 4
	var d store.Derived
	d.Fences = map[string]int64{"alice": 3}
	for i := range n {
		conv, _ := protocol.DirectConv("alice", fmt.Sprintf("peer%d", i))
		d.Sessions = append(d.Sessions, session.State{User: "alice", Conv: conv, ActiveTS: int64(100 + i), WriteTS: int64(100 + i), UnreadCount: 1})
	}
	base := time.Now().Add(time.Hour)
	var asked []time.Time // what until answered, in order
	d.Hold = func(string) (func(), func() time.Time, bool) {
		return func() {}, func() time.Time {
			// The lease renewed since the last write: its trust end moved.
			end := base.Add(time.Duration(len(asked)) * time.Second)
			asked = append(asked, end)
			return end
		}, true
	}
	if err := s.Apply(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	if len(asked) != n {
		t.Fatalf("until asked %d times for %d session writes, want once before each", len(asked), n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(deadlines) < n {
		t.Fatalf("%d session writes seen, want at least %d", len(deadlines), n)
	}
	// Each session is one write when its row is new (a put).
	for i := range n {
		if !deadlines[i].Equal(asked[i]) {
			t.Errorf("session write %d ran under deadline %v, want the trust end asked right before it, %v", i, deadlines[i], asked[i])
		}
	}
}
