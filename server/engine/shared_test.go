package engine_test

import (
	"sync/atomic"
	"testing"

	"github.com/imcore/im/server/distlock"
	"github.com/imcore/im/server/engine"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/server/store/memstore"
	"github.com/imcore/im/server/store/storetest"
)

// TestConformanceOfEnginesSharingABackend runs the engine's conformance
// suite on two engines over one backend, each call going to the next
// engine in turn, as the nodes of a cluster behind a load balancer: what
// one engine changed, the other must see.
func TestConformanceOfEnginesSharingABackend(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return alternating(t, memstore.New(), distlock.NewMemory())
	})
}

// alternating opens two engines over be sharing locker, and returns a
// store that sends each call to the next of them.
func alternating(t *testing.T, be store.Backend, locker engine.Locker) store.Store {
	t.Helper()
	var engines [2]*engine.Engine
	shared := &refCounted{Backend: be}
	shared.refs.Store(2)
	for i := range engines {
		e, err := engine.New(t.Context(), shared, engine.Options{Locker: locker})
		if err != nil {
			t.Fatal(err)
		}
		engines[i] = e
	}
	t.Cleanup(func() {
		engines[0].Close()
		engines[1].Close()
	})
	return storetest.RoundRobin(engines[0], engines[1])
}

// refCounted closes a shared backend when the last engine closes it.
type refCounted struct {
	store.Backend
	refs atomic.Int32
}

func (r *refCounted) Close() error {
	if r.refs.Add(-1) == 0 {
		return r.Backend.Close()
	}
	return nil
}
