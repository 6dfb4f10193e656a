package tui

import (
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/client"
	"github.com/imcore/im/session"
)

// onIncoming tells the user of messages that arrived out of sight: the
// open chat on screen in a focused terminal shows them; a muted chat's are
// left alone. Otherwise the terminal rings its bell and is asked for a
// desktop notification (OSC 9, and OSC 777 for the terminals that know
// that one instead), unless Options.NoNotify; and in the narrow layout,
// where the list is not on screen, the open chat's header says where they
// came.
func (m *Model) onIncoming(ev client.Incoming) tea.Cmd {
	if m.chat.conv() == ev.Conv && m.chatVisible() && m.termFocused && !m.showHelp {
		return nil
	}
	from := m.com.people.label(ev.Last.From)
	title := from
	if s, ok := m.list.find(ev.Conv); ok {
		if session.ObjectMuted(&s, m.com.opts.Now().UnixMilli()) {
			return nil
		}
		title = m.com.chatTitle(&s)
	}
	if !m.split() && m.chat.isOpen() && m.chat.conv() != ev.Conv {
		m.com.live.noteElsewhere(ev.Conv, title)
	}
	if m.com.opts.NoNotify {
		return nil
	}
	body := oneLine(ev.Last.Body)
	switch {
	case ev.ReactedTo != nil:
		body = from + " reacted " + body + " to “" + oneLine(ev.ReactedTo.Body) + "”"
	case title != from && ev.Last.From != "":
		body = from + ": " + body // in a group, who wrote
	}
	return tea.Raw(notification(title, body))
}

// notification is the bell and the desktop notification sequences for a
// message from title: OSC 9 (one text) and OSC 777 (title and body). The
// texts are on one line, with nothing a terminal would take for the end
// of a sequence.
func notification(title, body string) string {
	// oneLine drops control characters, the bell and escape included; a
	// title must not hold OSC 777's separator.
	title, body = strings.ReplaceAll(oneLine(title), ";", ","), oneLine(body)
	return "\a" + "\x1b]9;" + title + ": " + body + "\a" + "\x1b]777;notify;" + title + ";" + body + "\a"
}

// noteElsewhere records that a message came in conv, titled title, while
// another chat has the screen.
func (l *live) noteElsewhere(conv, title string) {
	if i := slices.IndexFunc(l.elsewhere, func(e elsewhere) bool { return e.conv == conv }); i >= 0 {
		l.elsewhere = slices.Delete(l.elsewhere, i, i+1)
	}
	l.elsewhere = append(l.elsewhere, elsewhere{conv: conv, title: title})
}

// elsewhere is a chat with new messages the user has not seen because
// another chat has the screen.
type elsewhere struct{ conv, title string }

// elsewhereText says where new messages came, newest first: "new message
// in dave", "new messages in dave, team".
func (l *live) elsewhereText() string {
	if len(l.elsewhere) == 0 {
		return ""
	}
	names := make([]string, 0, len(l.elsewhere))
	for i := len(l.elsewhere) - 1; i >= 0; i-- {
		names = append(names, l.elsewhere[i].title)
	}
	if len(names) == 1 {
		return "new message in " + names[0]
	}
	return "new messages in " + strings.Join(names, ", ")
}
