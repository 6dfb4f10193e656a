package engine

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/imcore/im/server/store"
)

// gatedRows is a Backend whose Apply of rows of a held conversation waits
// until that conversation is let go, and records what each Apply wrote.
type gatedRows struct {
	store.Backend // only Apply is called
	mu            sync.Mutex
	held          map[string]chan struct{}
	wrote         [][]string // the conversations of each Apply, in the order they ended
	started       chan string
}

func (g *gatedRows) Apply(ctx context.Context, d store.Derived) error {
	var convs []string
	for _, c := range d.Convs {
		convs = append(convs, c.Conv)
	}
	slices.Sort(convs)
	for _, c := range convs {
		g.mu.Lock()
		ch := g.held[c]
		g.mu.Unlock()
		if ch != nil {
			g.started <- c
			select {
			case <-ch:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	g.mu.Lock()
	g.wrote = append(g.wrote, convs)
	g.mu.Unlock()
	return nil
}

// A shard handed over waits for its own rows only: they are written at
// once, beside the batch in flight, and not behind the rows of other
// shards put meanwhile.
func TestBarrierOfWritesItsOwnRowsOnly(t *testing.T) {
	be := &gatedRows{held: map[string]chan struct{}{"slow": make(chan struct{}), "other": make(chan struct{})}, started: make(chan string, 4)}
	f := newFlusher(be, slog.New(slog.NewTextHandler(io.Discard, nil)), 0, nil)
	defer func() {
		close(be.held["other"])
		f.close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conv := func(id string) func(*batch) {
		return func(b *batch) { b.conv(store.ConvDerived{Conv: id, DerivedSeq: 1}) }
	}

	f.put(conv("slow"))
	if got := <-be.started; got != "slow" {
		t.Fatalf("in flight: %s", got)
	}
	f.put(conv("mine"))
	f.put(conv("other"))
	isMine := func(id string) bool { return id == "mine" }
	none := func(string) bool { return false }
	done := make(chan error, 1)
	go func() { done <- f.barrierOf(ctx, isMine, none) }()

	// Its rows are written at once, alone; it still waits for the batch
	// in flight, which may hold rows of its shard.
	waitFor(t, func() bool {
		be.mu.Lock()
		defer be.mu.Unlock()
		return len(be.wrote) == 1
	})
	be.mu.Lock()
	if !slices.Equal(be.wrote[0], []string{"mine"}) {
		t.Fatalf("first write %v, want the shard's rows alone", be.wrote[0])
	}
	be.mu.Unlock()
	select {
	case err := <-done:
		t.Fatalf("returned (%v) before the batch in flight was written", err)
	default:
	}

	// The batch in flight written, it returns, though the rows of another
	// shard put before it are still being written.
	close(be.held["slow"])
	if got := <-be.started; got != "other" {
		t.Fatalf("next write: %s", got)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond until it holds, failing after 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}
