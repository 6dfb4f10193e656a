package localstore

import (
	"testing"
	"time"

	"github.com/imcore/im/protocol"
)

func TestTicksNeverGoBack(t *testing.T) {
	s, _ := openTemp(t)
	for _, step := range []struct {
		in      protocol.Ticks
		want    protocol.Ticks
		changed bool
	}{
		{protocol.Ticks{DeliveredSeq: 5, ReadSeq: 3}, protocol.Ticks{DeliveredSeq: 5, ReadSeq: 3}, true},
		{protocol.Ticks{DeliveredSeq: 2, ReadSeq: 1}, protocol.Ticks{DeliveredSeq: 5, ReadSeq: 3}, false},
		{protocol.Ticks{DeliveredSeq: 5, ReadSeq: 3}, protocol.Ticks{DeliveredSeq: 5, ReadSeq: 3}, false},
		{protocol.Ticks{DeliveredSeq: 4, ReadSeq: 4}, protocol.Ticks{DeliveredSeq: 5, ReadSeq: 4}, true},
		{protocol.Ticks{DeliveredSeq: 0, ReadSeq: 9}, protocol.Ticks{DeliveredSeq: 9, ReadSeq: 9}, true},
	} {
		got, changed, err := s.RaiseTicks(conv, step.in)
		if err != nil || got != step.want || changed != step.changed {
			t.Fatalf("RaiseTicks(%+v) = %+v, %v, %v; want %+v, %v", step.in, got, changed, err, step.want, step.changed)
		}
		if stored, _ := s.Ticks(conv); stored != step.want {
			t.Fatalf("Ticks = %+v, want %+v", stored, step.want)
		}
	}
	if fresh, _, _ := s.RaiseTicks("d:a:b", protocol.Ticks{ReadSeq: 2}); fresh != (protocol.Ticks{DeliveredSeq: 2, ReadSeq: 2}) {
		t.Fatalf("first ticks = %+v: read must imply delivered", fresh)
	}
}

// TestTickTimes checks that the store says when it saw the ticks of a
// message rise: delivered, then read.
func TestTickTimes(t *testing.T) {
	s, _ := openTemp(t)
	at := time.Date(2026, 3, 14, 15, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return at }
	if _, _, err := s.RaiseTicks(conv, protocol.Ticks{DeliveredSeq: 3}); err != nil {
		t.Fatal(err)
	}
	at = at.Add(2 * time.Minute)
	s.RaiseTicks(conv, protocol.Ticks{DeliveredSeq: 3}) // no rise: nothing new
	at = at.Add(3 * time.Minute)
	s.RaiseTicks(conv, protocol.Ticks{DeliveredSeq: 5, ReadSeq: 3})
	for _, tc := range []struct {
		seq             int64
		delivered, read time.Time
	}{
		{3, at.Add(-5 * time.Minute), at},
		{5, at, time.Time{}},
		{6, time.Time{}, time.Time{}},
	} {
		d, r, err := s.TickTimes(conv, tc.seq)
		if err != nil || !d.Equal(tc.delivered) || !r.Equal(tc.read) {
			t.Errorf("TickTimes(%d) = %v, %v, %v; want %v, %v", tc.seq, d, r, err, tc.delivered, tc.read)
		}
	}
}
