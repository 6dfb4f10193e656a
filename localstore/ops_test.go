package localstore

import (
	"testing"
)

// TestSessionOpShowsAtOnceUntilAnswered checks in the store that a
// session operation made offline shows at once, stays shown over the
// server's copies that predate it, survives a restart, and gives way to
// the server's answer.
func TestSessionOpShowsAtOnceUntilAnswered(t *testing.T) {
	s, path := openTemp(t)
	mustPutSessions(t, s, testSession(conv, 10, 100, 0))
	id, err := s.ApplySessionOp(PendingOp{Conv: conv, Op: "pin"})
	if err != nil {
		t.Fatal(err)
	}
	if got := mustSession(t, s, conv); got.Priority != 1 || got.ActiveTS != 10 {
		t.Fatalf("after a pin made offline: priority %d, active_ts %d; want 1 and the server's 10", got.Priority, got.ActiveTS)
	}
	// A sync page from before the pin reached the server.
	mustPutSessions(t, s, testSession(conv, 11, 100, 0))
	if got := mustSession(t, s, conv); got.Priority != 1 || got.ActiveTS != 11 {
		t.Fatalf("a page from before the answer undid the pin: %+v", got)
	}

	s.Close()
	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ops, err := s.PendingOps()
	if err != nil || len(ops) != 1 || ops[0].ID != id || ops[0].Op != "pin" || ops[0].Conv != conv {
		t.Fatalf("pending ops after a restart = %+v, %v", ops, err)
	}

	// The answer: the server's session, pinned.
	answer := testSession(conv, 12, 120, 1)
	if err := s.FinishSessionOp(id, &answer); err != nil {
		t.Fatal(err)
	}
	if ops, _ := s.PendingOps(); len(ops) != 0 {
		t.Fatalf("pending ops after the answer = %+v", ops)
	}
	// Later changes from the server show as they are: unpinned elsewhere.
	mustPutSessions(t, s, testSession(conv, 13, 120, 0))
	if got := mustSession(t, s, conv); got.Priority != 0 {
		t.Fatalf("the server's unpin did not show: %+v", got)
	}
}

// TestRefusedSessionOpIsUndone checks that an operation the server
// refuses is forgotten: the next copy of the session shows the server's
// state.
func TestRefusedSessionOpIsUndone(t *testing.T) {
	s, _ := openTemp(t)
	base := testSession(conv, 10, 100, 0)
	base.UnreadCount, base.WriteSeq = 3, 3
	mustPutSessions(t, s, base)
	id, err := s.ApplySessionOp(PendingOp{Conv: conv, Op: "mute", Until: 0})
	if err != nil {
		t.Fatal(err)
	}
	if got := mustSession(t, s, conv); !got.Muted {
		t.Fatalf("mute not shown: %+v", got)
	}
	if n, _ := s.TotalUnread(""); n != 0 {
		t.Fatalf("a muted chat still counts: %d", n)
	}
	if err := s.FinishSessionOp(id, nil); err != nil {
		t.Fatal(err)
	}
	base.ActiveTS = 11
	mustPutSessions(t, s, base)
	if got := mustSession(t, s, conv); got.Muted {
		t.Fatalf("a refused mute stayed: %+v", got)
	}
}
