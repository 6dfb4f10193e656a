package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/imcore/im/protocol"
)

// handler receives the frames of a connection that no call is waiting
// for, in order, on the connection's read goroutine: typ and id as sniffed,
// data valid only until it returns, at the arrival time on the generator's
// clock.
type handler func(typ, id string, data []byte, at time.Duration)

// conn is one protocol connection on a raw WebSocket: no local store, no
// client, only the protocol package's codec. Writes may come from any
// goroutine; reads happen on one goroutine started by start (or, before
// that, in roundTrip).
type conn struct {
	ws     *websocket.Conn
	user   string
	errs   *errorLog
	nextID atomic.Int64

	wmu sync.Mutex

	h       atomic.Pointer[handler]
	pmu     sync.Mutex
	waiting map[string]chan answer

	started atomic.Bool
	closing atomic.Bool
	done    chan struct{} // closed when the read loop has ended
}

// answer is the answer to a call: a copy of its frame and when it came.
type answer struct {
	data []byte
	at   time.Duration
}

// newDialer returns a WebSocket dialer with read buffers of readBuf bytes
// and pooled write buffers, so thousands of connections stay cheap for
// the generator.
func newDialer(readBuf int) *websocket.Dialer {
	return &websocket.Dialer{
		HandshakeTimeout: 30 * time.Second,
		ReadBufferSize:   readBuf,
		WriteBufferSize:  1024,
		WriteBufferPool:  &sync.Pool{},
	}
}

// dial opens a connection as user on device and says hello (dev auth): it
// returns once the welcome came, before any other frame is read.
func dial(ctx context.Context, d *websocket.Dialer, url, user, device string, errs *errorLog) (*conn, error) {
	ws, _, err := d.DialContext(ctx, url, nil)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", url, err)
	}
	c := &conn{ws: ws, user: user, errs: errs, waiting: map[string]chan answer{}, done: make(chan struct{})}
	data, _, err := c.roundTrip(ctx, &protocol.Hello{Protocol: protocol.Version, User: user, Device: device})
	if err == nil {
		var f protocol.Frame
		if f, err = decode(data); err == nil {
			if _, ok := f.(*protocol.Welcome); !ok {
				err = fmt.Errorf("hello answered %s", f.FrameType())
			}
		}
	}
	if err != nil {
		ws.Close()
		return nil, fmt.Errorf("hello as %s: %w", user, err)
	}
	return c, nil
}

// id returns a fresh request id with a prefix.
func (c *conn) id(prefix string) string {
	return prefix + strconv.FormatInt(c.nextID.Add(1), 10)
}

// write encodes f and writes it as one text message.
func (c *conn) write(f protocol.Frame) error {
	data, err := protocol.Encode(f)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.ws.WriteMessage(websocket.TextMessage, data)
}

// writeFailed counts a failed write, unless the generator was closing
// the connection: then the write only lost a race with the close.
func (c *conn) writeFailed(err error) {
	if !c.closing.Load() {
		c.errs.add("write", err.Error())
	}
}

// roundTrip writes a request and reads until its answer, on the calling
// goroutine: for use before start, or on connections that never start a
// read loop (idle). Other frames read meanwhile are dropped. An error
// answer is returned as a *protocol.Error.
func (c *conn) roundTrip(ctx context.Context, f protocol.Frame) ([]byte, time.Duration, error) {
	if c.started.Load() {
		return nil, 0, errors.New("roundTrip on a started connection")
	}
	id := c.id("t")
	protocol.SetRequestID(f, id)
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(time.Minute)
	}
	c.ws.SetReadDeadline(deadline)
	defer c.ws.SetReadDeadline(time.Time{})
	if err := c.write(f); err != nil {
		return nil, 0, err
	}
	for {
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			return nil, 0, err
		}
		at := now()
		typ, gotID := sniff(data)
		if gotID != id {
			if typ == "error" {
				c.errs.frame(data)
			}
			continue
		}
		if typ == "error" {
			return nil, at, c.errs.frame(data)
		}
		return data, at, nil
	}
}

// start starts the read loop: answers go to the calls waiting for them,
// every other frame to the handler (set with setHandler; none drops them).
func (c *conn) start() {
	if c.started.Swap(true) {
		return
	}
	go c.readLoop()
}

// setHandler sets the handler of frames no call waits for.
func (c *conn) setHandler(h handler) { c.h.Store(&h) }

