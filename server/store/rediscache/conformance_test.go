package rediscache

import (
	"testing"

	"github.com/imcore/im/server/blob"
	"github.com/imcore/im/server/engine"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/server/store/backendtest"
	"github.com/imcore/im/server/store/storetest"
)

func TestBackendConformance(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, _ blob.Store) store.Backend {
		c, _, _ := newTestCache(t)
		return c
	})
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		c, _, _ := newTestCache(t)
		e, err := engine.New(t.Context(), c, engine.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	})
}
