package server

import (
	"testing"

	"github.com/imcore/im/server/auth"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/server/store/memstore"
	"github.com/imcore/im/server/store/sqlitestore"
)

// wrapper stands for a cache in front of a store.
type wrapper struct{ store.Backend }

func (w wrapper) Unwrap() store.Backend { return w.Backend }

func TestBackendAsLooksThroughWrappers(t *testing.T) {
	db, err := sqlitestore.Open(t.TempDir()+"/im.db", sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	wrapped := wrapper{wrapper{db}}
	if _, ok := wrapped.Backend.(auth.Epochs); ok {
		t.Fatal("the wrapper itself keeps token epochs: the test proves nothing")
	}
	if got, ok := backendAs[auth.Epochs](wrapped); !ok || got != auth.Epochs(db) {
		t.Fatalf("epochs through two wrappers: %v, %v", got, ok)
	}
	if _, ok := backendAs[auth.Epochs](wrapper{memstore.New()}); ok {
		t.Fatal("memstore keeps no token epochs, yet one was found")
	}
}
