package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/imcore/im/protocol"
)

// convLoad drives dm and group: conversations in which one member sends
// and every other member acknowledges each message it receives, as a
// client does, with delivered and then read.
//
// A message is followed from its send to four moments: its sent (on the
// sender's connection), each recipient's msg push, and the sender's status
// whose delivered_seq, then read_seq, covers its seq — the minimum over
// every member, so delivered and read by all.
type convLoad struct {
	cfg   *Config
	errs  *errorLog
	body  string
	convs []*convState

	start    time.Duration // sending starts
	warmEnd  time.Duration // the measurement starts
	deadline time.Duration // sending stops, at the latest
	stopSend chan struct{} // closed at the deadline (or on abort)
	hitTime  atomic.Bool   // a sender stopped because the time was up

	mu          sync.Mutex
	outstanding int64 // messages written and neither read by all nor failed
	sendersLeft int
	sendersDone chan struct{} // closed when every sender has stopped
	finished    chan struct{} // closed when, moreover, nothing is outstanding
}

// convState is one conversation of the load.
type convState struct {
	l    *convLoad
	idx  int
	conv string
	snd  *conn
	rcvs []*recipient

	slots chan struct{} // closed loop: one token per send awaiting its sent

	mu       sync.Mutex
	msgs     []msgRec        // by message number, which is also its msg_id
	bySeq    map[int64]int32 // seq → message number, until read by all
	delivSeq int64           // the highest status seen by the sender
	readSeq  int64
	recv     []delivery // every msg push to a recipient
}

// msgRec follows one message; a zero time means "not yet".
type msgRec struct {
	intended, sentAt, delivAt, readAt time.Duration
	seq                               int64
	failed                            bool
}

// delivery is one msg push of message k reaching recipient rcv (its
// index in rcvs).
type delivery struct {
	k, rcv int32
	at     time.Duration
}

// recipient is a member that acknowledges. Its fields are touched only
// on its connection's read goroutine.
type recipient struct {
	cs     *convState
	idx    int32 // in cs.rcvs
	c      *conn
	batch  bool
	noIDs  bool           // marks are sent without id (-mark-ids=false)
	have   int64          // holds every seq up to this one
	ahead  map[int64]bool // seqs received above have+1
	acked  int64          // highest mark sent
	busy   bool           // batch: a read is awaiting its answer
	readID string         // batch: that read's id
}

// newConvLoad prepares the load over conversations already set up.
func newConvLoad(cfg *Config, errs *errorLog, convs []*convState) *convLoad {
	l := &convLoad{cfg: cfg, errs: errs, body: strings.Repeat("x", cfg.BodyBytes), convs: convs,
		stopSend: make(chan struct{}), sendersDone: make(chan struct{}), finished: make(chan struct{})}
	for i, cs := range convs {
		cs.l, cs.idx, cs.bySeq = l, i, map[int64]int32{}
		if cfg.Rate == 0 {
			cs.slots = make(chan struct{}, cfg.Window)
		}
		cs.snd.setHandler(cs.onSender)
		for j, r := range cs.rcvs {
			r.cs, r.idx, r.batch, r.noIDs, r.ahead = cs, int32(j), cfg.Ack == "batch", !cfg.MarkIDs, map[int64]bool{}
			r.c.setHandler(r.on)
		}
	}
	return l
}

// run sends for warmup+duration (or until count), then waits up to drain
// for what is still due. begin is called when the measurement starts,
// end when sending stops.
func (l *convLoad) run(ctx context.Context, begin, end func()) {
	cfg := l.cfg
	l.start = now()
	l.warmEnd = l.start + cfg.Warmup
	l.deadline = l.warmEnd + cfg.Duration
	l.sendersLeft = len(l.convs)
	warm := time.AfterFunc(cfg.Warmup, begin)
	defer warm.Stop()
	stop := time.AfterFunc(l.deadline-now(), func() { l.hitTime.Store(true); close(l.stopSend) })
	defer stop.Stop()
	sched := schedule{streams: len(l.convs), rate: cfg.Rate}
	for _, cs := range l.convs {
		if cfg.Rate > 0 {
			go l.openLoop(cs, sched)
		} else {
			go l.closedLoop(cs, share(cfg.Count, len(l.convs), cs.idx))
		}
	}
	select {
	case <-l.sendersDone:
	case <-ctx.Done():
	}
	end()
	drain := time.NewTimer(cfg.Drain)
	defer drain.Stop()
	select {
	case <-l.finished:
	case <-drain.C:
	case <-ctx.Done():
	}
}

