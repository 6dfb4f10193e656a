package client

import (
	"slices"
	"time"

	"github.com/imcore/im/protocol"
)

// Page sizes the client asks for.
const (
	syncPage   = 500 // sessions per sync page
	fillPage   = protocol.MaxHistoryLimit
	newestPage = 50 // messages fetched for a conversation the profile holds nothing of
	maxFills   = 16 // gap fills in flight (or waiting to retry) at once; the rest queue
	olderPage  = 50 // messages per LoadOlder
)

// lists returns the session lists the profile follows: the main list and
// every sub-business's nested list the main list has a gateway for.
func (l *link) lists() []string {
	nested, err := l.c.store.SubBizLists()
	if err != nil {
		l.c.log.Error("read lists", "err", err)
	}
	return append([]string{""}, nested...)
}

// syncAll syncs every list the profile follows from its cursor.
func (l *link) syncAll() {
	for _, list := range l.lists() {
		l.sync(list)
	}
}

// sync asks for the sessions of list changed since its cursor; with a sync
// of that list in flight, it asks again once that one ends.
func (l *link) sync(list string) {
	if l.syncing[list] {
		l.resync[list] = true
		return
	}
	since, err := l.c.store.Cursor(list)
	if err != nil {
		l.c.log.Error("read cursor", "list", list, "err", err)
		return
	}
	l.syncing[list] = true
	l.request(&request{
		op:     "sync",
		frame:  &protocol.Sync{Since: since, Limit: syncPage, SubBiz: list},
		answer: func(l *link, f protocol.Frame) { l.onSessions(list, f) },
	})
}

// onSessions stores a sync page, follows the cursor, syncs the nested
// lists whose gateway changed and fills the gaps the page reveals.
func (l *link) onSessions(list string, f protocol.Frame) {
	delete(l.syncing, list)
	defer l.behindSettled()
	page, ok := f.(*protocol.Sessions)
	if !ok {
		l.c.log.Warn("sync refused", "list", list, "err", answerError(f))
		l.c.events.push(ErrorEvent{Op: "sync", Err: answerError(f)})
		if temporary(f) {
			l.syncFail[list]++
			l.after(retryDelay(l.syncFail[list]-1), func(l *link) { l.sync(list) })
		}
		return
	}
	delete(l.syncFail, list)
	l.compareSessions(page.Sessions)
	left, err := l.c.store.PutSessionsOf(l.self, page.Sessions)
	if err != nil {
		l.c.log.Error("store sessions", "err", err)
		l.c.events.push(ErrorEvent{Op: "sync", Err: err})
		return
	}
	for _, conv := range left {
		// The notice that the user is no longer a member is in its history.
		l.c.events.push(MessagesChanged{Conv: conv})
	}
	if err := l.c.store.SetCursor(list, page.Cursor); err != nil {
		l.c.log.Error("store cursor", "err", err)
	}
	l.c.events.push(SessionsChanged{})
	for _, s := range page.Sessions {
		if name, isGateway := protocol.IsGateway(s.Conv); isGateway {
			if list == "" {
				l.sync(name)
			}
			continue
		}
		l.fillIfBehind(s.Conv, s.WriteSeq)
	}
	if page.HasMore || l.resync[list] {
		delete(l.resync, list)
		l.sync(list)
	}
}

// fillIfBehind starts a gap fill when conv has a message beyond what the
// profile holds contiguously.
func (l *link) fillIfBehind(conv string, newest int64) {
	synced, err := l.c.store.SyncedSeq(conv)
	if err != nil {
		l.c.log.Error("read synced seq", "conv", conv, "err", err)
		return
	}
	if newest > synced {
		l.fillGap(conv)
	}
}

// fillGap fills conv's history gap: at most maxFills conversations at
// once, the others wait their turn in order.
func (l *link) fillGap(conv string) {
	if l.filling[conv] || slices.Contains(l.fillQ, conv) {
		return
	}
	if len(l.filling) >= maxFills || time.Now().Before(l.fillPause) {
		l.fillQ = append(l.fillQ, conv)
		return
	}
	l.filling[conv] = true
	l.askFill(conv)
}

