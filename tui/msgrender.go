package tui

import (
	"slices"
	"strings"

	"github.com/imcore/im/client"
	"github.com/imcore/im/protocol"
)

// What a chat shows of replies, edits, deletions and reactions.
const (
	deletedText = "message deleted" // the placeholder of a message deleted for everyone
	editedMark  = "edited"          // beside the time of an edited message
	quoteMark   = "↪ "              // before the quoted target of a reply
)

// indexSeqs maps each loaded stored message's seq to its index, for the
// targets of replies.
func (c *conversation) indexSeqs() {
	clear(c.bySeq)
	if c.bySeq == nil {
		c.bySeq = make(map[int64]int, len(c.msgs))
	}
	for i := range c.msgs {
		if s := c.msgs[i].Seq; s > 0 && !c.msgs[i].Outbox {
			c.bySeq[s] = i
		}
	}
}

// quoteOf returns message seq, the target of a reply, when it is loaded
// or held.
func (c *conversation) quoteOf(seq int64) (client.Message, bool) {
	if i, ok := c.bySeq[seq]; ok {
		return c.msgs[i], true
	}
	m, ok := c.quotes[seq]
	return m, ok
}

// quoteText is the line a reply shows its target with, "" for a message
// that is no reply.
func (c *conversation) quoteText(m *client.Message, rc renderCtx) string {
	if m.ReplyTo <= 0 {
		return ""
	}
	t, ok := c.quoteOf(m.ReplyTo)
	switch {
	case !ok:
		return quoteMark + "an earlier message (t shows it)"
	case t.Deleted:
		return quoteMark + senderName(rc.people, t.From, rc.me) + ": " + deletedText
	case t.Kind == protocol.KindSystem:
		return quoteMark + oneLine(t.Body)
	}
	return quoteMark + senderName(rc.people, t.From, rc.me) + ": " + oneLine(t.Body)
}

// senderName is how a chat names user: "you" for me, else its label.
func senderName(pp *people, user, me string) string {
	if user == me {
		return "you"
	}
	return pp.label(user)
}

// reactionsKey sums up what m's reactions line shows, for the render
// cache.
func reactionsKey(m *client.Message, me string) string {
	rs := m.ReactionList()
	if len(rs) == 0 || m.Deleted {
		return ""
	}
	var b strings.Builder
	for _, r := range rs {
		b.WriteString(r.Body)
		b.WriteByte(' ')
		b.WriteString(itoa(int64(len(r.Users))))
		if slices.Contains(r.Users, me) {
			b.WriteByte('*')
		}
		b.WriteByte(';')
	}
	return b.String()
}

// renderReactions draws m's reactions under its bubble, on its side: each
// with its count, the user's own highlighted; exactly w cells a line.
func renderReactions(rc renderCtx, m *client.Message, own bool, w int) []string {
	rs := m.ReactionList()
	if len(rs) == 0 || m.Deleted {
		return nil
	}
	maxW := max(8, min(w*3/4, w-4))
	var lines []string
	var line strings.Builder
	lineW := 0
	flush := func() {
		if lineW == 0 {
			return
		}
		lead, trail := " ", spaces(max(0, w-lineW-1))
		if own {
			lead, trail = trail, " "
		}
		lines = append(lines, lead+line.String()+trail)
		line.Reset()
		lineW = 0
	}
	for _, r := range rs {
		chip := " " + sanitize(r.Body) + " " + itoa(int64(len(r.Users))) + " "
		cw := rc.cells.width(chip)
		if lineW > 0 && lineW+1+cw > maxW {
			flush()
		}
		if lineW > 0 {
			line.WriteByte(' ')
			lineW++
		}
		paint := rc.st.chip
		if slices.Contains(r.Users, rc.me) {
			paint = rc.st.chipOwn
		}
		line.WriteString(paint.Render(chip))
		lineW += cw
	}
	flush()
	return lines
}
