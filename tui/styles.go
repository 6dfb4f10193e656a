package tui

import (
	"image/color"
	"strings"

	"charm.land/bubbles/v2/textarea"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/imcore/im/protocol"
)

// palette is a theme's colours, after the mobile messengers'. Bubbles,
// bars and badges carry their own background, so that text is drawn on a
// colour the theme chose.
type palette struct {
	accent, text, dim   color.Color
	ownBg, otherBg      color.Color // message bubbles
	barBg, selBg        color.Color // header and status bars; the selected row
	read, err, warn     color.Color // read ticks, errors, the offline state
	badgeText           color.Color
	senders             []color.Color // group senders, by a hash of their id
	newBelowBg, chipsBg color.Color   // the "new messages" marker; day separators
}

// The themes: dark terminals (the default) and light ones.
var (
	darkPalette = palette{
		accent: lipgloss.Color("#00A884"), text: lipgloss.Color("#E9EDEF"), dim: lipgloss.Color("#8696A0"),
		ownBg: lipgloss.Color("#005C4B"), otherBg: lipgloss.Color("#202C33"),
		barBg: lipgloss.Color("#202C33"), selBg: lipgloss.Color("#2A3942"),
		read: lipgloss.Color("#53BDEB"), err: lipgloss.Color("#F15C6D"), warn: lipgloss.Color("#FFD279"),
		badgeText: lipgloss.Color("#111B21"),
		senders: []color.Color{
			lipgloss.Color("#53BDEB"), lipgloss.Color("#FFD279"), lipgloss.Color("#FF8AAE"),
			lipgloss.Color("#A5B337"), lipgloss.Color("#E08DF5"), lipgloss.Color("#FC9775"),
			lipgloss.Color("#7FD4C1"), lipgloss.Color("#C9A6FF"),
		},
		newBelowBg: lipgloss.Color("#00A884"), chipsBg: lipgloss.Color("#202C33"),
	}
	lightPalette = palette{
		accent: lipgloss.Color("#00806A"), text: lipgloss.Color("#111B21"), dim: lipgloss.Color("#54656F"),
		ownBg: lipgloss.Color("#D9FDD3"), otherBg: lipgloss.Color("#FFFFFF"),
		barBg: lipgloss.Color("#E9EDEF"), selBg: lipgloss.Color("#D1D7DB"),
		read: lipgloss.Color("#0063CB"), err: lipgloss.Color("#C41230"), warn: lipgloss.Color("#8A5A00"),
		badgeText: lipgloss.Color("#FFFFFF"),
		senders: []color.Color{
			lipgloss.Color("#0063CB"), lipgloss.Color("#8A5A00"), lipgloss.Color("#B4125F"),
			lipgloss.Color("#4F6B00"), lipgloss.Color("#8A2BB0"), lipgloss.Color("#B03A00"),
			lipgloss.Color("#00706B"), lipgloss.Color("#5B3DB5"),
		},
		newBelowBg: lipgloss.Color("#00806A"), chipsBg: lipgloss.Color("#E9EDEF"),
	}
)

// styles holds every style the views use, for one palette; plain says
// the terminal shows no colours (NO_COLOR), so that what colours tell
// apart elsewhere is told apart by glyphs.
type styles struct {
	pal   palette
	plain bool

	header      lipgloss.Style
	headerDim   lipgloss.Style
	title       lipgloss.Style
	dim         lipgloss.Style
	accent      lipgloss.Style
	selected    lipgloss.Style
	badge       lipgloss.Style
	badgeMuted  lipgloss.Style
	dot         lipgloss.Style
	folder      lipgloss.Style
	typing      lipgloss.Style
	draft       lipgloss.Style
	news        lipgloss.Style
	newBelow    lipgloss.Style
	system      lipgloss.Style
	divider     lipgloss.Style
	day         lipgloss.Style
	dayChip     lipgloss.Style
	statusBar   lipgloss.Style
	online      lipgloss.Style
	offline     lipgloss.Style
	connecting  lipgloss.Style
	errText     lipgloss.Style
	readTick    lipgloss.Style
	dialog      lipgloss.Style
	dialogTitle lipgloss.Style
	help        lipgloss.Style
	helpSection lipgloss.Style
	gutterSel   lipgloss.Style
	inputBorder lipgloss.Style
	paneBorder  lipgloss.Style
	chip        lipgloss.Style // a reaction under a message
	chipOwn     lipgloss.Style // a reaction the user gave

	// bubbles are the message bubbles' paints: 0 someone else's, 1 one's own.
	bubbles [2]bubblePaints
	// rows are the list rows' paints: 0 a row, 1 the selected row.
	rows [2]rowPaints
}

