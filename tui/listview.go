package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/session"
)

// Marks shown in list rows. All are emoji with emoji presentation, two
// cells wide everywhere, so columns stay aligned.
const (
	iconDirect  = "👤"
	iconGroup   = "👥"
	iconFolder  = "📁"
	iconGateway = "🏪"
	markPin     = "📌"
	markMute    = "🔇"
	markUnread  = "●"
	requestTag  = "request" // a first message from someone the user never wrote to
)

// listCtx is what rendering a row needs.
type listCtx struct {
	st      *styles
	cells   cells
	now     time.Time
	me      string
	typing  map[string]typists
	ticks   map[string]protocol.Ticks
	drafts  map[string]string
	people  *people
	focused bool // the list has keyboard focus
}

// View renders the pane: a header line and the rows, exactly its size.
func (l *listPane) View() string {
	c := listCtx{st: &l.com.st, cells: l.com.cells, now: l.com.now(), me: l.com.me(), typing: l.com.live.typing,
		ticks: l.com.live.ticks, drafts: l.com.live.drafts, people: l.com.people, focused: l.focused}
	w, h := l.width, l.height+1
	var b strings.Builder
	b.Grow((w + 16) * h)
	title := l.breadcrumb()
	right := ""
	if total := l.headerTotal(); total > 0 {
		right = fmt.Sprintf(" %d unread ", total)
	}
	head := c.st.header.Render(c.cells.fit(" "+title, w-c.cells.width(right)))
	if right != "" {
		head += c.st.badge.Render(right)
	}
	b.WriteString(head)
	lines := 1
	lv := l.level()
	if l.filtering {
		l.filter.SetWidth(max(4, w-4))
		b.WriteString("\n" + c.cells.fit(" "+l.filter.View(), w))
		lines++
	}
	switch {
	case l.filtering && len(l.rows) == 0:
		b.WriteString("\n" + c.st.dim.Render(c.cells.fit(" No chat titled like “"+oneLine(l.filter.Value())+"”.", w)))
		lines++
		if lines < h {
			b.WriteString("\n" + c.st.dim.Render(c.cells.fit(" ctrl+s searches the messages.", w)))
			lines++
		}
	case l.loadErr != "" && len(l.rows) == 0:
		b.WriteString("\n" + c.st.errText.Render(c.cells.fit(" "+l.loadErr, w)))
		lines++
	case len(l.rows) == 0 && l.loaded[lv.subBiz]:
		b.WriteString("\n" + c.st.dim.Render(c.cells.fit(" No chats yet. Press n for a new chat.", w)))
		lines++
	case len(l.rows) == 0:
		b.WriteString("\n" + c.st.dim.Render(c.cells.fit(" Loading…", w)))
		lines++
	}
	for i := lv.offset; i < len(l.rows) && lines+rowHeight <= h; i++ {
		r1, r2 := l.renderRow(c, l.rows[i], i == lv.cursor, w)
		b.WriteString("\n" + r1 + "\n" + r2)
		lines += rowHeight
	}
	for ; lines < h; lines++ {
		b.WriteString("\n" + strings.Repeat(" ", w))
	}
	return b.String()
}

