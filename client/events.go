package client

import (
	"slices"
	"sync"
)

// maxQueuedErrors bounds the ErrorEvents waiting for a slow UI; beyond it
// the oldest are dropped.
const maxQueuedErrors = 64

// eventQueue hands events to the UI without ever blocking the engine. Events
// wait in a queue where a repeated kind is coalesced (one MessagesChanged
// per conversation, one SessionsChanged, the latest ConnChanged, the
// highest ticks per conversation, one typing per user and conversation,
// one Incoming per conversation with the count summed, one
// PresenceChanged with the users merged), so
// the queue stays small however slow the UI is and no change goes
// unreported.
type eventQueue struct {
	out  chan Event
	wake chan struct{}
	done chan struct{}
	once sync.Once

	mu     sync.Mutex
	queue  []Event
	errors int
}

func newEventQueue() *eventQueue {
	q := &eventQueue{out: make(chan Event, 16), wake: make(chan struct{}, 1), done: make(chan struct{})}
	go q.pump()
	return q
}

// push queues e, merging it into an event of the same kind that is still
// waiting.
func (q *eventQueue) push(e Event) {
	select {
	case <-q.done:
		return // closed: nobody reads any more
	default:
	}
	q.mu.Lock()
	if !q.coalesce(e) {
		if _, ok := e.(ErrorEvent); ok {
			if q.errors == maxQueuedErrors {
				q.dropOldestError()
			}
			q.errors++
		}
		q.queue = append(q.queue, e)
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// coalesce merges e into a waiting event of the same kind and reports
// whether it did.
func (q *eventQueue) coalesce(e Event) bool {
	for i, waiting := range q.queue {
		switch e := e.(type) {
		case MessagesChanged, SessionsChanged, TypingEvent:
			if waiting == Event(e) {
				return true
			}
		case ConnChanged:
			if _, ok := waiting.(ConnChanged); ok {
				q.queue[i] = e
				return true
			}
		case TicksChanged:
			if w, ok := waiting.(TicksChanged); ok && w.Conv == e.Conv {
				w.Ticks = w.Ticks.Merge(e.Ticks)
				q.queue[i] = w
				return true
			}
		case PresenceChanged:
			if w, ok := waiting.(PresenceChanged); ok {
				if len(w.Users) == 0 || len(e.Users) == 0 {
					w.Users = nil // everyone
				} else {
					for _, u := range e.Users {
						if !slices.Contains(w.Users, u) {
							w.Users = append(w.Users, u)
						}
					}
				}
				q.queue[i] = w
				return true
			}
		case Incoming:
			if w, ok := waiting.(Incoming); ok && w.Conv == e.Conv {
				w.Count += e.Count
				if e.Last.Seq > w.Last.Seq {
					w.Last, w.ReactedTo = e.Last, e.ReactedTo
				}
				q.queue[i] = w
				return true
			}
		}
	}
	return false
}

func (q *eventQueue) dropOldestError() {
	for i, e := range q.queue {
		if _, ok := e.(ErrorEvent); ok {
			q.queue = append(q.queue[:i], q.queue[i+1:]...)
			q.errors--
			return
		}
	}
}

// pump moves events from the queue to out, one at a time, until close;
// then it closes out (it is out's only sender), so a reader learns the end.
func (q *eventQueue) pump() {
	defer close(q.out)
	for {
		q.mu.Lock()
		if len(q.queue) == 0 {
			q.mu.Unlock()
			select {
			case <-q.wake:
				continue
			case <-q.done:
				return
			}
		}
		e := q.queue[0]
		q.queue = q.queue[1:]
		if _, ok := e.(ErrorEvent); ok {
			q.errors--
		}
		q.mu.Unlock()
		select {
		case q.out <- e:
		case <-q.done:
			return
		}
	}
}

// close stops the pump, which closes out; events still queued are dropped.
func (q *eventQueue) close() { q.once.Do(func() { close(q.done) }) }
