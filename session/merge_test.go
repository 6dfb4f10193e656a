package session

import (
	"testing"

	"github.com/imcore/im/protocol"
)

func TestMerge(t *testing.T) {
	stored := State{User: "bob", Conv: "d:alice:bob", UnreadCount: 3, ActiveTS: 100, Ticks: protocol.Ticks{DeliveredSeq: 2}}
	newer := State{User: "bob", Conv: "d:alice:bob", UnreadCount: 0, ActiveTS: 101, Ticks: protocol.Ticks{DeliveredSeq: 1}}
	if got := Merge(stored, newer); got != newer {
		t.Errorf("a newer version: Merge = %+v, want it whole", got)
	}
	older := newer
	older.ActiveTS = 99
	if got := Merge(stored, older); got != stored {
		t.Errorf("an older version: Merge = %+v, want the stored one", got)
	}
	same := State{User: "bob", Conv: "d:alice:bob", UnreadCount: 9, Muted: true, ActiveTS: 100, Ticks: protocol.Ticks{DeliveredSeq: 1, ReadSeq: 1}}
	want := stored
	want.Ticks = protocol.Ticks{DeliveredSeq: 2, ReadSeq: 1}
	if got := Merge(stored, same); got != want {
		t.Errorf("the same version: Merge = %+v, want only the ticks merged: %+v", got, want)
	}
}
