package tui

import (
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/protocol"
)

// newFilterInput returns a search field.
func newFilterInput(st *styles) textinput.Model {
	ti := textinput.New()
	ti.Prompt = "/ "
	st.styleField(&ti)
	ti.CharLimit = 64
	return ti
}

// startFilter shows the search field: the list then holds the chats whose
// title has what is typed.
func (l *listPane) startFilter() {
	l.filtering = true
	l.filter.Reset()
	l.filter.Focus()
	l.level().cursor = 0
	l.rebuild()
}

// stopFilter gives the whole list back.
func (l *listPane) stopFilter() {
	l.filtering = false
	l.filter.Blur()
	l.filter.Reset()
	l.rebuild()
}

// filterKey handles a key (or a paste) while the search field is shown:
// arrows move the cursor, enter opens the chat under it, esc ends the
// search; the rest is typed.
func (l *listPane) filterKey(m tea.Msg) tea.Cmd {
	msg, _ := m.(tea.KeyPressMsg)
	k := l.com.keys.List
	switch {
	case msg.String() == "esc":
		l.stopFilter()
		return nil
	case msg.String() == "up":
		l.move(-1)
		return nil
	case msg.String() == "down":
		l.move(1)
		return nil
	case key.Matches(msg, k.PageUp, k.PageDown) && msg.Text == "":
		return l.onKey(msg)
	case msg.String() == "enter":
		r, ok := l.selected()
		if !ok {
			return nil
		}
		if r.kind == rowSession {
			l.stopFilter()
			l.ask(openChatMsg{*r.sess})
			return nil
		}
		l.stopFilter()
		return l.openRowOf(r)
	}
	var cmd tea.Cmd
	before := l.filter.Value()
	l.filter, cmd = l.filter.Update(m)
	if l.filter.Value() != before {
		l.level().cursor = 0
		l.rebuild()
	}
	return cmd
}

// filtered returns the rows of sessions whose title holds the search, from
// the whole list of the current level (folders' chats included).
func (l *listPane) filtered(sessions []protocol.Session) []listRow {
	q := strings.ToLower(strings.TrimSpace(l.filter.Value()))
	rows := make([]listRow, 0, 16)
	for i := range sessions {
		s := &sessions[i]
		if q != "" && !strings.Contains(strings.ToLower(sessionTitle(s)), q) && !strings.Contains(strings.ToLower(l.com.chatTitle(s)), q) {
			continue
		}
		kind := rowSession
		if _, ok := protocol.IsGateway(s.Conv); ok {
			kind = rowGateway
		}
		rows = append(rows, listRow{kind: kind, sess: s})
	}
	return rows
}
