package localstore

import (
	"slices"
	"testing"

	"github.com/imcore/im/protocol"
)

const conv = "d:alice:bob"

func TestPutMessagesStoresADuplicateOnce(t *testing.T) {
	s, _ := openTemp(t)
	if n := mustPut(t, s, msg(conv, 1, "bob"), msg(conv, 2, "bob")); n != 2 {
		t.Fatalf("stored %d, want 2", n)
	}
	if n := mustPut(t, s, msg(conv, 2, "bob"), msg(conv, 1, "bob"), msg(conv, 3, "bob")); n != 1 {
		t.Fatalf("stored %d of a batch with two duplicates, want 1", n)
	}
	// Same (conv, seq) under another msg_id: the server would never do it;
	// the store keeps the first.
	odd := msg(conv, 3, "bob")
	odd.MsgID = "other"
	if n := mustPut(t, s, odd); n != 0 {
		t.Fatalf("stored a second message at seq 3")
	}
	got, err := s.Messages(conv, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seqs(got), []int64{1, 2, 3}) || got[2].MsgID != "m3" {
		t.Fatalf("messages = %v", got)
	}
}

func TestPutMessagesRefusesMessagesWithoutSeq(t *testing.T) {
	s, _ := openTemp(t)
	if _, err := s.PutMessages([]protocol.Message{msg(conv, 1, "bob"), {Conv: conv, MsgID: "x"}}); err == nil {
		t.Fatal("a message without seq was accepted")
	}
	if got, _ := s.Messages(conv, 0, 10); len(got) != 0 {
		t.Fatalf("a refused batch stored %d messages", len(got))
	}
}

func TestMessagesPages(t *testing.T) {
	s, _ := openTemp(t)
	for seq := int64(1); seq <= 30; seq++ {
		mustPut(t, s, msg(conv, seq, "bob"))
	}
	mustPut(t, s, msg("d:alice:carol", 1, "carol"))
	for _, tc := range []struct {
		before int64
		limit  int
		first  int64
		last   int64
	}{
		{0, 10, 21, 30},
		{21, 10, 11, 20},
		{11, 10, 1, 10},
		{5, 10, 1, 4},
		{0, 100, 1, 30},
	} {
		got, err := s.Messages(conv, tc.before, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 || got[0].Seq != tc.first || got[len(got)-1].Seq != tc.last || int64(len(got)) != tc.last-tc.first+1 {
			t.Errorf("Messages(before %d, limit %d) = %v, want %d..%d", tc.before, tc.limit, seqs(got), tc.first, tc.last)
		}
	}
	if got, _ := s.Messages(conv, 1, 10); len(got) != 0 {
		t.Errorf("page below seq 1 = %v", seqs(got))
	}
}

func TestSyncedSeqFollowsContiguousMessages(t *testing.T) {
	s, _ := openTemp(t)
	check := func(want int64) {
		t.Helper()
		if got, err := s.SyncedSeq(conv); err != nil || got != want {
			t.Fatalf("synced seq = %d (%v), want %d", got, err, want)
		}
	}
	check(0)
	mustPut(t, s, msg(conv, 2, "bob"), msg(conv, 3, "bob"))
	check(0) // 1 is missing
	mustPut(t, s, msg(conv, 1, "bob"))
	check(3)
	mustPut(t, s, msg(conv, 5, "bob"), msg(conv, 6, "bob"))
	check(3)
	// History said nothing exists between 3 and 5 (a skipped seq).
	if got, err := s.RaiseSyncedSeq(conv, 4); err != nil || got != 6 {
		t.Fatalf("RaiseSyncedSeq(4) = %d, %v; want 6", got, err)
	}
	if got, _ := s.RaiseSyncedSeq(conv, 2); got != 6 {
		t.Fatalf("RaiseSyncedSeq lowered the synced seq to %d", got)
	}
	check(6)
}

func TestSyncedSeqOverARunLongerThanTheWindow(t *testing.T) {
	defer func(w int) { contiguousWindow = w }(contiguousWindow)
	contiguousWindow = 16
	s, _ := openTemp(t)
	var batch []protocol.Message
	for seq := int64(2); seq <= 100; seq++ {
		if seq != 60 {
			batch = append(batch, msg(conv, seq, "bob"))
		}
	}
	mustPut(t, s, batch...)
	mustPut(t, s, msg(conv, 1, "bob"))
	if got, _ := s.SyncedSeq(conv); got != 59 {
		t.Fatalf("synced seq = %d, want 59", got)
	}
	mustPut(t, s, msg(conv, 60, "bob"))
	if got, _ := s.SyncedSeq(conv); got != 100 {
		t.Fatalf("synced seq = %d, want 100", got)
	}
}
