package client

import (
	"errors"
	"testing"
	"time"

	"github.com/imcore/im/protocol"
)

// drain pushes a marker and reads every event up to it: the queue keeps
// the order of first arrival, so the marker comes last.
func drain(t *testing.T, q *eventQueue) []Event {
	t.Helper()
	marker := TypingEvent{Conv: "end", User: "end"}
	q.push(marker)
	var out []Event
	deadline := time.After(waitTimeout)
	for {
		select {
		case e := <-q.out:
			if e == Event(marker) {
				return out
			}
			out = append(out, e)
		case <-deadline:
			t.Fatal("the marker never came")
		}
	}
}

// A UI that does not read events never holds the client back, and when
// it reads it learns of every change, coalesced.
func TestEventsCoalesceWhileTheUIIsSlow(t *testing.T) {
	q := newEventQueue()
	defer q.close()
	for i := range 10000 {
		q.push(MessagesChanged{Conv: []string{"a", "b", "c"}[i%3]})
		q.push(SessionsChanged{})
		q.push(TicksChanged{Conv: "a", Ticks: protocol.Ticks{DeliveredSeq: int64(i), ReadSeq: int64(i / 2)}})
		q.push(ConnChanged{Conn: Conn{State: ConnState(i % 3)}})
		q.push(Incoming{Conv: "b", Count: 1, Last: protocol.Message{Conv: "b", Seq: int64(i + 1)}})
	}
	for i := range 2 * maxQueuedErrors {
		q.push(ErrorEvent{Op: "op", Err: errors.New(string(rune('a' + i%26)))})
	}
	q.mu.Lock()
	queued := len(q.queue)
	q.mu.Unlock()
	if queued > 16+8+maxQueuedErrors {
		t.Fatalf("%d events queued", queued)
	}
	convs := map[string]bool{}
	var ticks protocol.Ticks
	var conn Conn
	errs, incoming := 0, 0
	var newest int64
	for _, e := range drain(t, q) {
		switch e := e.(type) {
		case MessagesChanged:
			convs[e.Conv] = true
		case TicksChanged:
			ticks = ticks.Merge(e.Ticks)
		case ConnChanged:
			conn = e.Conn
		case ErrorEvent:
			errs++
		case Incoming:
			incoming += e.Count
			newest = max(newest, e.Last.Seq)
		}
	}
	if incoming != 10000 || newest != 10000 {
		t.Errorf("incoming messages counted %d up to seq %d, want 10000 and 10000", incoming, newest)
	}
	if len(convs) != 3 {
		t.Errorf("messages changed in %v, want a, b and c", convs)
	}
	if ticks != (protocol.Ticks{DeliveredSeq: 9999, ReadSeq: 4999}) {
		t.Errorf("ticks %+v, want the highest", ticks)
	}
	if conn.State != ConnState(9999%3) {
		t.Errorf("conn %v, want the latest", conn.State)
	}
	if errs < maxQueuedErrors || errs > maxQueuedErrors+17 {
		t.Errorf("%d errors delivered", errs)
	}
}