// closedLoop keeps up to -window sends awaiting their sent; limit bounds
// its messages when -count is given (0: no bound).
func (l *convLoad) closedLoop(cs *convState, limit int64) {
	defer l.senderStopped()
	for k := int64(0); l.cfg.Count == 0 || k < limit; k++ {
		select {
		case cs.slots <- struct{}{}:
		case <-l.stopSend:
			return
		}
		t := now()
		if t >= l.deadline {
			l.hitTime.Store(true)
			return
		}
		if !l.send(cs, t) {
			return
		}
	}
}

// openLoop sends on the run's schedule, each message counted from when it
// was due.
func (l *convLoad) openLoop(cs *convState, sched schedule) {
	defer l.senderStopped()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for k := 0; sched.within(cs.idx, k, l.cfg.Count, l.deadline-l.start); k++ {
		due := l.start + sched.due(cs.idx, k)
		if w := wait(due, now()); w > 0 {
			timer.Reset(w)
			select {
			case <-timer.C:
			case <-l.stopSend:
				return
			}
		}
		select {
		case <-l.stopSend:
			return
		default:
		}
		if !l.send(cs, due) {
			return
		}
	}
}

// send writes message number len(cs.msgs), intended at intended.
func (l *convLoad) send(cs *convState, intended time.Duration) bool {
	cs.mu.Lock()
	k := len(cs.msgs)
	cs.msgs = append(cs.msgs, msgRec{intended: intended})
	cs.mu.Unlock()
	l.addOutstanding(1)
	id := strconv.Itoa(k)
	err := cs.snd.write(&protocol.Send{Ref: protocol.Ref{ID: "s" + id}, Conv: cs.conv, MsgID: id, Body: l.body, ClientTS: time.Now().UnixMilli()})
	if err != nil {
		cs.snd.writeFailed(err)
		cs.fail(k)
		return false
	}
	return true
}

func (l *convLoad) addOutstanding(n int64) {
	l.mu.Lock()
	l.outstanding += n
	l.check()
	l.mu.Unlock()
}

func (l *convLoad) senderStopped() {
	l.mu.Lock()
	l.sendersLeft--
	if l.sendersLeft == 0 {
		close(l.sendersDone)
	}
	l.check()
	l.mu.Unlock()
}

// check closes finished once no sender is left and nothing is due; l.mu
// is held.
func (l *convLoad) check() {
	if l.sendersLeft == 0 && l.outstanding == 0 {
		select {
		case <-l.finished:
		default:
			close(l.finished)
		}
	}
}

// onSender handles the sender's frames: sent, status, and errors answering
// a send.
func (cs *convState) onSender(typ, id string, data []byte, at time.Duration) {
	switch typ {
	case "sent":
		f, err := decode(data)
		if err != nil {
			cs.l.errs.add("undecodable", err.Error())
			return
		}
		if s, ok := f.(*protocol.Sent); ok && s.Conv == cs.conv {
			if k, err := strconv.Atoi(s.MsgID); err == nil {
				cs.sent(k, s.Seq, at)
			}
		}
	case "status":
		f, err := decode(data)
		if err != nil {
			cs.l.errs.add("undecodable", err.Error())
			return
		}
		if st, ok := f.(*protocol.Status); ok && st.Conv == cs.conv {
			cs.status(st, at)
		}
	case "error":
		if k, err := strconv.Atoi(strings.TrimPrefix(id, "s")); err == nil && strings.HasPrefix(id, "s") {
			cs.fail(k)
		}
	}
}

// sent records message k's sent answer.
func (cs *convState) sent(k int, seq int64, at time.Duration) {
	covered := int64(0)
	cs.mu.Lock()
	if k < len(cs.msgs) && cs.msgs[k].sentAt == 0 && !cs.msgs[k].failed {
		r := &cs.msgs[k]
		r.seq, r.sentAt = seq, at
		switch {
		case seq <= cs.readSeq: // the status came first
			r.delivAt, r.readAt, covered = at, at, 1
		case seq <= cs.delivSeq:
			r.delivAt = at
			cs.bySeq[seq] = int32(k)
		default:
			cs.bySeq[seq] = int32(k)
		}
	}
	cs.mu.Unlock()
	cs.release()
	if covered > 0 {
		cs.l.addOutstanding(-covered)
	}
}