func (c *conn) readLoop() {
	defer close(c.done)
	var buf bytes.Buffer
	for {
		_, r, err := c.ws.NextReader()
		if err != nil {
			if !c.closing.Load() {
				c.errs.lost(err)
			}
			c.failWaiting()
			return
		}
		buf.Reset()
		if _, err := buf.ReadFrom(r); err != nil {
			if !c.closing.Load() {
				c.errs.lost(err)
			}
			c.failWaiting()
			return
		}
		data, at := buf.Bytes(), now()
		typ, id := sniff(data)
		if typ == "error" {
			c.errs.frame(data)
		}
		if id != "" {
			c.pmu.Lock()
			ch := c.waiting[id]
			delete(c.waiting, id)
			c.pmu.Unlock()
			if ch != nil {
				ch <- answer{data: bytes.Clone(data), at: at}
				continue
			}
		}
		if h := c.h.Load(); h != nil {
			(*h)(typ, id, data, at)
		}
	}
}

// failWaiting ends every call still waiting: the connection is gone.
func (c *conn) failWaiting() {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	for id, ch := range c.waiting {
		close(ch)
		delete(c.waiting, id)
	}
}

// call writes a request on a started connection and waits for its answer:
// the frame and its arrival time. An error answer is a *protocol.Error.
func (c *conn) call(ctx context.Context, f protocol.Frame) ([]byte, time.Duration, error) {
	ch := c.expect(f, "c")
	if err := c.write(f); err != nil {
		return nil, 0, err
	}
	return c.await(ctx, ch)
}

// expect gives f a fresh id and registers a wait for its answer, before f
// is written (its answer can come at once).
func (c *conn) expect(f protocol.Frame, prefix string) chan answer {
	id := c.id(prefix)
	protocol.SetRequestID(f, id)
	ch := make(chan answer, 1)
	c.pmu.Lock()
	c.waiting[id] = ch
	c.pmu.Unlock()
	return ch
}

// await waits for an answer registered with expect.
func (c *conn) await(ctx context.Context, ch chan answer) ([]byte, time.Duration, error) {
	select {
	case a, ok := <-ch:
		if !ok {
			return nil, 0, errors.New("connection lost")
		}
		if typ, _ := sniff(a.data); typ == "error" {
			return nil, a.at, decodeError(a.data)
		}
		return a.data, a.at, nil
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
}

// close closes the connection (without a close handshake: the generator
// is done with it) and waits for its read loop.
func (c *conn) close() {
	c.closing.Store(true)
	c.ws.Close()
	if c.started.Load() {
		<-c.done
	}
}

// decode decodes a server frame with the protocol's codec.
func decode(data []byte) (protocol.Frame, error) {
	f, _, perr := protocol.DecodeServerFrame(data)
	if perr != nil {
		return nil, fmt.Errorf("undecodable frame from the server %.200q: %w", data, perr)
	}
	return f, nil
}

// decodeError turns an error frame into a *protocol.Error.
func decodeError(data []byte) error {
	f, err := decode(data)
	if err != nil {
		return err
	}
	e, ok := f.(*protocol.ErrorFrame)
	if !ok {
		return fmt.Errorf("not an error frame: %s", f.FrameType())
	}
	return &protocol.Error{Code: e.Code, Message: e.Message, RetryAfterMS: e.RetryAfterMS}
}

// errorLog counts what went wrong during a run, by kind: error frames by
// their code, connections lost by their close code, and the generator's
// own failures. The first few messages are kept to say why.
type errorLog struct {
	mu     sync.Mutex
	counts map[string]int64
	first  []string
}

// maxErrorNotes bounds the error messages a report keeps.
const maxErrorNotes = 5

func newErrorLog() *errorLog { return &errorLog{counts: map[string]int64{}} }

// add counts one failure of kind, with what happened.
func (e *errorLog) add(kind, what string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.counts[kind]++
	if len(e.first) < maxErrorNotes {
		e.first = append(e.first, kind+": "+what)
	}
}

// frame counts an error frame by its code and returns it as an error.
func (e *errorLog) frame(data []byte) error {
	err := decodeError(data)
	var perr *protocol.Error
	if errors.As(err, &perr) {
		e.add(string(perr.Code), perr.Message)
	} else {
		e.add("undecodable", err.Error())
	}
	return err
}

// lost counts a connection that ended while the generator still used it.
func (e *errorLog) lost(err error) {
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		e.add("closed_"+strconv.Itoa(ce.Code), ce.Text)
		return
	}
	e.add("conn_lost", err.Error())
}

// snapshot returns the counts, their total and the first messages.
func (e *errorLog) snapshot() (map[string]int64, int64, []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]int64, len(e.counts))
	var total int64
	for k, v := range e.counts {
		out[k] = v
		total += v
	}
	return out, total, append([]string(nil), e.first...)
}
