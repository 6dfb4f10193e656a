package tui

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// moreHistoryKey handles the history's keys for the selected message's
// link and text and for jumping to the first unread message; ok is false
// for other keys.
func (p *chatPane) moreHistoryKey(msg tea.KeyPressMsg) (cmd tea.Cmd, ok bool) {
	k, c := p.com.keys.History, p.c
	switch {
	case key.Matches(msg, k.OpenLink):
		if c.sel < 0 || c.sel >= len(c.msgs) {
			return notice("no message selected", false), true
		}
		return p.openLinks(c.msgs[c.sel].Body), true
	case key.Matches(msg, k.Copy):
		return p.copyMessage(c.sel), true
	case key.Matches(msg, k.FirstUnread):
		return p.firstUnread(), true
	}
	return nil, false
}

// firstUnread shows the first message that was unread when the chat
// opened (below the unread divider), selected.
func (p *chatPane) firstUnread() tea.Cmd {
	c := p.c
	if c.divLine < 0 || c.divLine+1 >= len(c.lineMsg) {
		return notice("no unread messages here", false)
	}
	c.sel = c.lineMsg[c.divLine+1]
	c.setOffset(c.divLine - c.decorationsAboveDivider())
	return nil
}

// decorationsAboveDivider counts the separator lines right above the
// unread divider, so that the day the first unread message came shows.
func (c *conversation) decorationsAboveDivider() int {
	n := 0
	for l := c.divLine - 1; l >= 0 && c.lineMsg[l] < 0; l-- {
		n++
	}
	return n
}
