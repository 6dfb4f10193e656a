package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/session"
)

// The owner of a conversation gives its seqs: its memory of the
// conversation's newest seq is the truth, so a message takes its seq here,
// at once and in the order of the sends, and the writes of several
// overlap (store.Backend.AppendAt).

// startAppend gives req's message the conversation's next seq now and
// writes it behind; wait returns once it is durable and derived.
func (e *Engine) startAppend(ctx context.Context, req store.AppendRequest) func() (store.AppendResult, error) {
	fail := func(err error) func() (store.AppendResult, error) {
		err = fmt.Errorf("append to %s: %w", req.Msg.Conv, err)
		return func() (store.AppendResult, error) { return store.AppendResult{}, err }
	}
	dctx, err := e.begin(ctx)
	if err != nil {
		return fail(err)
	}
	cs, err := e.convs.get(ctx, e.be, req.Msg.Conv)
	if err != nil {
		return fail(err)
	}
	release := func() {}
	if cs.isGroup() {
		// Shared with other sends until the message is stored, exclusive
		// of membership changes (see Append).
		cs.gate.RLock()
		release = cs.gate.RUnlock
		cs.mu.Lock()
		exists, version := cs.exists, cs.version
		cs.mu.Unlock()
		switch {
		case !exists:
			release()
			return fail(store.ErrNotFound)
		case version != req.MembersVersion:
			release()
			return fail(store.ErrStaleMembers)
		}
	}
	if err := e.loadRecent(ctx, cs); err != nil {
		release()
		return fail(err)
	}
	msg := e.stamped(req.Msg)
	cs.mu.Lock()
	repeat := cs.recent.has(msg.MsgID)
	first := cs.inflight[msg.MsgID]
	done := make(chan struct{})
	if !repeat {
		msg.Seq = cs.takeSeqAbove(pointsAt(msg))
		cs.recent.add(msg.MsgID, msg.Seq)
		if cs.inflight == nil {
			cs.inflight = map[string]chan struct{}{}
		}
		cs.inflight[msg.MsgID] = done
		// Noted at once: a later message derived before this one counts
		// by it.
		cs.events.note(msg.Seq, !session.CountsAsUnread(msg), cs.assigned)
	}
	cs.mu.Unlock()
	if repeat && first != nil {
		// Its first attempt is still being written here: the repeat is
		// answered once it is, as a repeat of a stored message or, if it
		// failed, as the send it then is.
		release()
		return func() (store.AppendResult, error) {
			<-first
			return e.startAppend(ctx, req)()
		}
	}
	if repeat {
		// A send repeated: the backend finds it (stored, or its first
		// attempt cut short, which it finishes) and takes no seq.
		res, err := e.be.Append(dctx, msg)
		release()
		if err == nil {
			res, err = e.afterAppend(dctx, cs, res)
		}
		if err != nil {
			return fail(err)
		}
		if res.Duplicate {
			// Its first attempt here failed after the message may have
			// been stored: nobody was answered sent, so nobody pushed it.
			// This answer is the one that does.
			cs.mu.Lock()
			res.Duplicate = !cs.recent.takeFailed(msg.MsgID)
			cs.mu.Unlock()
		}
		return func() (store.AppendResult, error) { return res, nil }
	}
	var res store.AppendResult
	go func() {
		// Its seq is given: the write and the derivation go to their end
		// whatever becomes of the caller.
		defer func() {
			cs.mu.Lock()
			delete(cs.inflight, msg.MsgID)
			cs.mu.Unlock()
			close(done)
		}()
		res, err = e.appendAt(dctx, cs, msg)
		release()
		if err == nil {
			res, err = e.afterAppend(dctx, cs, res)
		}
		if err != nil {
			cs.mu.Lock()
			cs.recent.noteFailed(msg.MsgID)
			cs.mu.Unlock()
			err = fmt.Errorf("append to %s: %w", msg.Conv, err)
		}
	}()
	return func() (store.AppendResult, error) {
		<-done
		return res, err
	}
}

