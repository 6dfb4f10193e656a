package tui

import (
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// copyText puts text on the terminal's clipboard with OSC 52, which
// works over SSH too (the terminal, not this machine, holds the
// clipboard); a terminal that does not take OSC 52 ignores it.
func copyText(text string) tea.Cmd {
	return tea.Raw(ansi.SetClipboard(ansi.SystemClipboard, text))
}

// copyMessage copies the body of message i of the open chat.
func (p *chatPane) copyMessage(i int) tea.Cmd {
	c := p.c
	if c == nil || i < 0 || i >= len(c.msgs) {
		return notice("no message selected", false)
	}
	if c.msgs[i].Deleted {
		return notice("nothing to copy: the message was deleted", false)
	}
	body := sanitize(c.msgs[i].Body)
	return tea.Batch(copyText(body), notice("copied: "+p.com.cells.truncate(oneLine(body), 40), false))
}