// newStyles returns the styles of palette p; plain for a terminal without
// colours.
func newStyles(p palette, plain bool) styles {
	n := lipgloss.NewStyle
	st := styles{
		pal:         p,
		plain:       plain,
		header:      n().Bold(true).Foreground(p.text).Background(p.barBg),
		headerDim:   n().Foreground(p.dim).Background(p.barBg),
		title:       n().Bold(true).Foreground(p.text),
		dim:         n().Foreground(p.dim),
		accent:      n().Foreground(p.accent),
		selected:    n().Background(p.selBg),
		badge:       n().Bold(true).Foreground(p.badgeText).Background(p.accent),
		badgeMuted:  n().Bold(true).Foreground(p.badgeText).Background(p.dim),
		dot:         n().Foreground(p.accent),
		folder:      n().Bold(true).Foreground(p.accent),
		typing:      n().Italic(true).Foreground(p.accent),
		draft:       n().Foreground(p.err),
		news:        n().Bold(true).Foreground(p.accent).Background(p.barBg),
		newBelow:    n().Bold(true).Foreground(p.badgeText).Background(p.newBelowBg),
		system:      n().Italic(true).Foreground(p.dim),
		divider:     n().Bold(true).Foreground(p.accent),
		day:         n().Foreground(p.dim),
		dayChip:     n().Foreground(p.dim).Background(p.chipsBg),
		statusBar:   n().Foreground(p.text).Background(p.barBg),
		online:      n().Foreground(p.accent).Background(p.barBg),
		offline:     n().Foreground(p.warn).Background(p.barBg),
		connecting:  n().Foreground(p.dim).Background(p.barBg),
		errText:     n().Foreground(p.err).Background(p.barBg),
		readTick:    n().Foreground(p.read),
		dialog:      n().Border(lipgloss.RoundedBorder()).BorderForeground(p.accent).Padding(0, 1),
		dialogTitle: n().Bold(true).Foreground(p.accent),
		help:        n().Foreground(p.text),
		helpSection: n().Bold(true).Foreground(p.accent),
		gutterSel:   n().Foreground(p.accent),
		inputBorder: n().Foreground(p.dim),
		paneBorder:  n().Foreground(p.barBg),
	}
	st.chip = n().Foreground(p.dim).Background(p.chipsBg)
	st.chipOwn = n().Bold(true).Foreground(p.accent).Background(p.chipsBg)
	if plain {
		// Without colours the badge and the bars keep their shape.
		st.badge = st.badge.Reverse(true)
		st.newBelow = st.newBelow.Reverse(true)
		st.chipOwn = st.chipOwn.Reverse(true)
	}
	st.bubbles = newBubblePaints(p)
	for i, bg := range []lipgloss.Style{lipgloss.NewStyle(), st.selected} {
		r := &st.rows[i]
		r.bg, r.gutter = newPaint(bg), newPaint(st.gutterSel.Inherit(bg))
		r.title, r.dim, r.accent = newPaint(st.title.Inherit(bg)), newPaint(st.dim.Inherit(bg)), newPaint(st.accent.Inherit(bg))
		r.read, r.dot = newPaint(st.readTick.Inherit(bg)), newPaint(st.dot.Inherit(bg))
		r.badge, r.badgeMuted = newPaint(st.badge.Inherit(bg)), newPaint(st.badgeMuted.Inherit(bg))
		r.looks = [looks]paint{lookDim: r.dim, lookTyping: newPaint(st.typing.Inherit(bg)),
			lookSystem: newPaint(st.system.Inherit(bg)), lookDraft: newPaint(st.draft.Inherit(bg))}
	}
	return st
}

// rowPaints are a list row's styles as escape sequences, on its
// background.
type rowPaints struct {
	bg, gutter, title, dim, accent, read, dot, badge, badgeMuted paint
	looks                                                        [looks]paint // the preview text, by look
}