// appendAt writes msg at its seq. A seq another message holds (a node
// that lost the conversation wrote there) sends it to a seq above the
// newest stored; a seq its write leaves unused goes to the next message.
func (e *Engine) appendAt(ctx context.Context, cs *convState, msg protocol.Message) (store.AppendResult, error) {
	for range maxSeqTries {
		e.appendSlots <- struct{}{}
		if !e.owners.OwnsConv(cs.conv) {
			// The conversation is being handed over while this append
			// waited for a writer: nothing of it is written, so it goes
			// to the new owner rather than hold the handover up (under
			// load hundreds wait) and write after it.
			<-e.appendSlots
			cs.mu.Lock()
			cs.giveBack(msg.Seq)
			cs.mu.Unlock()
			return store.AppendResult{}, store.ErrMoved
		}
		cs.mu.Lock()
		given := cs.assigned
		cs.mu.Unlock()
		res, err := e.be.AppendAt(ctx, msg, given)
		<-e.appendSlots
		if errors.Is(err, store.ErrSeqTaken) {
			if err := e.catchUp(ctx, cs); err != nil {
				return store.AppendResult{}, err
			}
			cs.mu.Lock()
			cs.events.note(msg.Seq, false, cs.assigned)
			msg.Seq = cs.takeSeqAbove(pointsAt(msg))
			cs.events.note(msg.Seq, !session.CountsAsUnread(msg), cs.assigned)
			cs.mu.Unlock()
			continue
		}
		if err != nil || res.Msg.Seq != msg.Seq {
			cs.mu.Lock()
			cs.giveBack(msg.Seq)
			cs.mu.Unlock()
		}
		return res, err
	}
	// The seq of the last try was never written to.
	cs.mu.Lock()
	cs.giveBack(msg.Seq)
	cs.mu.Unlock()
	return store.AppendResult{}, fmt.Errorf("no free seq after %d tries", maxSeqTries)
}

