package servertest

import (
	"context"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/imcore/im/server/store"
)

// PendingRow is the pending row of conv: first undelivered seq, delivered
// boundary and newest seq.
func PendingRow(conv string, first, delivered, newest int64) store.PendingDelivery {
	return store.PendingDelivery{Conv: conv, FirstUndelivered: first, LastDeliveredSeq: delivered, NewestSeq: newest}
}

// PendingRows returns user's pending rows, as stored, by conversation; a
// conversation with two rows fails the test.
func (e *Env) PendingRows(user string) map[string]store.PendingDelivery {
	e.T.Helper()
	rows, err := e.Server.Store().Pending(context.Background(), user)
	if err != nil {
		e.T.Fatalf("pending of %s: %v", user, err)
	}
	out := make(map[string]store.PendingDelivery, len(rows))
	for _, r := range rows {
		if _, dup := out[r.Conv]; dup {
			e.T.Fatalf("pending of %s: two rows for %s: %+v", user, r.Conv, rows)
		}
		out[r.Conv] = r
	}
	return out
}

// WantPending requires user's pending row in row.Conv to be exactly row;
// the rows of other conversations are not looked at.
func (e *Env) WantPending(user string, row store.PendingDelivery) {
	e.T.Helper()
	if got, ok := e.PendingRows(user)[row.Conv]; !ok || got != row {
		e.T.Fatalf("pending of %s in %s: %+v (present %v), want %+v", user, row.Conv, got, ok, row)
	}
}

// WantNoPending requires user to have no pending row in conv.
func (e *Env) WantNoPending(user, conv string) {
	e.T.Helper()
	if got, ok := e.PendingRows(user)[conv]; ok {
		e.T.Fatalf("pending of %s in %s: %+v, want none", user, conv, got)
	}
}

// WantPendingRows requires user's pending rows to be exactly rows: none at
// all when there are none.
func (e *Env) WantPendingRows(user string, rows ...store.PendingDelivery) {
	e.T.Helper()
	got := e.PendingRows(user)
	if len(rows) == 0 {
		if len(got) != 0 {
			e.T.Fatalf("pending of %s = %+v, want none", user, got)
		}
		return
	}
	want := make(map[string]store.PendingDelivery, len(rows))
	for _, r := range rows {
		want[r.Conv] = r
	}
	if !maps.Equal(got, want) {
		e.T.Fatalf("pending of %s = %+v, want %+v", user, got, want)
	}
}

// WaitFor polls cond until it holds, failing after Timeout. Only for
// server state that no frame announces (a closed connection being noticed
// and settled).
func (e *Env) WaitFor(what string, cond func() bool) {
	e.T.Helper()
	deadline := time.Now().Add(Timeout)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			e.T.Fatalf("still waiting after %v for %s", Timeout, what)
		}
		<-tick.C
	}
}

// Warnings is a log handler (for server.Config.Logger) that notes the first
// warning, or worse, about one user: how the gateway announces that it
// drops a slow consumer.
type Warnings struct {
	user string
	once sync.Once
	ch   chan struct{}
}

// WatchWarnings returns a Warnings about user.
func WatchWarnings(user string) *Warnings {
	return &Warnings{user: user, ch: make(chan struct{})}
}

// Seen reports whether a warning about the user was logged.
func (w *Warnings) Seen() bool {
	select {
	case <-w.ch:
		return true
	default:
		return false
	}
}

// Enabled is true from slog.LevelWarn on.
func (w *Warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

// Handle notes a record with an attribute user of the watched user.
func (w *Warnings) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "user" && a.Value.String() == w.user {
			w.once.Do(func() { close(w.ch) })
			return false
		}
		return true
	})
	return nil
}

// WithAttrs returns w: the attributes it adds are not looked at.
func (w *Warnings) WithAttrs([]slog.Attr) slog.Handler { return w }

// WithGroup returns w.
func (w *Warnings) WithGroup(string) slog.Handler { return w }
