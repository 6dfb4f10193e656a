package chat

import (
	"slices"
	"testing"
)

func TestReplayedRuns(t *testing.T) {
	r := Replayed{}
	for _, seq := range []int64{5, 6, 7, 10, 9, 20, 8, 4, 22} {
		r.Add("c", seq)
	}
	want := []SeqRange{{4, 10}, {20, 20}, {22, 22}}
	if got := r["c"]; !slices.Equal(got, want) {
		t.Fatalf("runs = %v, want %v", got, want)
	}
	for seq, has := range map[int64]bool{3: false, 4: true, 10: true, 11: false, 20: true, 21: false, 22: true} {
		if r.Has("c", seq) != has {
			t.Errorf("Has(%d) = %v, want %v", seq, !has, has)
		}
	}
	if r.Has("other", 5) {
		t.Error("another conversation shares the runs")
	}
	r.Add("c", 21) // joins 20 and 22
	if got := r["c"]; !slices.Equal(got, []SeqRange{{4, 10}, {20, 22}}) {
		t.Fatalf("after filling the gap: %v", got)
	}
	for after, want := range map[int64]int64{2: 2, 3: 10, 7: 10, 10: 10, 19: 22, 23: 23} {
		if got := r.skipSent("c", after); got != want {
			t.Errorf("skipSent(%d) = %d, want %d", after, got, want)
		}
	}
}
