package main

import (
	"testing"
	"time"
)

// TestScheduleInterleaves checks that the streams together send exactly
// one message every 1/rate, each stream its turn, within the count.
func TestScheduleInterleaves(t *testing.T) {
	s := schedule{streams: 3, rate: 100}
	const count = 10
	seen := map[time.Duration]int{}
	for stream := range s.streams {
		for k := 0; s.within(stream, k, count, 0); k++ {
			due := s.due(stream, k)
			if k > 0 && due-s.due(stream, k-1) != 30*time.Millisecond {
				t.Fatalf("stream %d: sends %v apart, want 30ms", stream, due-s.due(stream, k-1))
			}
			seen[due]++
		}
	}
	if len(seen) != count {
		t.Fatalf("%d distinct due times, want %d", len(seen), count)
	}
	for j := range count {
		if seen[time.Duration(j)*10*time.Millisecond] != 1 {
			t.Fatalf("send %d at %v: seen %d times", j, time.Duration(j)*10*time.Millisecond, seen[time.Duration(j)*10*time.Millisecond])
		}
	}
}

func TestScheduleLength(t *testing.T) {
	s := schedule{streams: 4, rate: 1000}
	n := 0
	for stream := range s.streams {
		for k := 0; s.within(stream, k, 0, 50*time.Millisecond); k++ {
			n++
		}
	}
	if n != 50 {
		t.Fatalf("50 ms at 1000/s: %d sends, want 50", n)
	}
}

func TestWait(t *testing.T) {
	if got := wait(10*time.Millisecond, 4*time.Millisecond); got != 6*time.Millisecond {
		t.Fatalf("early: got %v", got)
	}
	if got := wait(10*time.Millisecond, 15*time.Millisecond); got != 0 {
		t.Fatalf("overdue sends go at once: got %v", got)
	}
}

func TestShare(t *testing.T) {
	for _, c := range []struct {
		total int64
		n     int
	}{{10, 3}, {0, 4}, {7, 7}, {5, 8}, {1000, 100}} {
		var sum int64
		for i := range c.n {
			s := share(c.total, c.n, i)
			if s < c.total/int64(c.n) || s > c.total/int64(c.n)+1 {
				t.Fatalf("share(%d,%d,%d)=%d is not fair", c.total, c.n, i, s)
			}
			sum += s
		}
		if sum != c.total {
			t.Fatalf("shares of %d over %d add to %d", c.total, c.n, sum)
		}
	}
}
