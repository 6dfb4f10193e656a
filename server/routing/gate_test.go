package routing

import (
	"context"
	"runtime"
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
	g.sealWithin(context.Background()) // served: a stale seal
	if !g.isWritable() {
		t.Fatal("sealing a served shard made it unwritable")
	}
	if !g.closeWithin(context.Background()) {
		t.Fatal("close with nothing in flight reported operations left")
	}
	if !g.isWritable() {
		t.Fatal("closing alone made the shard unwritable: its drained rows must still be written")
	}
	// A write of the shard's rows in flight: the seal waits for it.
	if !g.holdWrite() {
		t.Fatal("a write of a writable shard refused")
	}
	sealed := make(chan bool)
	go func() { sealed <- g.sealWithin(context.Background()) }()
	for g.isWritable() { // the seal has started
		runtime.Gosched()
	}
	if g.holdWrite() {
		t.Fatal("a write admitted while the shard is being sealed")
	}
	select {
	case <-sealed:
		t.Fatal("the seal returned with a write of the shard's rows in flight")
	default:
	}
	g.releaseWrite()
	if !<-sealed {
		t.Fatal("the seal reported writes left after the last one landed")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if !g.sealWithin(ctx) {
		t.Fatal("sealing again with nothing in flight reported writes left")
	}
	g.open()
	if !g.isWritable() {
		t.Fatal("a shard taken again is not writable")
	}
}
