package client

import (
	"errors"
	"slices"

	"github.com/imcore/im/protocol"
)

// ErrNoAnswer is reported for a request whose connection was lost before
// the server answered, when repeating it would not be safe.
var ErrNoAnswer = errors.New("the connection was lost before the server answered")

// request is one frame for the server and what to do with its answer. The
// UI's requests wait in the client's queue until a connection takes them;
// the client's own (sync, history, send) go out on the connection at hand.
type request struct {
	op    string // names the request in an ErrorEvent
	frame protocol.Frame
	// answer handles the answer (its own frame, ok or error) on the client
	// goroutine; nil for a frame that is sent without an id.
	answer func(l *link, f protocol.Frame)
	// lost is called when the request cannot be answered: its connection
	// was lost (and retry is false) or the client stopped.
	lost func(err error)
	// retry puts the request back in the queue when its connection is lost
	// before the answer: for requests that are safe to repeat.
	retry bool
	// ephemeral requests (typing) are dropped rather than kept for a later
	// connection.
	ephemeral bool
}

// fail reports that req will not be answered.
func (req *request) fail(err error) {
	if req.lost != nil {
		req.lost(err)
	}
}

// enqueue hands a UI request to the client; it goes out as soon as there is
// a connection.
func (c *Client) enqueue(req *request) {
	c.mu.Lock()
	c.queue = append(c.queue, req)
	c.mu.Unlock()
	c.wake()
}

// takeQueue empties the client's request queue.
func (c *Client) takeQueue() []*request {
	c.mu.Lock()
	defer c.mu.Unlock()
	q := c.queue
	c.queue = nil
	return q
}

// requeue puts requests back at the front of the queue, in order, when
// their connection ended; ephemeral requests, sent or still queued, are
// dropped: they would be stale by the next connection.
func (c *Client) requeue(reqs []*request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queue = slices.DeleteFunc(append(reqs, c.queue...), func(r *request) bool { return r.ephemeral })
}

// failQueue fails and drops every queued request that is not worth keeping
// for a later Run: those that cannot be repeated safely, or whose caller
// waits.
func (c *Client) failQueue(err error) {
	c.mu.Lock()
	var keep, failed []*request
	for _, r := range c.queue {
		if r.retry && r.lost == nil {
			keep = append(keep, r)
		} else {
			failed = append(failed, r)
		}
	}
	c.queue = keep
	c.mu.Unlock()
	for _, r := range failed {
		r.fail(err)
	}
}

// requestID returns the id an answer echoes, "" for a push.
func requestID(f protocol.Frame) string {
	if r, ok := f.(interface{ RequestID() string }); ok {
		return r.RequestID()
	}
	return ""
}

// answerError returns the error an error frame carries, nil for any other
// frame.
func answerError(f protocol.Frame) *protocol.Error {
	if e, ok := f.(*protocol.ErrorFrame); ok {
		return &protocol.Error{Code: e.Code, Message: e.Message}
	}
	return nil
}
