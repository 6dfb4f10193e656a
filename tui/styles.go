package tui

import (
	"image/color"
	"strings"

	"charm.land/lipgloss/v2"
)

// The palette: a dark theme after the mobile messengers. Bubbles and badges
// carry their own background so they read on light terminals too.
var (
	colAccent    = lipgloss.Color("#00A884")
	colText      = lipgloss.Color("#E9EDEF")
	colDim       = lipgloss.Color("#8696A0")
	colOwnBg     = lipgloss.Color("#005C4B")
	colOtherBg   = lipgloss.Color("#202C33")
	colSelBg     = lipgloss.Color("#2A3942")
	colRead      = lipgloss.Color("#53BDEB")
	colErr       = lipgloss.Color("#F15C6D")
	colWarn      = lipgloss.Color("#FFD279")
	colBadgeText = lipgloss.Color("#111B21")
)

// senderColors colour group senders by a hash of their id.
var senderColors = []color.Color{
	lipgloss.Color("#53BDEB"), lipgloss.Color("#FFD279"), lipgloss.Color("#FF8AAE"),
	lipgloss.Color("#A5B337"), lipgloss.Color("#E08DF5"), lipgloss.Color("#FC9775"),
	lipgloss.Color("#7FD4C1"), lipgloss.Color("#C9A6FF"),
}

// styles holds every style the views use.
type styles struct {
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
	statusBar   lipgloss.Style
	online      lipgloss.Style
	offline     lipgloss.Style
	connecting  lipgloss.Style
	errText     lipgloss.Style
	dialog      lipgloss.Style
	dialogTitle lipgloss.Style
	help        lipgloss.Style
	helpSection lipgloss.Style
	gutterSel   lipgloss.Style
	inputBorder lipgloss.Style
	paneBorder  lipgloss.Style
}

func defaultStyles() styles {
	n := lipgloss.NewStyle
	return styles{
		header:      n().Bold(true).Foreground(colText).Background(colOtherBg),
		headerDim:   n().Foreground(colDim).Background(colOtherBg),
		title:       n().Bold(true).Foreground(colText),
		dim:         n().Foreground(colDim),
		accent:      n().Foreground(colAccent),
		selected:    n().Background(colSelBg),
		badge:       n().Bold(true).Foreground(colBadgeText).Background(colAccent),
		badgeMuted:  n().Bold(true).Foreground(colBadgeText).Background(colDim),
		dot:         n().Foreground(colAccent),
		folder:      n().Bold(true).Foreground(colAccent),
		typing:      n().Italic(true).Foreground(colAccent),
		draft:       n().Foreground(colErr),
		news:        n().Bold(true).Foreground(colAccent).Background(colOtherBg),
		newBelow:    n().Bold(true).Foreground(colBadgeText).Background(colAccent),
		system:      n().Italic(true).Foreground(colDim),
		divider:     n().Bold(true).Foreground(colAccent),
		day:         n().Foreground(colDim),
		statusBar:   n().Foreground(colText).Background(colOtherBg),
		online:      n().Foreground(colAccent).Background(colOtherBg),
		offline:     n().Foreground(colWarn).Background(colOtherBg),
		connecting:  n().Foreground(colDim).Background(colOtherBg),
		errText:     n().Foreground(colErr).Background(colOtherBg),
		dialog:      n().Border(lipgloss.RoundedBorder()).BorderForeground(colAccent).Padding(0, 1),
		dialogTitle: n().Bold(true).Foreground(colAccent),
		help:        n().Foreground(colText),
		helpSection: n().Bold(true).Foreground(colAccent),
		gutterSel:   n().Foreground(colAccent),
		inputBorder: n().Foreground(colDim),
		paneBorder:  n().Foreground(colOtherBg),
	}
}

// senderIndex picks a group member's name colour from senderColors.
func senderIndex(user string) int {
	var h uint32 = 2166136261
	for i := 0; i < len(user); i++ {
		h ^= uint32(user[i])
		h *= 16777619
	}
	return int(h % uint32(len(senderColors)))
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
