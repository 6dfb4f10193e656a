package engine

import (
	"slices"
	"testing"

	"github.com/imcore/im/protocol"
)

// The seqs a conversation's newest page skips are the holes an owner
// gives to its next messages.
func TestSkippedSeqsOfTheNewestPage(t *testing.T) {
	page := func(seqs ...int64) []protocol.Message {
		out := make([]protocol.Message, len(seqs))
		for i, s := range seqs {
			out[i] = protocol.Message{Seq: s}
		}
		return out
	}
	for _, c := range []struct {
		name  string
		page  []protocol.Message
		whole bool
		known []int64
		want  []int64
	}{
		{"empty", nil, true, nil, nil},
		{"contiguous", page(1, 2, 3), true, nil, nil},
		{"a hole in the middle", page(5, 6, 9, 10), false, nil, []int64{7, 8}},
		{"the whole log starts late", page(3, 4), true, nil, []int64{1, 2}},
		{"a partial page says nothing below it", page(3, 4), false, nil, nil},
		{"known holes are not taken twice", page(1, 4), true, []int64{2}, []int64{3}},
	} {
		got := skipped(c.page, c.whole, c.known)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: skipped %v, want %v", c.name, got, c.want)
		}
	}
}
