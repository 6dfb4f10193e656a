package client

import (
	"strings"

	"github.com/imcore/im/protocol"
)

// Page sizes the engine asks for.
const (
	syncPage    = 500 // sessions per sync page
	fillPage    = protocol.MaxHistoryLimit
	newestPage  = 50 // messages fetched for a conversation the profile holds nothing of
	olderPage   = 50 // messages per LoadOlder
	gatewayConv = "biz:"
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
	page, ok := f.(*protocol.Sessions)
	if !ok {
		l.c.log.Warn("sync refused", "list", list, "err", answerError(f))
		l.c.events.push(ErrorEvent{Op: "sync", Err: answerError(f)})
		return
	}
	if err := l.c.store.PutSessions(page.Sessions); err != nil {
		l.c.log.Error("store sessions", "err", err)
		l.c.events.push(ErrorEvent{Op: "sync", Err: err})
		return
	}
	if err := l.c.store.SetCursor(list, page.Cursor); err != nil {
		l.c.log.Error("store cursor", "err", err)
	}
	l.c.events.push(SessionsChanged{})
	for _, s := range page.Sessions {
		if name, isGateway := strings.CutPrefix(s.Conv, gatewayConv); isGateway {
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
		l.fillGap(conv, synced)
	}
}

// fillGap asks for the messages of conv after synced, page after page,
// until the server has no more. A conversation the profile holds nothing
// of gets its newest page instead; older pages come with LoadOlder.
func (l *link) fillGap(conv string, synced int64) {
	if l.filling[conv] {
		return
	}
	l.filling[conv] = true
	h := &protocol.History{Conv: conv, Limit: newestPage}
	if synced > 0 {
		after := synced
		h.AfterSeq, h.Limit = &after, fillPage
	}
	l.request(&request{op: "history", frame: h, answer: func(l *link, f protocol.Frame) {
		delete(l.filling, conv)
		l.onFillPage(conv, synced > 0, f)
	}})
}

// onFillPage stores a gap-filling page. The page holds every message the
// server has in the range it covers, so the profile is synced up to its
// last seq.
func (l *link) onFillPage(conv string, forward bool, f protocol.Frame) {
	page, ok := f.(*protocol.Messages)
	if !ok {
		// Left the group, or the conversation is gone: keep what is held.
		l.c.log.Warn("gap fill refused", "conv", conv, "err", answerError(f))
		return
	}
	if len(page.Messages) == 0 {
		return
	}
	if !l.storeHistory(page.Messages) {
		return
	}
	last := page.Messages[len(page.Messages)-1]
	synced, err := l.c.store.RaiseSyncedSeq(conv, last.Seq)
	if err != nil {
		l.c.log.Error("raise synced seq", "conv", conv, "err", err)
		return
	}
	l.unacked[conv] = true
	l.armAck()
	if forward && page.HasMore {
		l.fillGap(conv, synced)
	}
}

// storeHistory stores a history page and moves the session to its newest
// message; it reports whether the page was stored.
func (l *link) storeHistory(msgs []protocol.Message) bool {
	if _, err := l.c.store.PutMessages(msgs); err != nil {
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