// catchUp moves the seqs cs gives past those another writer stored or
// promised (a node that lost the conversation, a repeat placed by the
// backend, a group change): its next seq is above the newest the log
// holds or has promised, and the seqs it passes over that hold no message
// become holes. Passed over unseen, a seq promised and never written (a
// max seq raised by a node that lost the conversation before its write)
// would stay a gap for good.
func (e *Engine) catchUp(ctx context.Context, cs *convState) error {
	cs.mu.Lock()
	from := cs.assigned
	cs.mu.Unlock()
	newest, err := e.be.NewestSeq(ctx, cs.conv)
	if err != nil {
		return err
	}
	if newest <= from {
		return nil
	}
	page, _, err := e.be.History(ctx, cs.conv, store.HistoryQuery{After: true, AfterSeq: from, Limit: protocol.MaxHistoryLimit})
	if err != nil {
		return err
	}
	// The page says which seqs above from hold a message, up to its last
	// one, or up to newest when it is not full.
	seen := newest
	if len(page) == protocol.MaxHistoryLimit {
		seen = page[len(page)-1].Seq
	}
	stored := make(map[int64]bool, len(page))
	for _, m := range page {
		stored[m.Seq] = true
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	// Seqs up to cs.assigned are this owner's (given while the page was
	// read): their appends write them or give them back.
	for seq := cs.assigned + 1; seq <= min(newest, seen); seq++ {
		if !stored[seq] && !slices.Contains(cs.holes, seq) {
			cs.holes = append(cs.holes, seq)
		}
	}
	cs.assigned = max(cs.assigned, newest)
	return nil
}

// defaultAppendWriters bounds the appends an owner writes at once, unless
// the backend says otherwise (store.AppendWriters). The writes behind
// (sessions, boundaries, receipts) share the backend with them: a node
// whose senders kept hundreds of appends in flight would leave the writer
// of derived rows a sliver of the backend, and receipts would fall behind
// sends for good. Senders wait instead.
const defaultAppendWriters = 16

// maxSeqTries bounds how often one message moves to another seq.
const maxSeqTries = 8

// takeSeqAbove returns the seq for the conversation's next message, above
// floor (the seq a reply or relation entry points at, which must be below
// its own; 0 for none): the lowest one above floor an append left unused,
// else the one after the newest given; the caller holds mu.
func (cs *convState) takeSeqAbove(floor int64) int64 {
	// A max seq above the newest seq given was moved there by another
	// writer (a message the backend placed, a group change): the seqs it
	// passed over are tried as holes, since one promised and never
	// written would otherwise stay a gap (a taken one sends its message
	// on: catchUp).
	for seq := cs.assigned + 1; seq < cs.maxSeq; seq++ {
		if !slices.Contains(cs.holes, seq) {
			cs.holes = append(cs.holes, seq)
		}
	}
	cs.assigned = max(cs.assigned, cs.maxSeq)
	slices.Sort(cs.holes)
	if i, _ := slices.BinarySearch(cs.holes, floor+1); i < len(cs.holes) {
		seq := cs.holes[i]
		cs.holes = slices.Delete(cs.holes, i, i+1)
		return seq
	}
	cs.assigned++
	return cs.assigned
}

// giveBack returns a seq its message did not take, to be given first to
// the next message; the caller holds mu. It goes to the holes even when
// it is the newest given: lowering assigned instead would lose it for
// good once the max seq moved past it (a message the backend placed above
// it, a group change), since the next seq is taken above both.
func (cs *convState) giveBack(seq int64) {
	cs.events.note(seq, false, cs.assigned)
	cs.holes = append(cs.holes, seq)
}

// recentWindow is how many of a conversation's latest msg_ids an owner
// remembers.
const recentWindow = 512

// recentIDs remembers the latest msg_ids of a conversation, oldest first
// out; the caller holds the conversation's mu.
type recentIDs struct {
	seqs  map[string]int64
	order []string
	// failed holds the msg_ids among them whose append was answered an
	// error: stored or not, nobody was told sent.
	failed map[string]bool
}

// noteFailed records that msgID's append was answered an error.
func (r *recentIDs) noteFailed(msgID string) {
	if _, ok := r.seqs[msgID]; !ok {
		return
	}
	if r.failed == nil {
		r.failed = map[string]bool{}
	}
	r.failed[msgID] = true
}

// takeFailed reports whether msgID's append was answered an error since it
// was last asked, and forgets it.
func (r *recentIDs) takeFailed(msgID string) bool {
	if !r.failed[msgID] {
		return false
	}
	delete(r.failed, msgID)
	return true
}

func (r *recentIDs) add(msgID string, seq int64) {
	if r.seqs == nil {
		r.seqs = make(map[string]int64, recentWindow)
	}
	if _, ok := r.seqs[msgID]; ok {
		return
	}
	r.seqs[msgID] = seq
	r.order = append(r.order, msgID)
	if len(r.order) > recentWindow {
		delete(r.seqs, r.order[0])
		delete(r.failed, r.order[0])
		r.order = r.order[1:]
	}
}

func (r *recentIDs) has(msgID string) bool {
	_, ok := r.seqs[msgID]
	return ok
}

// loadRecent fills the conversation's recent msg_ids from the newest page
// of its log, and takes the seqs that page skips as holes to give to the
// next messages: an owner that died or lost the conversation between
// giving a seq and writing its message left it empty, and the holes it
// knew of died with it. It succeeds once per convState before any seq is
// given; until then every append fails with its error, for a seq given
// without the holes would leave them empty for good.
func (e *Engine) loadRecent(ctx context.Context, cs *convState) error {
	cs.mu.Lock()
	loaded := cs.recentLoaded
	cs.mu.Unlock()
	if loaded {
		return nil
	}
	cs.recentLoad.Lock()
	defer cs.recentLoad.Unlock()
	cs.mu.Lock()
	loaded = cs.recentLoaded
	cs.mu.Unlock()
	if loaded {
		return nil // loaded meanwhile by another append
	}
	page, _, err := e.be.History(ctx, cs.conv, store.HistoryQuery{Limit: protocol.MaxHistoryLimit})
	if err != nil {
		return fmt.Errorf("read the latest messages before giving a seq: %w", err)
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, m := range page {
		cs.recent.add(m.MsgID, m.Seq)
	}
	cs.holes = append(cs.holes, skipped(page, len(page) < protocol.MaxHistoryLimit, cs.holes)...)
	// Seqs above the newest message, up to the conversation's max seq,
	// are holes too: an owner raises the max seq beside the message's
	// write, and died before the write.
	newest := int64(0)
	if len(page) > 0 {
		newest = page[len(page)-1].Seq
	}
	for seq := newest + 1; seq <= cs.maxSeq; seq++ {
		if !slices.Contains(cs.holes, seq) {
			cs.holes = append(cs.holes, seq)
		}
	}
	// Every seq up to the max seq is stored or a hole now.
	cs.assigned = max(cs.assigned, cs.maxSeq)
	cs.recentLoaded = true
	return nil
}

// skipped returns the seqs that page, a conversation's newest messages in
// ascending seq order, skips below its newest (from seq 1 when whole is
// set: the page holds every message), leaving out those in known.
func skipped(page []protocol.Message, whole bool, known []int64) []int64 {
	if len(page) == 0 {
		return nil
	}
	from := page[0].Seq
	if whole {
		from = 1
	}
	next := from
	var out []int64
	for _, m := range page {
		for ; next < m.Seq; next++ {
			if !slices.Contains(known, next) {
				out = append(out, next)
			}
		}
		next = m.Seq + 1
	}
	return out
}