// Tick glyphs: a clock while the server has not answered, then one tick,
// two grey ticks, two blue ticks. Without colours read ticks are heavier,
// to tell them from delivered ones.
const (
	glyphPending   = "◷"
	glyphSent      = "✓"
	glyphDelivered = "✓✓"
	glyphRead      = "✓✓"
	glyphReadPlain = "✔✔"
	glyphFailed    = "✗ not sent" // an own message refused after it may have been stored
)

// tickGlyph is the glyph of tick state t.
func (st *styles) tickGlyph(t protocol.Tick) string {
	switch t {
	case protocol.TickSent:
		return glyphSent
	case protocol.TickDelivered:
		return glyphDelivered
	case protocol.TickRead:
		if st.plain {
			return glyphReadPlain
		}
		return glyphRead
	}
	return glyphPending
}

// styleInput gives the message editor the theme's colours.
func (st *styles) styleInput(ta *textarea.Model) {
	p := st.pal
	s := textarea.DefaultDarkStyles()
	plain := lipgloss.NewStyle()
	s.Focused.CursorLine = plain
	s.Focused.Text = plain.Foreground(p.text)
	s.Focused.Placeholder = plain.Foreground(p.dim)
	s.Blurred.CursorLine = plain.Foreground(p.dim)
	s.Blurred.Text = plain.Foreground(p.dim)
	s.Blurred.Placeholder = plain.Foreground(p.dim)
	s.Cursor.Blink = false
	s.Cursor.Shape = tea.CursorBar
	s.Cursor.Color = p.accent
	ta.SetStyles(s)
}

// styleField gives a one-line field (a dialog's, the list's search) the
// theme's colours.
func (st *styles) styleField(ti *textinput.Model) {
	p := st.pal
	s := textinput.DefaultDarkStyles()
	s.Cursor.Blink = false
	s.Cursor.Color = p.accent
	s.Focused.Text = lipgloss.NewStyle().Foreground(p.text)
	s.Focused.Prompt = lipgloss.NewStyle().Foreground(p.accent)
	s.Blurred.Text = lipgloss.NewStyle().Foreground(p.dim)
	ti.SetStyles(s)
}

// senderIndex picks a group member's name colour from the palette's
// senders.
func senderIndex(user string, n int) int {
	var h uint32 = 2166136261
	for i := 0; i < len(user); i++ {
		h ^= uint32(user[i])
		h *= 16777619
	}
	return int(h % uint32(n))
}

// paint is a style reduced to its escape sequences, for the hot paths
// (message bubbles) where Style.Render is too slow. It is only for styles
// of colours and attributes, applied to one line of plain text.
type paint struct{ pre, post string }

func newPaint(s lipgloss.Style) paint {
	r := s.Render("X")
	i := strings.IndexByte(r, 'X')
	return paint{pre: r[:i], post: r[i+1:]}
}

// render wraps text in the paint's sequences.
func (p paint) render(text string) string {
	if text == "" {
		return ""
	}
	return p.pre + text + p.post
}

// bubblePaints are the bubble styles as escape sequences.
type bubblePaints struct {
	text, dim paint
	ticks     [4]paint // by protocol.Tick
	failed    paint
	senders   []paint // by senderIndex
}

// newBubblePaints returns the paints of someone else's bubble (0) and
// one's own (1) in palette p.
func newBubblePaints(p palette) [2]bubblePaints {
	var out [2]bubblePaints
	dim := lipgloss.NewStyle().Foreground(p.dim)
	other := lipgloss.NewStyle().Foreground(p.text).Background(p.otherBg)
	own := lipgloss.NewStyle().Foreground(p.text).Background(p.ownBg)
	for i, bg := range []lipgloss.Style{other, own} {
		bp := &out[i]
		bp.text = newPaint(bg)
		bp.dim = newPaint(dim.Inherit(bg))
		for t := protocol.TickPending; t <= protocol.TickRead; t++ {
			fg := dim
			if t == protocol.TickRead {
				fg = lipgloss.NewStyle().Foreground(p.read)
			}
			bp.ticks[t] = newPaint(fg.Inherit(bg))
		}
		bp.failed = newPaint(lipgloss.NewStyle().Foreground(p.err).Inherit(bg))
		for _, c := range p.senders {
			bp.senders = append(bp.senders, newPaint(lipgloss.NewStyle().Bold(true).Foreground(c).Inherit(bg)))
		}
	}
	return out
}
