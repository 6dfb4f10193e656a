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

func TestNewestOrdersByEpochThenMerges(t *testing.T) {
	at := func(epoch, activeTS, unread int64) Written {
		return Written{State: State{User: "bob", Conv: "d:alice:bob", UnreadCount: unread, ActiveTS: activeTS}, Epoch: epoch}
	}
	for _, tc := range []struct {
		name             string
		stored, incoming Written
		want             Written
	}{
		{"a later epoch wins with an older clock", at(4, 900, 1), at(5, 10, 2), at(5, 10, 2)},
		{"an earlier epoch loses with a later clock", at(5, 10, 1), at(4, 900, 2), at(5, 10, 1)},
		{"an unfenced write never beats a fenced row", at(5, 10, 1), at(0, 5000, 2), at(5, 10, 1)},
		{"the same epoch: the newer clock wins", at(5, 10, 1), at(5, 11, 2), at(5, 11, 2)},
		{"the same epoch: the older clock loses", at(5, 10, 1), at(5, 9, 2), at(5, 10, 1)},
	} {
		if got := Newest(tc.stored, tc.incoming); got != tc.want {
			t.Errorf("%s: Newest = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
