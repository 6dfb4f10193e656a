package main

import "time"

// schedule is an open loop's timetable. The load is one stream of sends at
// rate per second, dealt round-robin to streams senders: the j-th send of
// the whole run is due at j/rate and belongs to stream j mod streams. So
// every stream sends at rate/streams, the streams are evenly interleaved,
// and a bound on the run's count is a bound on j.
type schedule struct {
	streams int
	rate    float64
}

// index is the run-wide number of stream's k-th send.
func (s schedule) index(stream, k int) int64 { return int64(k)*int64(s.streams) + int64(stream) }

// due is when stream's k-th send is due, from the start of the run.
func (s schedule) due(stream, k int) time.Duration {
	return time.Duration(float64(s.index(stream, k)) * float64(time.Second) / s.rate)
}

// within reports whether stream's k-th send belongs to a run bounded by
// count sends (0: no bound) and by length (0: no bound).
func (s schedule) within(stream, k int, count int64, length time.Duration) bool {
	if count > 0 && s.index(stream, k) >= count {
		return false
	}
	return length <= 0 || s.due(stream, k) < length
}

// wait is how long to wait, at time now, for a send due at due: nothing
// for a send already overdue. An overdue send goes out at once and its
// latency is still counted from when it was due, so a server that falls
// behind is charged for the backlog (no coordinated omission).
func wait(due, now time.Duration) time.Duration { return max(0, due-now) }

// share is stream i's part of total items dealt round-robin to n streams.
func share(total int64, n, i int) int64 {
	q, r := total/int64(n), total%int64(n)
	if int64(i) < r {
		q++
	}
	return q
}
