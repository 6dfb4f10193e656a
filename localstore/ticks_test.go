package localstore

import (
	"testing"

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
