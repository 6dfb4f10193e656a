package routing

import (
	"context"
	"testing"
)

// A shard's rows are this node's to write from when it is taken until it
// is handed over and sealed; a seal that comes after the shard was taken
// again leaves it writable.
func TestGateSealsOnlyAShardNoLongerServed(t *testing.T) {
	var g gate
	if g.isWritable() {
		t.Fatal("a shard never taken is writable")
	}
	g.open()
	if !g.isWritable() {
		t.Fatal("a shard taken is not writable")
	}
	g.seal() // served: a stale seal
	if !g.isWritable() {
		t.Fatal("sealing a served shard made it unwritable")
	}
	if !g.closeWithin(context.Background()) {
		t.Fatal("close with nothing in flight reported operations left")
	}
	if !g.isWritable() {
		t.Fatal("closing alone made the shard unwritable: its drained rows must still be written")
	}
	g.seal()
	if g.isWritable() {
		t.Fatal("a shard handed over and sealed is still writable")
	}
	g.open()
	if !g.isWritable() {
		t.Fatal("a shard taken again is not writable")
	}
}
