package engine

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/server/store/memstore"
)

// slowUserReads is a memstore whose reads of a user's record are counted and
// wait for release.
type slowUserReads struct {
	*memstore.Backend
	reads   atomic.Int64
	release chan struct{}
}

func (h *slowUserReads) User(ctx context.Context, user string) (store.UserRecord, error) {
	h.reads.Add(1)
	<-h.release
	return h.Backend.User(ctx, user)
}

// TestLoadsMissingTheSameSessionsAtOnceReadThemOnce: a conversation's
// first messages, in flight together, each find its members missing from
// memory; the backend is read for them once, not once each.
func TestLoadsMissingTheSameSessionsAtOnceReadThemOnce(t *testing.T) {
	be := &slowUserReads{Backend: memstore.New(), release: make(chan struct{})}
	e, err := New(t.Context(), be, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	conv, _ := protocol.DirectConv("alice", "bob")
	needs := []need{{"alice", conv}, {"bob", conv}}

	const loads = 8
	var wg sync.WaitGroup
	errs := make(chan error, loads)
	for range loads {
		wg.Go(func() { errs <- e.load(t.Context(), needs) })
	}
	// Every load waits on the one read under way before it is let go.
	waitFor(t, func() bool { return waitingIn("engine.(*Engine).hydrateShared") == loads })
	close(be.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := be.reads.Load(); got != 2 {
		t.Errorf("%d reads of a user record for %d loads of alice and bob, want 2", got, loads)
	}
}

// waitingIn counts the goroutines whose stack passes through fn.
func waitingIn(fn string) int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, fn+"(") {
			n++
		}
	}
	return n
}
