package client

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/gorilla/websocket"

	"github.com/imcore/im/protocol"
)

// Connection timings and sizes.
const (
	readWait  = 75 * time.Second // the server pings every 30 s; silence this long is a dead link
	writeWait = 10 * time.Second // one frame must be written within this
	closeWait = time.Second      // time to flush queued frames on close
	inLen     = 256              // decoded frames waiting for the client
	outLen    = 1024             // encoded frames waiting for the writer
	maxBurst  = 256              // pushed messages stored in one transaction
)

// link is one welcomed connection and the client state that lives as long
// as it. Everything but the reader and the writer runs on the client
// goroutine (run), so the maps need no lock.
type link struct {
	c    *Client
	ws   *websocket.Conn
	self string
	url  string // the server's endpoint

	in         chan protocol.Frame
	readErr    chan error
	readerDone chan struct{}
	out        chan []byte
	writerDone chan struct{}
	writeErr   error // set before writerDone closes
	stop       chan struct{}
	later      chan func(*link) // retries whose wait is over, for the client

	pending   map[string]*request  // requests awaiting their answer, by id
	sending   map[outboxKey]bool   // outbox messages sent, awaiting sent
	syncing   map[string]bool      // lists with a sync in flight
	resync    map[string]bool      // lists to sync again once the one in flight ends
	filling   map[string]bool      // conversations with a gap fill in flight or waiting to retry
	fillQ     []string             // conversations waiting for a gap fill slot
	fillFail  int                  // pauses of the gap fills in a row, without a fill between
	fillPause time.Time            // no gap fill starts before this
	syncFail  map[string]int       // syncs refused for a passing reason in a row, per list
	retryAt   map[string]time.Time // conversations whose send waits for its retry timer
	unacked   map[string]bool      // conversations with stored messages not yet acknowledged
	seen      map[string]int64     // highest seq pushed, per conversation
	acked     map[string]int64     // highest delivered mark the server took, per conversation
	acking    map[string]int64     // highest delivered mark sent and not yet answered
	ackFail   int                  // delivered frames refused for a passing reason in a row
	ackTimer  *time.Timer
	ackSince  time.Time       // when the oldest unacknowledged message was stored
	opsSent   map[int64]bool  // session ops sent on this connection, awaiting their answer
	opsWait   map[string]bool // conversations whose session op waits for its retry timer
	opsFail   int             // session ops refused for a passing reason in a row
	behind    behindCheck     // is the server's history behind the device's?
	watchSent int             // the watch list's generation last sent (people.go)
	rechecked map[string]bool // users whose presence was asked again after a message (people.go)
}

func newLink(c *Client, ws *websocket.Conn, url string) *link {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	return &link{
		c: c, ws: ws, self: c.User(), url: url,
		in: make(chan protocol.Frame, inLen), readErr: make(chan error, 1), readerDone: make(chan struct{}),
		out: make(chan []byte, outLen), writerDone: make(chan struct{}), stop: make(chan struct{}),
		later:   make(chan func(*link), 16),
		pending: make(map[string]*request), sending: make(map[outboxKey]bool),
		syncing: make(map[string]bool), resync: make(map[string]bool), filling: make(map[string]bool),
		syncFail: make(map[string]int), retryAt: make(map[string]time.Time), acking: make(map[string]int64),
		unacked: make(map[string]bool), seen: make(map[string]int64), acked: make(map[string]int64),
		ackTimer: timer, opsSent: make(map[int64]bool), opsWait: make(map[string]bool),
	}
}

// run serves the connection until it fails or ctx is done.
func (l *link) run(ctx context.Context) error {
	go l.readLoop()
	go l.writeLoop()
	l.c.mu.Lock()
	l.c.link = l
	l.c.mu.Unlock()
	l.c.setConn(Conn{State: Online, URL: l.url})
	l.c.loadPendingReads()
	l.startBehindCheck()
	l.sendLocal()
	l.syncAll()
	l.readSettings()
	err := l.loop(ctx)
	l.endBehindCheck()
	l.end()
	l.c.endPresence()
	return err
}

// loop is the client: one frame, wake-up or timer at a time.
func (l *link) loop(ctx context.Context) error {
	for {
		select {
		case f := <-l.in:
			l.handle(f)
		case err := <-l.readErr:
			// Store what was read before the failure; what is not
			// acknowledged comes again on the next hello.
			for len(l.in) > 0 {
				l.handle(<-l.in)
			}
			return err
		case <-l.writerDone:
			return l.writeErr
		case <-l.c.kick:
			l.sendLocal()
		case fn := <-l.later:
			fn(l)
		case <-l.ackTimer.C:
			l.flushDelivered()
		case <-ctx.Done():
			l.flushDelivered()
			return ctx.Err()
		}
	}
}

