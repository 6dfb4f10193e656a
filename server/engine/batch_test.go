package engine

import (
	"reflect"
	"testing"

	"github.com/imcore/im/server/store"
)

// pendingOf returns the pending rows a batch would write.
func pendingOf(b *batch) []store.PendingRow { return b.derived().Pending }

func TestBatchPendingPutThenClearedWritesNothing(t *testing.T) {
	b := newBatch()
	b.putPending("bob", "c1", 5)
	b.clearPending("bob", "c1", 7)
	if got := pendingOf(b); len(got) != 0 {
		t.Fatalf("a row put and cleared in one batch still writes %+v", got)
	}
	if !b.empty() {
		t.Fatal("the batch is not empty")
	}
}

func TestBatchPendingClearBelowAFreshPutKeepsThePut(t *testing.T) {
	b := newBatch()
	b.putPending("bob", "c1", 5)
	b.clearPending("bob", "c1", 4) // below the row's first undelivered seq
	want := []store.PendingRow{{User: "bob", Conv: "c1", FirstUndelivered: 5, Clear: 4}}
	if got := pendingOf(b); !reflect.DeepEqual(got, want) {
		t.Fatalf("pending rows %+v, want %+v", got, want)
	}
}

func TestBatchPendingClearOfAStoredRowIsWritten(t *testing.T) {
	// The row was put by an earlier batch: this one only clears it.
	b := newBatch()
	b.clearPending("bob", "c1", 7)
	want := []store.PendingRow{{User: "bob", Conv: "c1", Clear: 7}}
	if got := pendingOf(b); !reflect.DeepEqual(got, want) {
		t.Fatalf("pending rows %+v, want %+v", got, want)
	}
	// Cleared, put again and cleared again in the same batch: the first
	// clear still has a stored row to delete.
	b.putPending("bob", "c1", 8)
	b.clearPending("bob", "c1", 9)
	want = []store.PendingRow{{User: "bob", Conv: "c1", Clear: 9}}
	if got := pendingOf(b); !reflect.DeepEqual(got, want) {
		t.Fatalf("after put and clear again: pending rows %+v, want %+v", got, want)
	}
}

func TestBatchPendingClearThenPutIsOnePut(t *testing.T) {
	b := newBatch()
	b.clearPending("bob", "c1", 7)
	b.putPending("bob", "c1", 9)
	want := []store.PendingRow{{User: "bob", Conv: "c1", FirstUndelivered: 9, Clear: 7}}
	if got := pendingOf(b); !reflect.DeepEqual(got, want) {
		t.Fatalf("pending rows %+v, want %+v", got, want)
	}
}

func TestBatchPendingMergeKeepsWhatEachBatchKnew(t *testing.T) {
	// A batch that failed with a fresh put, merged with the next that
	// clears it: the row was never stored, nothing is written.
	failed := newBatch()
	failed.putPending("bob", "c1", 5)
	next := newBatch()
	next.clearPending("bob", "c1", 6)
	failed.merge(next)
	if got := pendingOf(failed); len(got) != 0 {
		t.Fatalf("merged put and clear still write %+v", got)
	}

	// A failed clear of a stored row, merged with a fresh put and its
	// clear in the next batch (which wrote nothing of them): the delete
	// stays.
	failed = newBatch()
	failed.clearPending("bob", "c1", 6)
	next = newBatch()
	next.putPending("bob", "c1", 7)
	next.clearPending("bob", "c1", 8)
	failed.merge(next)
	want := []store.PendingRow{{User: "bob", Conv: "c1", Clear: 6}}
	if got := pendingOf(failed); !reflect.DeepEqual(got, want) {
		t.Fatalf("pending rows %+v, want %+v", got, want)
	}

	// A fresh put of the next batch alone stays fresh once merged: a clear
	// after the merge leaves nothing.
	failed = newBatch()
	next = newBatch()
	next.putPending("bob", "c1", 7)
	failed.merge(next)
	failed.clearPending("bob", "c1", 8)
	if got := pendingOf(failed); len(got) != 0 {
		t.Fatalf("a merged fresh put cleared still writes %+v", got)
	}
}
