package tui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/lipgloss/v2"

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
	focused bool // the list has keyboard focus
}

// View renders the pane: a header line and the rows, exactly its size.
func (l *listPane) View() string {
	c := listCtx{st: &l.com.st, cells: l.com.cells, now: l.com.now(), me: l.com.me(), typing: l.com.live.typing,
		ticks: l.com.live.ticks, drafts: l.com.live.drafts, focused: l.focused}
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

// renderRow renders one row as two lines of exactly w cells.
func (l *listPane) renderRow(c listCtx, r listRow, sel bool, w int) (string, string) {
	st := c.st
	bg := lipgloss.NewStyle()
	if sel {
		bg = st.selected
	}
	gutter := bg.Render(" ")
	if sel && c.focused {
		gutter = st.gutterSel.Inherit(bg).Render("▌")
	}
	inner := w - 2 // gutter and right margin

	var icon, title, when, preview, tick string
	var unread int64
	var muted, pinned, marked bool
	previewStyle := st.dim
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
		title = oneLine(s.Title)
		if title == "" {
			title = s.Conv
		}
		muted = session.ObjectMuted(s, c.now.UnixMilli()) // a mute that has expired no longer shows
		unread, marked, pinned = s.UnreadCount, s.MarkedUnread, s.Priority > 0
		ts := s.WriteTS
		if s.LastMsg != nil && s.LastMsg.ClientTS > 0 {
			ts = s.LastMsg.ClientTS
		}
		when = listTime(ts, c.now)
		var t protocol.Tick
		var own bool
		preview, t, own, previewStyle = rowPreview(c, s)
		if own {
			tick = st.renderTick(t, bg)
		}
	}

	// Line 1: icon, title, time.
	whenStyle := st.dim
	if unread > 0 && !muted {
		whenStyle = st.accent
	}
	whenW := c.cells.width(when)
	titleW := max(0, inner-3-whenW-1)
	line1 := gutter + bg.Render(icon+" ") + st.title.Inherit(bg).Render(c.cells.fit(title, titleW)) +
		bg.Render(" ") + whenStyle.Inherit(bg).Render(when) + bg.Render(" ")

	// Line 2: preview, marks, badge.
	var marks []string
	var marksW int
	addMark := func(s string, style lipgloss.Style) {
		marks = append(marks, style.Inherit(bg).Render(s))
		marksW += c.cells.width(s) + 1
	}
	if muted {
		addMark(markMute, bg)
	}
	if pinned {
		addMark(markPin, bg)
	}
	if marked {
		addMark(markUnread, st.dot)
	}
	if unread > 0 {
		badge := st.badge
		if muted {
			badge = st.badgeMuted
		}
		addMark(" "+fmt.Sprint(unread)+" ", badge)
	}
	prevW := max(0, inner-3-marksW)
	prev := previewStyle.Inherit(bg).Render(c.cells.fit(preview, prevW))
	if tick != "" {
		tw := c.cells.width(tick)
		if prevW > tw+1 {
			prev = tick + bg.Render(" ") + previewStyle.Inherit(bg).Render(c.cells.fit(preview, prevW-tw-1))
		}
	}
	line2 := gutter + bg.Render("   ") + prev
	for _, mk := range marks {
		line2 += bg.Render(" ") + mk
	}
	line2 += bg.Render(" ")
	return line1, line2
}

// folderPreview lists the titles of the sessions in a folder.
func (l *listPane) folderPreview(category string) string {
	var names []string
	for _, s := range l.lists[l.level().subBiz] {
		if s.Category == category {
			names = append(names, oneLine(s.Title))
			if len(names) == 4 {
				break
			}
		}
	}
	return strings.Join(names, ", ")
}

// rowPreview returns the preview text of a session, the tick of the user's
// own last message (own says whether there is one), and the text's style.
func rowPreview(c listCtx, s *protocol.Session) (text string, tick protocol.Tick, own bool, style lipgloss.Style) {
	if users := c.typing[s.Conv]; len(users) > 0 {
		return typingText(users, isGroup(s)), 0, false, c.st.typing
	}
	if d := c.drafts[s.Conv]; d != "" {
		return "draft: " + oneLine(d), 0, false, c.st.draft
	}
	lm := s.LastMsg
	if lm == nil {
		if _, ok := protocol.IsGateway(s.Conv); ok {
			return "business messages", 0, false, c.st.dim
		}
		return "", 0, false, c.st.dim
	}
	if lm.Kind == protocol.KindSystem {
		return oneLine(lm.Body), 0, false, c.st.system
	}
	if lm.From == c.me {
		ticks := s.Ticks.Merge(c.ticks[s.Conv])
		return oneLine(lm.Body), protocol.TickOf(lm.Seq, ticks), true, c.st.dim
	}
	if isGroup(s) {
		return lm.From + ": " + oneLine(lm.Body), 0, false, c.st.dim
	}
	return oneLine(lm.Body), 0, false, c.st.dim
}