// fail records that message k will not be stored (an error answered it,
// or it could not be written).
func (cs *convState) fail(k int) {
	cs.mu.Lock()
	failed := k < len(cs.msgs) && cs.msgs[k].sentAt == 0 && !cs.msgs[k].failed
	if failed {
		cs.msgs[k].failed = true
	}
	cs.mu.Unlock()
	if failed {
		cs.release()
		cs.l.addOutstanding(-1)
	}
}

// release frees a closed-loop window slot.
func (cs *convState) release() {
	select {
	case <-cs.slots:
	default:
	}
}

// status records the sender's status push: every message whose seq it
// newly covers is delivered, or read, by all.
func (cs *convState) status(st *protocol.Status, at time.Duration) {
	covered := int64(0)
	cs.mu.Lock()
	for seq := cs.delivSeq + 1; seq <= st.DeliveredSeq; seq++ {
		if k, ok := cs.bySeq[seq]; ok && cs.msgs[k].delivAt == 0 {
			cs.msgs[k].delivAt = at
		}
	}
	cs.delivSeq = max(cs.delivSeq, st.DeliveredSeq)
	for seq := cs.readSeq + 1; seq <= st.ReadSeq; seq++ {
		if k, ok := cs.bySeq[seq]; ok {
			r := &cs.msgs[k]
			if r.delivAt == 0 {
				r.delivAt = at
			}
			r.readAt = at
			delete(cs.bySeq, seq)
			covered++
		}
	}
	cs.readSeq = max(cs.readSeq, st.ReadSeq)
	cs.mu.Unlock()
	if covered > 0 {
		cs.l.addOutstanding(-covered)
	}
}

// delivery records a msg push of message k to recipient rcv.
func (cs *convState) delivery(k int, rcv int32, at time.Duration) {
	cs.mu.Lock()
	cs.recv = append(cs.recv, delivery{k: int32(k), rcv: rcv, at: at})
	cs.mu.Unlock()
}

// on handles a recipient's frames.
func (r *recipient) on(typ, id string, data []byte, at time.Duration) {
	switch typ {
	case "msg":
		f, err := decode(data)
		if err != nil {
			r.cs.l.errs.add("undecodable", err.Error())
			return
		}
		m := f.(*protocol.MsgPush).Msg
		if m.Conv != r.cs.conv {
			return
		}
		if !r.advance(m.Seq) {
			return // a duplicate: a client drops it by (conv, seq)
		}
		if m.Kind == "" && m.From == r.cs.snd.user {
			if k, err := strconv.Atoi(m.MsgID); err == nil {
				r.cs.delivery(k, r.idx, at)
			}
		}
		if r.have > r.acked && !(r.batch && r.busy) {
			r.ack()
		}
	case "ok", "error":
		if r.batch && r.busy && id == r.readID {
			r.busy = false
			if r.have > r.acked {
				r.ack()
			}
		}
	}
}

// advance records seq as held and reports whether it is new; have moves
// up over every seq held without a gap (a client acknowledges only what
// it holds entirely).
func (r *recipient) advance(seq int64) bool {
	switch {
	case seq <= r.have || r.ahead[seq]:
		return false
	case seq == r.have+1:
		r.have++
		for r.ahead[r.have+1] {
			delete(r.ahead, r.have+1)
			r.have++
		}
	default:
		r.ahead[seq] = true
	}
	return true
}

// ack acknowledges everything held: delivered, then read, each with an id
// (the server answers ok once the mark is durable), or without one
// (-mark-ids=false: nothing answers them).
func (r *recipient) ack() {
	marks := []protocol.Mark{{Conv: r.cs.conv, Seq: r.have}}
	r.acked = r.have
	delivID := ""
	if !r.noIDs {
		delivID = r.c.id("d")
		r.readID = r.c.id("r")
	}
	if err := r.c.write(&protocol.Delivered{Ref: protocol.Ref{ID: delivID}, Marks: marks}); err != nil {
		r.c.writeFailed(err)
		return
	}
	if err := r.c.write(&protocol.Read{Ref: protocol.Ref{ID: r.readID}, Marks: marks}); err != nil {
		r.c.writeFailed(err)
		return
	}
	r.busy = true
}