// fillDone frees conv's gap fill slot for the next waiting conversation.
func (l *link) fillDone(conv string) {
	delete(l.filling, conv)
	l.startFills()
}

// startFills starts waiting gap fills while there are free slots and
// fills are not paused.
func (l *link) startFills() {
	for len(l.fillQ) > 0 && len(l.filling) < maxFills && !time.Now().Before(l.fillPause) {
		next := l.fillQ[0]
		l.fillQ = l.fillQ[1:]
		l.fillGap(next)
	}
}

// fillRefused puts a gap fill the server refused for a passing reason
// back at the head of the queue and pauses every fill: the first refusal
// of a pause sets its length, growing while no fill succeeds between.
func (l *link) fillRefused(conv string) {
	delete(l.filling, conv)
	l.fillQ = append([]string{conv}, l.fillQ...)
	if now := time.Now(); !now.Before(l.fillPause) {
		d := retryDelay(l.fillFail)
		l.fillFail++
		l.fillPause = now.Add(d)
		l.after(d, func(l *link) { l.startFills() })
	}
}

// askFill asks for the page of conv after the seq up to which the profile
// holds every message, page after page until the server has no more. A
// conversation the profile holds nothing of gets its newest page instead;
// older pages come with LoadOlder.
func (l *link) askFill(conv string) {
	synced, err := l.c.store.SyncedSeq(conv)
	if err != nil {
		l.c.log.Error("read synced seq", "conv", conv, "err", err)
		l.fillDone(conv)
		return
	}
	holds, err := l.c.store.HoldsMessages(conv)
	if err != nil {
		l.c.log.Error("read messages", "conv", conv, "err", err)
		l.fillDone(conv)
		return
	}
	h := &protocol.History{Conv: conv, Limit: newestPage}
	forward := holds || synced > 0
	if forward {
		after := synced
		h.AfterSeq, h.Limit = &after, fillPage
	}
	l.request(&request{op: "history", frame: h, answer: func(l *link, f protocol.Frame) {
		if temporary(f) {
			l.c.log.Warn("gap fill refused for now", "conv", conv, "err", answerError(f))
			l.fillRefused(conv)
			return
		}
		if more := l.onFillPage(conv, forward, f); more {
			l.askFill(conv)
			return
		}
		l.fillDone(conv)
	}})
}

// onFillPage stores a gap-filling page and reports whether the fill goes
// on with the next page. A forward page holds every message the server
// has in the range it covers, so the profile is synced up to its last
// seq; a newest page only if it is the whole conversation.
func (l *link) onFillPage(conv string, forward bool, f protocol.Frame) (more bool) {
	page, ok := f.(*protocol.Messages)
	if !ok {
		// Left the group, or the conversation is gone: keep what is held.
		l.c.log.Warn("gap fill refused", "conv", conv, "err", answerError(f))
		return false
	}
	l.fillFail = 0
	if len(page.Messages) == 0 {
		return false
	}
	if !l.storeHistory(page.Messages) {
		return false
	}
	if forward || !page.HasMore {
		last := page.Messages[len(page.Messages)-1]
		if _, err := l.c.store.RaiseSyncedSeq(conv, last.Seq); err != nil {
			l.c.log.Error("raise synced seq", "conv", conv, "err", err)
			return false
		}
	}
	l.unacked[conv] = true
	l.armAck()
	return forward && page.HasMore
}

// storeHistory stores a history page and moves the session to its newest
// message; it reports whether the page was stored.
func (l *link) storeHistory(msgs []protocol.Message) bool {
	_, err := l.c.store.PutMessages(msgs)
	l.reportBehind()
	if err != nil {
		l.c.log.Error("store history", "err", err)
		l.c.events.push(ErrorEvent{Op: "history", Err: err})
		return false
	}
	if _, err := l.c.store.ApplyMessages(msgs[len(msgs)-1:], l.self); err != nil {
		l.c.log.Error("update session", "err", err)
	}
	l.c.events.push(MessagesChanged{Conv: msgs[0].Conv})
	l.c.events.push(SessionsChanged{})
	return true
}
