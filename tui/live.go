package tui

import (
	"fmt"
	"sort"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/client"
	"github.com/imcore/im/protocol"
)

// live is what changes from moment to moment and both panes show: tick
// boundaries and typing indicators, which the root writes from the
// client's events, and drafts, which the chat pane writes. The panes read
// it when they render.
type live struct {
	ticks     map[string]protocol.Ticks // from TicksChanged, merged
	typing    map[string]typists        // conv -> who is typing
	typingGen int
	drafts    map[string]string // conv -> what was typed and not sent; the chat pane writes it
	elsewhere []elsewhere       // chats with messages unseen while another has the screen
}

func newLive() *live {
	return &live{ticks: map[string]protocol.Ticks{}, typing: map[string]typists{}, drafts: map[string]string{}}
}

// typists are the users typing in one conversation.
type typists map[string]typist

// typist is one typing indicator: gen matches its expiry timer; seq is the
// conversation's newest seq when it started, so that the typist's next
// message (a higher seq from them) ends it.
type typist struct {
	gen int
	seq int64
}

// startTyping shows user typing in conv, whose newest seq is seq, until
// timeout passes without a renewal; it returns the expiry timer.
func (l *live) startTyping(tick ticker, timeout time.Duration, ev client.TypingEvent, seq int64) tea.Cmd {
	l.typingGen++
	users := l.typing[ev.Conv]
	if users == nil {
		users = typists{}
		l.typing[ev.Conv] = users
	}
	users[ev.User] = typist{gen: l.typingGen, seq: seq}
	conv, user, gen := ev.Conv, ev.User, l.typingGen
	return tick(timeout, func(time.Time) tea.Msg {
		return typingExpiredMsg{conv: conv, user: user, gen: gen}
	})
}

// expireTyping ends an indicator whose timer fired, unless it was renewed.
func (l *live) expireTyping(msg typingExpiredMsg) {
	if l.typing[msg.conv][msg.user].gen == msg.gen {
		l.stopTyping(msg.conv, msg.user)
	}
}

// stopTypingOnMessages ends the indicators of typists whose message has
// arrived, as the sessions show it.
func (l *live) stopTypingOnMessages(sessions []protocol.Session) {
	for _, s := range sessions {
		users := l.typing[s.Conv]
		if len(users) == 0 || s.LastMsg == nil {
			continue
		}
		if t, ok := users[s.LastMsg.From]; ok && s.WriteSeq > t.seq {
			l.stopTyping(s.Conv, s.LastMsg.From)
		}
	}
}

// stopTyping clears a typing indicator, for an expiry or a message from the
// typist.
func (l *live) stopTyping(conv, user string) {
	if users := l.typing[conv]; users != nil {
		delete(users, user)
		if len(users) == 0 {
			delete(l.typing, conv)
		}
	}
}

// typingText says who is typing.
func typingText(users typists, group bool) string {
	if !group {
		return "typing…"
	}
	names := make([]string, 0, len(users))
	for u := range users {
		names = append(names, u)
	}
	sort.Strings(names)
	switch len(names) {
	case 1:
		return names[0] + " is typing…"
	case 2:
		return names[0] + " and " + names[1] + " are typing…"
	}
	return fmt.Sprintf("%s and %d others are typing…", names[0], len(names)-1)
}
