package tui

import (
	"time"

	tea "charm.land/bubbletea/v2"
)

// loadNewest reads the newest window of the open chat, and its stored
// ticks, off the UI goroutine.
func (p *chatPane) loadNewest(limit int) tea.Cmd {
	b, conv, gen := p.com.b, p.c.conv, p.c.gen
	return func() tea.Msg {
		msgs, err := b.Messages(conv, 0, limit)
		return messagesMsg{conv: conv, gen: gen, msgs: msgs, limit: limit, ticks: b.Ticks(conv), err: err,
			quotes: missingQuotes(b, conv, msgs)}
	}
}

// reload re-reads the open chat after a change, coalescing bursts.
func (p *chatPane) reload() tea.Cmd {
	c := p.c
	if c.reloading || !c.loaded {
		c.reloadAgain = true
		return nil
	}
	c.reloading = true
	return p.loadNewest(min(c.storedCount()+p.com.opts.PageSize, maxWindow))
}

// maxWindow bounds the messages a chat holds loaded at once.
const maxWindow = 20000

// loadOlder asks for the page above the oldest loaded message: from the
// local store first, from the server when the store has none.
func (p *chatPane) loadOlder() tea.Cmd {
	c := p.c
	if c == nil || !c.loaded || c.loadingOlder || c.awaitServer != 0 || c.storeEnd || c.atBeginning() {
		return nil
	}
	before := c.oldestSeq()
	if before == 0 {
		// Nothing stored here yet: ask the server for the newest page.
		return p.askServer(0)
	}
	c.loadingOlder = true
	c.rebuildAtTop(p.com.renderCtx())
	b, conv, gen, n := p.com.b, c.conv, c.gen, p.com.opts.PageSize
	return func() tea.Msg {
		msgs, err := b.Messages(conv, before, n)
		return messagesMsg{conv: conv, gen: gen, older: true, before: before, msgs: msgs, err: err,
			quotes: missingQuotes(b, conv, msgs)}
	}
}

// askServer asks the client for the server's page below before (0: the
// newest page) when the local store has nothing more.
func (p *chatPane) askServer(before int64) tea.Cmd {
	c := p.c
	if p.readOnly() {
		// A former member may not read the group's history: what is
		// stored here is all there is.
		c.storeEnd = true
		c.rebuildAtTop(p.com.renderCtx())
		return nil
	}
	c.awaitServer = before
	if before == 0 {
		c.awaitServer = -1
	}
	c.rebuildAtTop(p.com.renderCtx())
	b, conv, gen, mark := p.com.b, c.conv, c.gen, c.awaitServer
	return tea.Batch(
		call(func() { b.LoadOlder(conv, before) }),
		p.com.tick(olderTimeout, func(time.Time) tea.Msg { return olderTimeoutMsg{conv: conv, gen: gen, before: mark} }),
	)
}

// onMessages applies a loaded page of the open chat.
func (p *chatPane) onMessages(msg messagesMsg) tea.Cmd {
	c := p.c
	if c == nil || msg.conv != c.conv || msg.gen != c.gen {
		return nil
	}
	rc := p.com.renderCtx()
	for _, q := range msg.quotes {
		c.quotes[q.Seq] = q
	}
	if msg.older {
		c.loadingOlder = false
		if msg.err != nil {
			c.rebuild(rc)
			return notice("loading older messages: "+msg.err.Error(), true)
		}
		if len(msg.msgs) == 0 {
			// The local store is exhausted: ask the server.
			return p.askServer(msg.before)
		}
		c.prepend(rc, msg.msgs)
		if c.jumpTo != 0 {
			return p.continueJump()
		}
		return p.fillScreen()
	}
	c.reloading = false
	c.ticks = c.ticks.Merge(msg.ticks)
	if msg.err != nil {
		c.loaded = true
		c.rebuild(rc)
		return notice("loading messages: "+msg.err.Error(), true)
	}
	first := !c.loaded
	prevNewest := c.newestSeq()
	c.loaded = true
	if c.awaitServer != 0 {
		var oldest int64
		for _, x := range msg.msgs {
			if x.Seq > 0 && !x.Outbox {
				oldest = x.Seq
				break
			}
		}
		if oldest > 0 && (c.awaitServer < 0 || oldest < c.awaitServer) {
			c.awaitServer = 0
		}
	}
	wasFollowing, restored := c.follow, false
	c.setMessages(rc, msg.msgs)
	if pos := c.restore; pos != nil {
		// Reopened where the user left it: load on up to that message
		// while the store has more.
		if oldest := c.oldestSeq(); oldest > pos.seq && c.storedCount() >= msg.limit && msg.limit < maxWindow {
			c.reloading = true
			return p.loadNewest(int(min(maxWindow, int64(c.storedCount())+oldest-pos.seq+int64(p.com.opts.PageSize))))
		}
		restored = c.restorePosition()
	}
	if first && !restored && c.divLine >= 0 {
		c.setOffset(c.divLine)
	}
	if !first {
		for _, x := range msg.msgs {
			if x.Seq > prevNewest && x.From != rc.me {
				p.com.live.stopTyping(c.conv, x.From)
				if !wasFollowing {
					c.newBelow++
				}
			}
		}
	}
	var cmds []tea.Cmd
	if c.reloadAgain {
		c.reloadAgain = false
		cmds = append(cmds, p.reload())
	}
	if first {
		cmds = append(cmds, p.fillScreen())
	}
	cmds = append(cmds, p.continueJump())
	return tea.Batch(cmds...)
}

// fillScreen loads older messages while the loaded ones do not fill the
// screen, so that there is something to scroll.
func (p *chatPane) fillScreen() tea.Cmd {
	if c := p.c; c != nil && len(c.lines) < c.height {
		return p.loadOlder()
	}
	return nil
}

// onSent follows a send: the chat reloads to show the message.
func (p *chatPane) onSent(msg sentMsg) tea.Cmd {
	if msg.err != nil {
		// Give the text back to edit and retry.
		return tea.Batch(p.giveBack(msg.conv, msg.body), notice("send: "+msg.err.Error(), true))
	}
	if p.c != nil && p.c.conv == msg.conv {
		p.c.follow = true
		return p.reload()
	}
	return nil
}