// report fills r with the load's figures over the measurement window.
func (l *convLoad) report(r *Report) window {
	end := l.deadline
	if !l.hitTime.Load() { // bounded by the count: up to the last sent
		end = l.warmEnd
		for _, cs := range l.convs {
			cs.mu.Lock()
			for _, m := range cs.msgs {
				end = max(end, m.sentAt)
			}
			cs.mu.Unlock()
		}
	}
	win := window{start: l.warmEnd, end: end}
	var (
		messages, sent, failed, unanswered, deliv, read, unread    int64
		sentWin, delivWin, readWin, recvWin, recv, recvWant, early int64
		twice                                                      int64
		latSent, latRecv, latDeliv, latRead                        []time.Duration
		// measured messages (deliveries) whose moment never came
		noSent, noRecv, noDeliv, noRead int64
	)
	for _, cs := range l.convs {
		cs.mu.Lock()
		rcvs := int64(len(cs.rcvs))
		for _, m := range cs.msgs {
			messages++
			measured := win.contains(m.intended)
			if measured && !m.failed {
				// Every measured message is owed each moment; those that
				// come are taken off below.
				noSent++
				noRecv += rcvs
				noDeliv++
				noRead++
			}
			switch {
			case m.failed:
				failed++
				continue
			case m.sentAt == 0:
				unanswered++
				continue
			}
			sent++
			recvWant += rcvs
			if win.contains(m.sentAt) {
				sentWin++
			}
			if measured {
				noSent--
				latSent = append(latSent, m.sentAt-m.intended)
			}
			if m.delivAt != 0 {
				deliv++
				if win.contains(m.delivAt) {
					delivWin++
				}
				if measured {
					noDeliv--
					latDeliv = append(latDeliv, m.delivAt-m.intended)
				}
			}
			if m.readAt == 0 {
				unread++
				continue
			}
			read++
			if win.contains(m.readAt) {
				readWin++
			}
			if measured {
				noRead--
				latRead = append(latRead, m.readAt-m.intended)
			}
		}
		// Each (recipient, message) counts once: a message pushed again at
		// another seq was stored twice, and must not hide one never pushed.
		seen := make(map[delivery]bool, len(cs.recv))
		for _, d := range cs.recv {
			m := cs.msgs[d.k]
			key := delivery{k: d.k, rcv: d.rcv}
			if seen[key] {
				twice++
				continue
			}
			seen[key] = true
			if win.contains(d.at) {
				recvWin++
			}
			if win.contains(m.intended) && !m.failed {
				noRecv--
				latRecv = append(latRecv, d.at-m.intended)
			}
			if m.sentAt == 0 { // pushed, but its sent never came
				early++
				continue
			}
			recv++
		}
		cs.mu.Unlock()
	}
	r.WindowS = round(win.seconds(), 3)
	r.Counts.set("messages", messages)
	r.Counts.set("sent", sent)
	r.Counts.set("failed", failed)
	r.Counts.set("unanswered", unanswered)
	r.Counts.set("delivered", deliv)
	r.Counts.set("read", read)
	r.Counts.set("reads_missing", unread)
	r.Counts.set("recipient_msgs", recv)
	r.Counts.set("recipient_msgs_missing", recvWant-recv)
	if early > 0 {
		r.Counts.set("recipient_msgs_of_unanswered", early)
	}
	if twice > 0 {
		r.Counts.set("recipient_msgs_twice", twice)
	}
	r.Rates.set("sent_per_s", round(win.perSecond(sentWin), 1))
	r.Rates.set("recipient_msgs_per_s", round(win.perSecond(recvWin), 1))
	r.Rates.set("delivered_per_s", round(win.perSecond(delivWin), 1))
	r.Rates.set("read_per_s", round(win.perSecond(readWin), 1))
	r.Latency.set("send_sent", summarizeMissing(latSent, noSent))
	r.Latency.set("send_recipient", summarizeMissing(latRecv, noRecv))
	r.Latency.set("send_delivered", summarizeMissing(latDeliv, noDeliv))
	r.Latency.set("send_read", summarizeMissing(latRead, noRead))
	if sentWin > 0 {
		r.Values.set("read_vs_sent_pct", round(100*float64(readWin)/float64(sentWin), 1))
	}
	if win.end <= win.start {
		r.Notes = append(r.Notes, "the run ended before the measurement began (the count was reached during the warm-up)")
	}
	if unread > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d messages were not read by all within -drain %v of the last send", unread, l.cfg.Drain))
	}
	return win
}
