package memstore_test

import (
	"testing"

	"github.com/imcore/im/server/blob"
	"github.com/imcore/im/server/engine"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/server/store/backendtest"
	"github.com/imcore/im/server/store/memstore"
	"github.com/imcore/im/server/store/storetest"
)

func TestBackendConformance(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, blobs blob.Store) store.Backend { return memstore.NewWithBlobs(blobs) })
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Engine {
		e, err := engine.New(t.Context(), memstore.New(), engine.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	})
}
