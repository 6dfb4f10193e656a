package rediscache

import (
	"sync"
	"testing"

	"github.com/imcore/im/server/store/memstore"
)

// TestNodesConverge runs two caches (two nodes) over one durable store and
// one Redis, each applying half the rows while readers on both hydrate
// concurrently: both end serving what the durable store holds.
func TestNodesConverge(t *testing.T) {
	rdb, prefix := testRedis(t)
	inner := memstore.New()
	nodes := []*Cache{New(inner, rdb, prefix), New(inner, rdb, prefix)}
	rows := convergeRows()
	var writers, readers sync.WaitGroup
	done := make(chan struct{})
	for n, c := range nodes {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for i := n; i < len(rows); i += len(nodes) {
				if err := c.Apply(t.Context(), rows[i]); err != nil {
					t.Error(err)
				}
			}
		}()
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				for _, u := range users {
					if _, err := c.User(t.Context(), u); err != nil {
						t.Error(err)
					}
				}
				for _, conv := range convs {
					if _, err := c.Sessions(t.Context(), conv, users); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	writers.Wait()
	close(done)
	readers.Wait()
	for n, c := range nodes {
		if st := c.Stats(); st != (Stats{}) {
			t.Fatalf("node %d: Redis failures %+v", n, st)
		}
		servedMatchesInner(t, c, "node")
	}
}