// after runs fn on the client goroutine once d has passed, unless the
// connection has ended by then.
func (l *link) after(d time.Duration, fn func(*link)) {
	time.AfterFunc(d, func() {
		select {
		case l.later <- fn:
		case <-l.stop:
		}
	})
}

// retryDelay is the wait before repeating a request the server refused
// for a passing reason (rate_limited, internal) for the nth time in a row.
func retryDelay(n int) time.Duration { return backoff(retryMinWait, retryMaxWait, n) }

// The bounds of retryDelay.
const (
	retryMinWait = 500 * time.Millisecond
	retryMaxWait = 30 * time.Second
)

// temporary reports whether an answer is a refusal for a passing reason:
// the server changed nothing and the request may be repeated.
func temporary(f protocol.Frame) bool {
	perr := answerError(f)
	return perr != nil && (perr.Code == protocol.CodeRateLimited || perr.Code == protocol.CodeInternal)
}

// sendLocal sends what the UI left for the server: outbox messages, read
// marks, session operations, queued requests.
func (l *link) sendLocal() {
	l.flushOutbox()
	l.flushReads()
	l.flushOps()
	for _, req := range l.c.takeQueue() {
		l.request(req)
	}
	l.sendWatch()
}

// end closes the connection: queued frames are flushed (briefly), requests
// without an answer are put back in the queue or failed.
func (l *link) end() {
	l.c.mu.Lock()
	l.c.link = nil
	l.c.mu.Unlock()
	l.ackTimer.Stop()
	close(l.stop)
	close(l.out)
	select {
	case <-l.writerDone:
	case <-time.After(closeWait + writeWait):
	}
	l.ws.Close()
	<-l.readerDone
	<-l.writerDone

	ids := make([]string, 0, len(l.pending))
	for id := range l.pending {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(idNumber(a), idNumber(b)) })
	var again []*request
	for _, id := range ids {
		if req := l.pending[id]; req.retry {
			again = append(again, req)
		} else {
			req.fail(ErrNoAnswer)
		}
	}
	l.c.requeue(again)
}

// idNumber is the counter in a request id, for ordering.
func idNumber(id string) int64 {
	n, _ := strconv.ParseInt(id[1:], 10, 64)
	return n
}

// readLoop decodes frames for the client until the connection fails.
func (l *link) readLoop() {
	defer close(l.readerDone)
	l.ws.SetReadDeadline(time.Now().Add(readWait))
	l.ws.SetPingHandler(func(data string) error {
		l.ws.SetReadDeadline(time.Now().Add(readWait))
		l.ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(writeWait))
		return nil
	})
	for {
		_, data, err := l.ws.ReadMessage()
		if err != nil {
			l.readErr <- err
			return
		}
		l.ws.SetReadDeadline(time.Now().Add(readWait))
		f, _, perr := protocol.DecodeServerFrame(data)
		if perr != nil {
			l.c.log.Warn("undecodable frame from the server", "err", perr)
			continue
		}
		select {
		case l.in <- f:
		case <-l.stop:
			return
		}
	}
}

// writeLoop writes queued frames until the queue is closed, then says
// goodbye with a close frame.
func (l *link) writeLoop() {
	defer close(l.writerDone)
	for data := range l.out {
		l.ws.SetWriteDeadline(time.Now().Add(writeWait))
		if err := l.ws.WriteMessage(websocket.TextMessage, data); err != nil {
			l.writeErr = err
			return
		}
	}
	l.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(closeWait))
}

// write queues a frame for the writer.
func (l *link) write(f protocol.Frame) {
	data, err := protocol.Encode(f)
	if err != nil {
		l.c.log.Error("encode", "type", f.FrameType(), "err", err)
		return
	}
	select {
	case l.out <- data:
		l.c.countSent(f.FrameType())
	case <-l.writerDone:
	}
}

// request sends req, with a fresh id when it expects an answer.
func (l *link) request(req *request) {
	if req.answer != nil {
		id := l.c.nextID()
		protocol.SetRequestID(req.frame, id)
		l.pending[id] = req
	}
	l.write(req.frame)
}
