package main

import (
	"slices"
	"time"
)

// Summary is the distribution of a set of latencies, in milliseconds.
// Percentiles are exact, by nearest rank over every recorded sample.
// Missing counts what was measured but never completed (a read receipt
// that never came): it is not in the percentiles, which are over the N
// that completed.
type Summary struct {
	N       int     `json:"n"`
	Missing int64   `json:"missing,omitempty"`
	P50     float64 `json:"p50"`
	P90     float64 `json:"p90"`
	P99     float64 `json:"p99"`
	Max     float64 `json:"max"`
}

// percentile returns the nearest-rank percentile of sorted samples: the
// smallest sample that at least perMille/1000 of the samples do not
// exceed. It is given in per mille so that the rank is computed in
// integers (990 for p99): 0.99*100 in floating point is not exactly 99.
func percentile(sorted []time.Duration, perMille int) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := (perMille*n + 999) / 1000
	rank = max(1, min(rank, n))
	return sorted[rank-1]
}

// summarize sorts samples in place and returns their summary.
func summarize(samples []time.Duration) Summary {
	slices.Sort(samples)
	if len(samples) == 0 {
		return Summary{}
	}
	return Summary{
		N:   len(samples),
		P50: ms(percentile(samples, 500)),
		P90: ms(percentile(samples, 900)),
		P99: ms(percentile(samples, 990)),
		Max: ms(samples[len(samples)-1]),
	}
}

// summarizeMissing is summarize with the count of what never completed.
func summarizeMissing(samples []time.Duration, missing int64) Summary {
	s := summarize(samples)
	s.Missing = missing
	return s
}

// ms converts a duration to milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// epoch is the origin of the generator's clock.
var epoch = time.Now()

// now is the generator's clock: monotonic time since the process started.
// Every latency is a difference of two readings of it.
func now() time.Duration { return time.Since(epoch) }

// window is a measurement interval on the generator's clock.
type window struct{ start, end time.Duration }

// contains reports whether t falls in [start, end).
func (w window) contains(t time.Duration) bool { return t >= w.start && t < w.end }

// seconds is the window's length in seconds.
func (w window) seconds() float64 { return (w.end - w.start).Seconds() }

// perSecond is n events over the window, per second (0 for an empty window).
func (w window) perSecond(n int64) float64 {
	if w.end <= w.start {
		return 0
	}
	return float64(n) / w.seconds()
}
