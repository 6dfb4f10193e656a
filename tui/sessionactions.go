package tui

import (
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/client"
)

// Mute durations offered by the mute dialog; 0 is "until unmuted".
var muteChoices = []struct {
	label string
	d     time.Duration
}{
	{"8 hours", 8 * time.Hour},
	{"1 week", 7 * 24 * time.Hour},
	{"Always", 0},
}

// sessionAction runs pin, mute, mark unread, delete or category on the
// selected session.
func (l *listPane) sessionAction(msg tea.KeyPressMsg) tea.Cmd {
	r, ok := l.selected()
	if !ok {
		return nil
	}
	if r.kind == rowFolder {
		return notice("open the folder and pick a chat", false)
	}
	com, s := l.com, *r.sess
	b, conv, title := com.b, s.Conv, com.chatTitle(&s)
	op := func(op string, until int64, category string) tea.Cmd {
		return call(func() { b.SessionOp(conv, op, until, category) })
	}
	// The client shows an operation at once; offline, the notice says
	// that the server has yet to hear of it.
	notice := func(text string, isErr bool) tea.Cmd {
		if com.conn.State != client.Online {
			text += " (offline: sent when back online)"
		}
		return notice(text, isErr)
	}
	k := com.keys.List
	switch {
	case key.Matches(msg, k.Pin):
		if s.Priority > 0 {
			return tea.Batch(op("unpin", 0, ""), notice("unpinned "+title, false))
		}
		return tea.Batch(op("pin", 0, ""), notice("pinned "+title, false))
	case key.Matches(msg, k.Mute):
		if s.Muted {
			return tea.Batch(op("unmute", 0, ""), notice("unmuted "+title, false))
		}
		labels := make([]string, len(muteChoices))
		for i, c := range muteChoices {
			labels[i] = c.label
		}
		l.ask(showDialogMsg{newChoice(com, "Mute "+title+" for", labels, func(i int) tea.Cmd {
			var until int64
			if d := muteChoices[i].d; d > 0 {
				until = com.opts.Now().Add(d).UnixMilli()
			}
			return tea.Batch(op("mute", until, ""), notice("muted "+title+": "+strings.ToLower(muteChoices[i].label), false))
		})})
	case key.Matches(msg, k.MarkUnread):
		if s.UnreadCount > 0 || s.MarkedUnread {
			seq := s.WriteSeq
			return tea.Batch(call(func() { b.MarkRead(conv, seq) }), notice("marked "+title+" read", false))
		}
		return tea.Batch(op("mark_unread", 0, ""), notice("marked "+title+" unread", false))
	case key.Matches(msg, k.Category):
		l.ask(showDialogMsg{newPrompt(com, "Move "+title+" to a category", folderRule+". An empty name takes it out of its folder.",
			[]string{"Category"}, []string{s.Category}, func(v []string) (tea.Cmd, error) {
				cat := v[0]
				if err := checkFolder(cat); err != nil {
					return nil, err
				}
				note := "moved " + title + " to " + cat
				if cat == "" {
					note = "took " + title + " out of " + s.Category
				}
				return tea.Batch(op("set_category", 0, cat), notice(note, false)), nil
			})})
	case key.Matches(msg, k.Delete):
		l.ask(showDialogMsg{deleteChatDialog(com, s)})
	}
	return nil
}
