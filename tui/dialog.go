package tui

import (
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// dialog is a modal box over the screen that takes the keys until it
// closes. Each kind lives in its own file; what it does when it is
// answered it does itself, with the backend or by asking the root.
type dialog interface {
	// Update handles a key (or a paste, or the answer it waits for);
	// done closes the dialog.
	Update(msg tea.Msg) (done bool, cmd tea.Cmd)
	// View renders the box's content, at most the width SetSize gave.
	View() string
	// SetSize gives the dialog the inner width and the height it may use.
	SetSize(w, h int)
	// KeyMap returns the dialog's keys, for its footer and the help.
	KeyMap() []key.Binding
	// take returns what the dialog asked of the root (see asks).
	take() []tea.Msg
}

// dialogWidth is the inner width of dialogs on a screen w cells wide.
func dialogWidth(w int) int { return max(16, min(w-6, 64)) }

// errEmpty is the error of a prompt submitted with a required field empty.
var errEmpty = errorString("please fill in the field")

// errorString is an error that is its text.
type errorString string

func (e errorString) Error() string { return string(e) }

// notice returns a command that shows text in the status bar.
func notice(text string, isErr bool) tea.Cmd {
	return func() tea.Msg { return noticeMsg{text: text, err: isErr} }
}

// renderDialog draws the box around a dialog's content.
func renderDialog(cw cells, st *styles, d dialog, screenW int) string {
	content := d.View()
	inner := 0
	for _, l := range strings.Split(content, "\n") {
		inner = max(inner, cw.width(l))
	}
	inner = min(dialogWidth(screenW), max(24, inner))
	return st.dialog.Width(inner + 4).Render(content)
}

// overlay draws box over base with its top-left corner at x, y; both are
// multi-line strings, base exactly as wide as the screen.
func overlay(cw cells, base, box string, x, y int) string {
	lines := strings.Split(base, "\n")
	for i, bl := range strings.Split(box, "\n") {
		row := y + i
		if row < 0 || row >= len(lines) {
			continue
		}
		line := lines[row]
		lw := cw.method.StringWidth(line)
		bw := cw.method.StringWidth(bl)
		left := cw.method.Truncate(line, x, "")
		if pad := x - cw.method.StringWidth(left); pad > 0 {
			left += strings.Repeat(" ", pad)
		}
		right := ""
		if x+bw < lw {
			right = cw.method.TruncateLeft(line, x+bw, "")
			if pad := lw - (x + bw) - cw.method.StringWidth(right); pad > 0 {
				right = strings.Repeat(" ", pad) + right
			}
		}
		lines[row] = left + "\x1b[m" + bl + "\x1b[m" + right
	}
	return strings.Join(lines, "\n")
}
