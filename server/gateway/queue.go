package gateway

import (
	"context"
	"sync"
)

// outQueue is one connection's outgoing frames, bounded both in frames and
// in bytes, so that what a connection holds in memory has a ceiling
// whatever its client does. The bytes count the frames queued and those
// the writer has taken and not yet written (release), so a writer stuck on
// a slow client does not double what the connection holds. A nil frame is
// a drain barrier (waitDrained); it takes a frame's place and no bytes.
type outQueue struct {
	maxFrames, maxBytes int
	// onBytes, when set, is told of every change of the bytes held (for
	// the queue-bytes gauge).
	onBytes func(delta int)
	// onReady, when set, is called (under the queue's lock; it must not
	// block) whenever a frame is queued: it wakes the writer.
	onReady func()

	mu     sync.Mutex
	frames [][]byte
	bytes  int // queued and taken, not yet released
	closed bool
	ready  chan struct{} // holds a token while frames wait for the writer
	room   chan struct{} // closed, and replaced, whenever room is made
}

func newOutQueue(maxFrames, maxBytes int, onBytes func(int)) *outQueue {
	return &outQueue{
		maxFrames: maxFrames,
		maxBytes:  maxBytes,
		onBytes:   onBytes,
		ready:     make(chan struct{}, 1),
		room:      make(chan struct{}),
	}
}

// fitsLocked reports whether frame fits. A frame larger than the whole
// byte budget still fits into an empty queue, so that it can never wait
// forever.
func (q *outQueue) fitsLocked(frame []byte) bool {
	if len(q.frames) >= q.maxFrames {
		return false
	}
	return q.bytes == 0 || q.bytes+len(frame) <= q.maxBytes
}

func (q *outQueue) appendLocked(frame []byte) {
	q.frames = append(q.frames, frame)
	q.bytes += len(frame)
	if q.onBytes != nil && len(frame) > 0 {
		q.onBytes(len(frame))
	}
	select {
	case q.ready <- struct{}{}:
	default:
	}
	if q.onReady != nil {
		q.onReady()
	}
}

// tryPush queues frame if it fits and reports whether it did; it never
// waits. A closed queue takes nothing.
func (q *outQueue) tryPush(frame []byte) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || !q.fitsLocked(frame) {
		return false
	}
	q.appendLocked(frame)
	return true
}

// pushWait queues frame, waiting for room until ctx ends or the queue is
// closed (errClosed).
func (q *outQueue) pushWait(ctx context.Context, frame []byte) error {
	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return errClosed
		}
		if q.fitsLocked(frame) {
			q.appendLocked(frame)
			q.mu.Unlock()
			return nil
		}
		room := q.room
		q.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// take removes and returns up to max frames, oldest first, and their size
// in bytes, which stays counted until the writer releases it.
func (q *outQueue) take(max int) (frames [][]byte, size int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := min(max, len(q.frames))
	if n == 0 {
		return nil, 0
	}
	out := make([][]byte, n)
	copy(out, q.frames)
	clear(q.frames[:n])
	q.frames = q.frames[n:]
	if len(q.frames) == 0 {
		q.frames = nil // let a large backing array go
	} else {
		select {
		case q.ready <- struct{}{}:
		default:
		}
	}
	for _, f := range out {
		size += len(f)
	}
	q.wakeLocked() // a frame's place is free
	return out, size
}

// release uncounts size bytes of frames taken and now written (or given
// up), and wakes whoever waits for room.
func (q *outQueue) release(size int) {
	if size == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.bytes -= size
	if q.onBytes != nil {
		q.onBytes(-size)
	}
	q.wakeLocked()
}

// wakeLocked wakes every waiter for room.
func (q *outQueue) wakeLocked() {
	close(q.room)
	q.room = make(chan struct{})
}

// close makes the queue refuse frames from now on and wakes every waiter;
// discard also drops what is queued (a slow consumer is not written more).
func (q *outQueue) close(discard bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed = true
		q.wakeLocked()
	}
	if discard {
		queued := 0
		for _, f := range q.frames {
			queued += len(f)
		}
		q.frames = nil
		q.bytes -= queued // what was taken is released by the writer
		if q.onBytes != nil && queued > 0 {
			q.onBytes(-queued)
		}
	}
}

// len returns the frames queued and the bytes counted.
func (q *outQueue) len() (frames, bytes int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.frames), q.bytes
}
