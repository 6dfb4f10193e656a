package main

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	ten := hundred[:10]
	cases := []struct {
		name     string
		samples  []time.Duration
		perMille int
		want     time.Duration
	}{
		{"p50 of 1..100", hundred, 500, 50 * time.Millisecond},
		{"p90 of 1..100", hundred, 900, 90 * time.Millisecond},
		{"p99 of 1..100 is the 99th, not the 100th", hundred, 990, 99 * time.Millisecond},
		{"p100 is the max", hundred, 1000, 100 * time.Millisecond},
		{"p99 of 10 is the 10th", ten, 990, 10 * time.Millisecond},
		{"p50 of 10 is the 5th", ten, 500, 5 * time.Millisecond},
		{"one sample", hundred[:1], 990, time.Millisecond},
		{"p0 is the min", hundred, 0, time.Millisecond},
		{"none", nil, 500, 0},
	}
	for _, c := range cases {
		if got := percentile(c.samples, c.perMille); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

// TestPercentileDefinition checks the nearest rank against its
// definition on random samples: at least the fraction of samples is at
// or below it, and fewer are strictly below it.
func TestPercentileDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		n := 1 + r.IntN(3000)
		s := make([]time.Duration, n)
		for i := range s {
			s[i] = time.Duration(r.IntN(1000))
		}
		slices.Sort(s)
		for _, pm := range []int{500, 900, 990, 999} {
			v := percentile(s, pm)
			atOrBelow, below := 0, 0
			for _, x := range s {
				if x <= v {
					atOrBelow++
				}
				if x < v {
					below++
				}
			}
			if atOrBelow*1000 < pm*n || below*1000 >= pm*n {
				t.Fatalf("n=%d p%d=%v: %d at or below, %d below", n, pm, v, atOrBelow, below)
			}
		}
	}
}

func TestSummarize(t *testing.T) {
	s := []time.Duration{3 * time.Millisecond, time.Millisecond, 2*time.Millisecond + 500*time.Microsecond}
	got := summarize(s)
	want := Summary{N: 3, P50: 2.5, P90: 3, P99: 3, Max: 3}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if (summarize(nil) != Summary{}) {
		t.Fatal("empty samples must give an empty summary")
	}
}

func TestWindow(t *testing.T) {
	w := window{start: time.Second, end: 3 * time.Second}
	if !w.contains(time.Second) || w.contains(3*time.Second) || w.contains(0) {
		t.Fatal("a window is [start, end)")
	}
	if got := w.perSecond(100); got != 50 {
		t.Fatalf("100 events over 2 s: got %v/s", got)
	}
	if got := (window{}).perSecond(100); got != 0 {
		t.Fatalf("an empty window: got %v/s", got)
	}
}
