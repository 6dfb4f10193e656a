package main

import (
	"testing"
	"time"
)

// TestConvLoadReport checks the accounting of dm and group on made-up
// messages: what counts in the window, in the latencies, and as missing.
func TestConvLoadReport(t *testing.T) {
	ms := time.Millisecond
	l := &convLoad{cfg: &Config{Drain: time.Second}, warmEnd: 100 * ms, deadline: 1100 * ms}
	l.hitTime.Store(true)                              // bounded by time: the window is [100ms, 1100ms)
	cs := &convState{l: l, rcvs: []*recipient{{}, {}}} // a group of three
	cs.msgs = []msgRec{
		// 0: sent during the warm-up, read in the window: counts in the
		// rates, not in the latencies.
		{intended: 50 * ms, sentAt: 60 * ms, delivAt: 150 * ms, readAt: 160 * ms, seq: 1},
		// 1: the whole way inside the window.
		{intended: 200 * ms, sentAt: 210 * ms, delivAt: 230 * ms, readAt: 250 * ms, seq: 2},
		// 2: sent, delivered, never read.
		{intended: 300 * ms, sentAt: 320 * ms, delivAt: 400 * ms, seq: 3},
		// 3: never answered, though one recipient got its push.
		{intended: 500 * ms, seq: 0},
		// 4: refused by the server.
		{intended: 600 * ms, failed: true},
		// 5: read after the window (during the drain).
		{intended: 1000 * ms, sentAt: 1050 * ms, delivAt: 1200 * ms, readAt: 1300 * ms, seq: 4},
	}
	cs.recv = []delivery{
		{0, 0, 60 * ms}, {0, 1, 61 * ms},
		{1, 0, 215 * ms}, {1, 1, 220 * ms},
		{2, 0, 330 * ms}, // the other recipient never got it
		{2, 0, 340 * ms}, // pushed again at another seq: counts once, hides no missing one
		{3, 0, 505 * ms},
		{5, 0, 1060 * ms}, {5, 1, 1150 * ms},
	}
	l.convs = []*convState{cs}
	r := &Report{}
	win := l.report(r)
	if win != (window{100 * ms, 1100 * ms}) || r.WindowS != 1 {
		t.Fatalf("window %v (%v s)", win, r.WindowS)
	}
	wantCounts(t, r, map[string]int64{
		"messages": 6, "sent": 4, "failed": 1, "unanswered": 1, "delivered": 4, "read": 3, "reads_missing": 1,
		"recipient_msgs": 7, "recipient_msgs_missing": 1, "recipient_msgs_of_unanswered": 1, "recipient_msgs_twice": 1,
	})
	rates := map[string]float64{"sent_per_s": 3, "recipient_msgs_per_s": 5, "delivered_per_s": 3, "read_per_s": 2}
	for k, v := range rates {
		if got, _ := r.Rates.get(k); got != v {
			t.Errorf("%s: got %v, want %v", k, got, v)
		}
	}
	// Measured: messages 1, 2, 3 and 5 (4 failed, 0 was in the warm-up).
	lat := map[string]Summary{
		"send_sent":      {N: 3, Missing: 1, P50: 20, P90: 50, P99: 50, Max: 50},
		"send_recipient": {N: 6, Missing: 2, P50: 20, P90: 150, P99: 150, Max: 150},
		"send_delivered": {N: 3, Missing: 1, P50: 100, P90: 200, P99: 200, Max: 200},
		"send_read":      {N: 2, Missing: 2, P50: 50, P90: 300, P99: 300, Max: 300},
	}
	for k, want := range lat {
		if got, _ := r.Latency.get(k); got != want {
			t.Errorf("%s: got %+v, want %+v", k, got, want)
		}
	}
}