// renderRow renders one row as two lines of exactly w cells, with the
// styles as escape sequences (rowPaints): a list shows many rows.
func (l *listPane) renderRow(c listCtx, r listRow, sel bool, w int) (string, string) {
	st := c.st
	p := &st.rows[0]
	if sel {
		p = &st.rows[1]
	}
	gutter := p.bg.render(" ")
	if sel && c.focused {
		gutter = p.gutter.render("▌")
	}
	inner := w - 2 // gutter and right margin

	var icon, title, when, preview string
	var tick protocol.Tick
	var unread int64
	var muted, pinned, marked, own, request bool
	look := lookDim
	switch r.kind {
	case rowFolder:
		icon, title = iconFolder, r.folder
		unread, marked = r.unread, r.marked
		when = listTime(r.latest, c.now)
		preview = l.folderPreview(r.folder)
	default:
		s := r.sess
		icon = iconDirect
		switch {
		case r.kind == rowGateway:
			icon = iconGateway
		case s.Kind == "group" || strings.HasPrefix(s.Conv, "g:"):
			icon = iconGroup
		}
		title = l.com.chatTitle(s)
		request = isRequest(s)
		muted = session.ObjectMuted(s, c.now.UnixMilli()) // a mute that has expired no longer shows
		unread, marked, pinned = s.UnreadCount, s.MarkedUnread, s.Priority > 0
		ts := s.WriteTS
		if s.LastMsg != nil && s.LastMsg.ClientTS > 0 {
			ts = s.LastMsg.ClientTS
		}
		when = listTime(ts, c.now)
		preview, tick, own, look = rowPreview(c, s)
	}

	// Line 1: icon, title, time.
	whenPaint := p.dim
	if unread > 0 && !muted {
		whenPaint = p.accent
	}
	whenW := c.cells.width(when)
	titleW := max(0, inner-3-whenW-1)
	line1 := gutter + p.bg.render(icon+" ") + p.title.render(c.cells.fit(title, titleW)) +
		p.bg.render(" ") + whenPaint.render(when) + p.bg.render(" ")

	// Line 2: preview, marks, badge.
	var marks strings.Builder
	marksW := 0
	addMark := func(s string, pt paint) {
		marks.WriteString(p.bg.render(" ") + pt.render(s))
		marksW += c.cells.width(s) + 1
	}
	if request {
		addMark(requestTag, p.accent)
	}
	if muted {
		addMark(markMute, p.bg)
	}
	if pinned {
		addMark(markPin, p.bg)
	}
	if marked {
		addMark(markUnread, p.dot)
	}
	if unread > 0 {
		badge := p.badge
		if muted {
			badge = p.badgeMuted
		}
		addMark(" "+itoa(unread)+" ", badge)
	}
	prevW := max(0, inner-3-marksW)
	text := p.looks[look]
	prev := text.render(c.cells.fit(preview, prevW))
	if own {
		g := st.tickGlyph(tick)
		if tw := c.cells.width(g); prevW > tw+1 {
			tp := p.dim
			if tick == protocol.TickRead {
				tp = p.read
			}
			prev = tp.render(g) + p.bg.render(" ") + text.render(c.cells.fit(preview, prevW-tw-1))
		}
	}
	line2 := gutter + p.bg.render("   ") + prev + marks.String() + p.bg.render(" ")
	return line1, line2
}

// folderPreview lists the titles of the sessions in a folder.
func (l *listPane) folderPreview(category string) string {
	var names []string
	for _, s := range l.lists[l.level().subBiz] {
		if s.Category == category {
			names = append(names, l.com.chatTitle(&s))
			if len(names) == 4 {
				break
			}
		}
	}
	return strings.Join(names, ", ")
}

// look is how a row's preview text is drawn.
type look int

const (
	lookDim    look = iota // a message
	lookTyping             // who is typing
	lookSystem             // a group's event
	lookDraft              // the user's draft
	looks                  // how many there are
)

// rowPreview returns the preview text of a session, the tick of the user's
// own last message (own says whether there is one), and how to draw it.
func rowPreview(c listCtx, s *protocol.Session) (text string, tick protocol.Tick, own bool, how look) {
	if users := c.typing[s.Conv]; len(users) > 0 {
		return typingText(users, isGroup(s)), 0, false, lookTyping
	}
	if d := c.drafts[s.Conv]; d != "" {
		return "draft: " + oneLine(d), 0, false, lookDraft
	}
	lm := s.LastMsg
	if lm == nil {
		if _, ok := protocol.IsGateway(s.Conv); ok {
			return "business messages", 0, false, lookDim
		}
		return "", 0, false, lookDim
	}
	if lm.Kind == protocol.KindSystem {
		return oneLine(lm.Body), 0, false, lookSystem
	}
	body := oneLine(lm.Body)
	if lm.Deleted {
		body = deletedText
	}
	if lm.From == c.me {
		ticks := s.Ticks.Merge(c.ticks[s.Conv])
		return body, protocol.TickOf(lm.Seq, ticks), true, lookDim
	}
	if isGroup(s) {
		return c.people.label(lm.From) + ": " + body, 0, false, lookDim
	}
	return body, 0, false, lookDim
}
