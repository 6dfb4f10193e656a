package client

import (
	"github.com/imcore/im/protocol"
)

// handle routes one frame from the server: an answer to its request, or a
// push.
func (l *link) handle(f protocol.Frame) {
	if id := requestID(f); id != "" {
		if req, ok := l.pending[id]; ok {
			delete(l.pending, id)
			req.answer(l, f)
			return
		}
	}
	switch f := f.(type) {
	case *protocol.MsgPush:
		l.onPush(f.Msg)
	case *protocol.Status:
		l.onStatus(f)
	case *protocol.Typing:
		l.c.events.push(TypingEvent{Conv: f.Conv, User: f.User})
	case *protocol.SessionSync:
		l.onSessionSync(f.Cursor)
	case *protocol.SettingsReply:
		l.onSettings(f.Settings, "", "") // changed on another device
	case *protocol.PresenceReply:
		l.onPresence(f.Users)
	case *protocol.ErrorFrame:
		l.c.log.Warn("server error", "code", f.Code, "message", f.Message, "id", f.ID)
		l.c.events.push(ErrorEvent{Op: "server", Err: answerError(f)})
	default:
		l.c.log.Debug("unexpected frame", "type", f.FrameType(), "id", requestID(f))
	}
}

// onPush stores a pushed message together with the pushes already read
// behind it (a burst: one transaction, one acknowledgement), then handles
// the frame that ended the burst, if any.
func (l *link) onPush(first protocol.Message) {
	msgs := []protocol.Message{first}
	var next protocol.Frame
collect:
	for len(msgs) < maxBurst {
		select {
		case f := <-l.in:
			if p, ok := f.(*protocol.MsgPush); ok {
				msgs = append(msgs, p.Msg)
				continue
			}
			next = f
			break collect
		default:
			break collect
		}
	}
	l.storeMessages(msgs)
	if next != nil {
		l.handle(next)
	}
}

// storeMessages stores messages from the server, moves their sessions, and
// schedules their acknowledgement: store first, acknowledge after.
func (l *link) storeMessages(msgs []protocol.Message) {
	if len(msgs) == 0 {
		return
	}
	fresh, err := l.c.store.PutNewMessages(msgs)
	l.reportBehind()
	if err != nil {
		// Not acknowledged: the server pushes them again on the next hello.
		l.c.log.Error("store messages", "err", err)
		l.c.events.push(ErrorEvent{Op: "store", Err: err})
		return
	}
	unknown, err := l.c.store.ApplyMessages(msgs, l.self)
	if err != nil {
		l.c.log.Error("update sessions", "err", err)
	}
	changed := make(map[string]bool)
	var convs []string
	for _, m := range msgs {
		l.seen[m.Conv] = max(l.seen[m.Conv], m.Seq)
		l.unacked[m.Conv] = true
		if !changed[m.Conv] {
			changed[m.Conv] = true
			convs = append(convs, m.Conv)
			l.c.events.push(MessagesChanged{Conv: m.Conv})
		}
	}
	l.recheckPresence(convs)
	l.c.events.push(SessionsChanged{})
	for _, m := range fresh {
		switch {
		case m.From == l.self || m.Kind == protocol.KindSystem:
		case m.Kind == protocol.KindReaction:
			if target, ok := l.reactedToSelf(m); ok {
				l.c.events.push(Incoming{Conv: m.Conv, Count: 1, Last: m, ReactedTo: &target})
			}
		case m.IsRelation():
			// Edits and deletions notify nobody.
		default:
			l.c.events.push(Incoming{Conv: m.Conv, Count: 1, Last: m})
		}
	}
	l.armAck()
	if len(unknown) > 0 {
		l.syncAll()
	}
}

// onStatus raises a conversation's ticks; a lower status changes nothing.
func (l *link) onStatus(s *protocol.Status) {
	ticks, changed, err := l.c.store.RaiseTicks(s.Conv, protocol.Ticks{DeliveredSeq: s.DeliveredSeq, ReadSeq: s.ReadSeq})
	if err != nil {
		l.c.log.Error("raise ticks", "conv", s.Conv, "err", err)
		return
	}
	if changed {
		l.c.events.push(TicksChanged{Conv: s.Conv, Ticks: ticks})
	}
}

// onSessionSync syncs every list that may hold a change newer than its
// cursor: the nudge's cursor is the user's newest change, in any list.
func (l *link) onSessionSync(cursor int64) {
	for _, list := range l.lists() {
		have, err := l.c.store.Cursor(list)
		if err != nil || cursor > have {
			l.sync(list)
		}
	}
}

// reactedToSelf returns the user's message that reaction m is given to,
// as it stands, when m gives one (a removal notifies nobody) and the
// device holds it.
func (l *link) reactedToSelf(m protocol.Message) (protocol.Message, bool) {
	if m.Body == "" {
		return protocol.Message{}, false
	}
	held, err := l.c.store.MessagesAt(m.Conv, []int64{m.RefSeq})
	if err != nil || len(held) == 0 || held[0].From != l.self || held[0].Kind != "" || held[0].Deleted {
		return protocol.Message{}, false
	}
	return held[0].Message, true
}
