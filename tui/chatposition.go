package tui

import (
	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/client"
)

// position is where the user was in a chat they left while reading
// further up: the message at the top of the screen, and how far into it.
type position struct {
	key      string // msgKey of the message at the top
	seq      int64  // its seq, to load enough to reach it
	delta    int    // lines of it above the screen
	selected bool   // it is selected (a search's hit)
}

// keepPosition remembers where the user is in the open chat, for its next
// opening; at the bottom there is nothing to remember.
func (p *chatPane) keepPosition() {
	c := p.c
	if c == nil || !c.loaded {
		return
	}
	a := c.anchor()
	if c.follow || !a.ok {
		delete(p.positions, c.conv)
		return
	}
	for i := range c.msgs {
		if msgKey(&c.msgs[i]) == a.key {
			p.positions[c.conv] = position{key: a.key, seq: c.msgs[i].Seq, delta: a.delta}
			return
		}
	}
}

// restorePosition puts the screen where the user left the chat, once its
// first page is in; it reports whether it could.
func (c *conversation) restorePosition() bool {
	pos := c.restore
	c.restore = nil
	if pos == nil {
		return false
	}
	for i := range c.msgs {
		if msgKey(&c.msgs[i]) == pos.key {
			c.setOffset(c.msgLine[i] + pos.delta)
			if pos.selected {
				c.sel = i
				c.showSel()
			}
			return true
		}
	}
	return false
}

// jumpTo shows message m of the open chat, selected: at once if it is
// loaded, else once the history from it down to the newest is.
func (p *chatPane) jumpTo(m client.Message) tea.Cmd {
	c := p.c
	key := msgKey(&m)
	for i := range c.msgs {
		if msgKey(&c.msgs[i]) == key {
			c.sel = i
			c.showSel()
			return nil
		}
	}
	// A few lines of what came before it show above it.
	c.restore = &position{key: key, seq: m.Seq, delta: -jumpContext, selected: true}
	c.reloading = true
	limit := int(min(maxWindow, max(int64(c.storedCount()), c.sess.WriteSeq-m.Seq+1+int64(p.com.opts.PageSize)/2)))
	return p.loadNewest(limit)
}

// jumpContext is how many lines show above a message the user jumps to.
const jumpContext = 3
