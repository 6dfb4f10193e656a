package dynamostore

import (
	"testing"

	"github.com/imcore/im/internal/testengines"
	"github.com/imcore/im/server/distlock"
	"github.com/imcore/im/server/engine"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/server/store/storetest"
)

// TestConformanceOfTwoNodes runs the engine's suite on two engines, each
// with a store of its own on the same tables and Redis, taking their
// locks in Redis, every call going to the next engine in turn: two nodes
// behind a load balancer.
func TestConformanceOfTwoNodes(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		e := testEngines(t)
		prefix := testengines.Prefix(t)
		if _, err := Migrate(t.Context(), e.db, prefix); err != nil {
			t.Fatalf("Migrate: %v", err)
		}
		t.Cleanup(func() { deleteTables(e.db, prefix) })
		var locker *distlock.Redis
		var nodes []store.Store
		for range 2 {
			s, err := Open(t.Context(), Options{DynamoDB: e.db, Redis: e.redis, Prefix: prefix, Blobs: &memBlobs{}})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if locker == nil {
				locker = distlock.NewRedis(e.redis, prefix, 0, distlock.WithFirstUse(s.FirstLockUse))
			}
			eng, err := engine.New(t.Context(), s, engine.Options{Locker: locker})
			if err != nil {
				t.Fatal(err)
			}
			nodes = append(nodes, eng)
		}
		rr := storetest.RoundRobin(nodes...)
		t.Cleanup(func() { rr.Close() })
		return rr
	})
}
