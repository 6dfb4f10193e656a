package sqlitestore

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestColdConcurrentGroupReadsDoNotDeadlock: many concurrent first reads
// of a fresh store (a read transaction each) all complete. Reads used to prepare their statements on
// first use while holding the cache's lock, inside a read transaction; a
// prepare needs a free reader connection, so Readers or more concurrent
// first calls could hold every connection and wait for one another for
// good.
func TestColdConcurrentGroupReadsDoNotDeadlock(t *testing.T) {
	for round := range 20 {
		s := openEngine(t, filepath.Join(t.TempDir(), fmt.Sprintf("im%d.db", round)), nil)
		createTeam(t, s, "alice", "create")
		const n = 16
		start := make(chan struct{})
		var wg sync.WaitGroup
		done := make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		for range n {
			wg.Go(func() {
				<-start
				if _, err := s.Backend().Conversation(ctx, "g:team"); err != nil && ctx.Err() == nil {
					t.Errorf("Conversation: %v", err)
				}
			})
		}
		go func() { wg.Wait(); close(done) }()
		close(start)
		select {
		case <-done:
			cancel()
		case <-time.After(10 * time.Second):
			cancel() // unblocks the waiters so the test can end
			<-done
			t.Fatalf("round %d: %d concurrent first calls of Conversation on a fresh store did not finish in 10s: the reader pool deadlocked", round, n)
		}
	}
}
