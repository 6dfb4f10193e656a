package tui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/imcore/im/client"
	"github.com/imcore/im/protocol"
)

// renderCtx is what rendering messages needs from the root model.
type renderCtx struct {
	st     *styles
	cells  cells
	now    time.Time
	me     string
	people *people // the users' names
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// tickOf is the tick of one of the user's own messages. One set aside
// when the server came back behind the device (a negative seq) was sent
// once: it shows sent, never the clock.
func (c *conversation) tickOf(m *client.Message) protocol.Tick {
	switch {
	case m.Outbox || m.Seq == 0:
		return protocol.TickPending
	case m.Seq < 0:
		return protocol.TickSent
	}
	return protocol.TickOf(m.Seq, c.ticks)
}

// msgTime is the time shown for a message: the sender's clock.
func msgTime(m *client.Message, now time.Time) time.Time {
	switch {
	case m.ClientTS > 0:
		return msgTimeMS(m.ClientTS, now)
	case m.ServerTS > 0:
		return msgTimeMS(m.ServerTS, now)
	}
	return now
}

func msgTimeMS(ms int64, now time.Time) time.Time { return time.UnixMilli(ms).In(now.Location()) }

// layout renders every loaded message into lines and restores the scroll
// position from a.
func (c *conversation) layout(rc renderCtx, a anchor) {
	w := max(10, c.width-1) // the first column is the selection gutter
	lines := make([]string, 0, len(c.lines)+8)
	lineMsg := make([]int, 0, cap(lines))
	deco := func(s string) {
		lines = append(lines, s)
		lineMsg = append(lineMsg, -1)
	}
	c.indexSeqs()
	c.msgLine = make([]int, len(c.msgs))
	c.msgEnd = make([]int, len(c.msgs))
	c.divLine = -1

	switch {
	case !c.loaded:
	case (c.loadingOlder || c.awaitServer != 0) && len(c.msgs) == 0:
		deco(rc.cells.center(rc.st.dim.Render("loading messages…"), w))
	case c.loadingOlder || c.awaitServer != 0:
		deco(rc.cells.center(rc.st.dim.Render("loading older messages…"), w))
	case c.atBeginning() && len(c.msgs) > 0:
		deco(rc.cells.center(rc.st.dim.Render("· start of the conversation ·"), w))
	case c.storeEnd && len(c.msgs) > 0:
		deco(rc.cells.center(rc.st.dim.Render("· no older messages on this device ·"), w))
	case c.storeEnd:
		deco(rc.cells.center(rc.st.dim.Render("No messages on this device."), w))
	case len(c.msgs) == 0:
		deco(rc.cells.center(rc.st.dim.Render("No messages yet. Say hello!"), w))
	}

	var prevT time.Time
	prevFrom, prevSystem := "", false
	divider := false
	for i := range c.msgs {
		m := &c.msgs[i]
		t := msgTime(m, rc.now)
		brk := false
		if i == 0 || !sameDay(t, prevT) {
			if len(lines) > 0 {
				deco(strings.Repeat(" ", w))
			}
			deco(rc.cells.center(rc.st.dayChip.Render(" "+dayLabel(t, rc.now)+" "), w))
			brk = true
		}
		if !divider && c.unreadCount > 0 && m.From != rc.me && m.Seq > c.unreadFrom && m.Seq <= c.unreadUpTo {
			divider = true
			n := c.unreadCount
			label := fmt.Sprintf(" %d unread message", n)
			if n != 1 {
				label += "s"
			}
			label += " "
			c.divLine = len(lines)
			side := max(0, (w-rc.cells.width(label))/2)
			deco(rc.st.divider.Render(strings.Repeat("─", side) + label + strings.Repeat("─", max(0, w-side-rc.cells.width(label)))))
			brk = true
		}
		system := m.Kind == protocol.KindSystem
		if !brk && i > 0 && (m.From != prevFrom || system != prevSystem) {
			deco(strings.Repeat(" ", w))
		}
		showSender := c.group && !system && m.From != rc.me && (brk || m.From != prevFrom || prevSystem)
		c.msgLine[i] = len(lines)
		for _, l := range c.renderMessage(rc, m, showSender, w) {
			lines = append(lines, l)
			lineMsg = append(lineMsg, i)
		}
		c.msgEnd[i] = len(lines)
		prevT, prevFrom, prevSystem = t, m.From, system
	}
	c.lines, c.lineMsg = lines, lineMsg

	if a.ok {
		for i := range c.msgs {
			if msgKey(&c.msgs[i]) == a.key {
				c.setOffset(c.msgLine[i] + a.delta)
				return
			}
		}
		c.setOffset(c.offset)
		return
	}
	if c.follow {
		c.gotoBottom()
		return
	}
	c.setOffset(c.offset)
}

// renderMessage renders one message as lines exactly w cells wide, from
// the cache when nothing it depends on changed.
func (c *conversation) renderMessage(rc renderCtx, m *client.Message, showSender bool, w int) []string {
	own := m.From == rc.me && m.Kind != protocol.KindSystem
	tick := protocol.TickPending
	if own {
		tick = c.tickOf(m)
	}
	quote := c.quoteText(m, rc)
	key := layoutKey{w: w, tick: tick, showSender: showSender, seq: m.Seq, outbox: m.Outbox, failed: m.Failed, clientTS: m.ClientTS,
		body: m.Body, edited: m.EditedTS, deleted: m.Deleted, quote: quote, reactions: reactionsKey(m, rc.me)}
	if showSender {
		key.sender = rc.people.label(m.From)
	}
	id := msgKey(m)
	if cl, ok := c.cache[id]; ok && cl.key == key {
		return cl.lines
	}
	var lines []string
	if m.Kind == protocol.KindSystem {
		for _, l := range rc.cells.wrap(sanitize(m.Body), max(1, w-6)) {
			lines = append(lines, rc.cells.center(rc.st.system.Render(l), w))
		}
	} else {
		lines = renderBubble(rc, m, own, tick, showSender, quote, w)
		lines = append(lines, renderReactions(rc, m, own, w)...)
	}
	c.cache[id] = cachedLines{key: key, lines: lines}
	return lines
}

// renderBubble draws a message as a coloured bubble: own messages on the
// right, others on the left, the time (and tick) at the bottom right.
func renderBubble(rc renderCtx, m *client.Message, own bool, tick protocol.Tick, showSender bool, quote string, w int) []string {
	p := &rc.st.bubbles[0]
	if own {
		p = &rc.st.bubbles[1]
	}
	maxInner := max(8, min(w*3/4, w-4)-2)
	body, textPaint := m.Body, p.text
	if m.Deleted {
		// The placeholder of a message deleted for everyone.
		body, textPaint = deletedText, p.dim
	}
	text := rc.cells.wrapLinked(sanitize(body), maxInner)
	if len(text) == 0 {
		text = []string{""}
	}
	clock := msgTime(m, rc.now).Format("15:04")
	if m.EditedTS > 0 && !m.Deleted {
		clock = editedMark + " " + clock
	}
	metaW := rc.cells.width(clock)
	meta := p.dim.render(clock)
	switch {
	case own && m.Failed:
		metaW += 1 + rc.cells.width(glyphFailed)
		meta += p.text.render(" ") + p.failed.render(glyphFailed)
	case own:
		g := rc.st.tickGlyph(tick)
		metaW += 1 + rc.cells.width(g)
		meta += p.text.render(" ") + p.ticks[tick].render(g)
	}
	widths := make([]int, len(text))
	innerW := 0
	for i, l := range text {
		widths[i] = rc.cells.width(l)
		innerW = max(innerW, widths[i])
	}
	sender := ""
	if showSender {
		sender = rc.cells.truncate(sanitize(rc.people.label(m.From)), maxInner)
		innerW = max(innerW, rc.cells.width(sender))
	}
	if quote != "" {
		quote = rc.cells.truncate(quote, maxInner)
		innerW = max(innerW, rc.cells.width(quote))
	}
	lastW := widths[len(text)-1]
	inline := lastW+2+metaW <= maxInner
	if inline {
		innerW = max(innerW, lastW+2+metaW)
	} else {
		innerW = max(innerW, metaW)
	}
	bubbleW := innerW + 2
	pad := p.text.render(" ")
	lead, trail := " ", spaces(max(0, w-bubbleW-1))
	if own {
		lead, trail = trail, " "
	}
	out := make([]string, 0, len(text)+2)
	add := func(content string) { out = append(out, lead+pad+content+pad+trail) }
	if sender != "" {
		add(p.senders[senderIndex(m.From, len(p.senders))].render(sender + spaces(innerW-rc.cells.width(sender))))
	}
	if quote != "" {
		add(p.dim.render(quote + spaces(innerW-rc.cells.width(quote))))
	}
	for i, l := range text {
		if i == len(text)-1 && inline {
			add(textPaint.render(l+spaces(innerW-metaW-widths[i])) + meta)
			continue
		}
		add(textPaint.render(l + spaces(innerW-widths[i])))
	}
	if !inline {
		add(p.text.render(spaces(innerW-metaW)) + meta)
	}
	return out
}

// view renders the message area: exactly c.width x c.height. The selection
// gutter marks the selected message while the history has focus.
func (c *conversation) view(st *styles, cw cells, showSel bool) string {
	var b strings.Builder
	w := max(10, c.width-1)
	blank := strings.Repeat(" ", c.width)
	top := max(0, c.height-len(c.lines)) // short chats sit at the bottom
	for i := 0; i < top; i++ {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(blank)
	}
	end := min(len(c.lines), c.offset+c.height-top)
	for l := c.offset; l < end; l++ {
		if l > c.offset || top > 0 {
			b.WriteByte('\n')
		}
		if l == end-1 && c.newBelow > 0 && !c.follow {
			// The bottom line says that new messages came below.
			label := itoa(int64(c.newBelow)) + " new message ↓"
			if c.newBelow > 1 {
				label = itoa(int64(c.newBelow)) + " new messages ↓"
			}
			b.WriteString(cw.center(st.newBelow.Render(" "+label+" "), c.width))
			break
		}
		if showSel && c.sel >= 0 && c.lineMsg[l] == c.sel {
			b.WriteString(st.gutterSel.Render("▌"))
		} else {
			b.WriteByte(' ')
		}
		line := c.lines[l]
		if c.width-1 < w {
			line = cw.truncate(line, c.width-1)
		}
		b.WriteString(line)
	}
	return b.String()
}
