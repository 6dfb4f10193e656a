package tui

import (
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
)

// helpSection is one titled group of bindings on the help screen.
type helpSection struct {
	title string
	keys  []key.Binding
}

// helpScreen is the full-screen list of every binding, scrollable.
type helpScreen struct {
	com  *common
	help help.Model
	vp   viewport.Model
}

func newHelpScreen(com *common) helpScreen {
	h := help.New()
	s := help.DefaultDarkStyles()
	s.FullKey = lipgloss.NewStyle().Bold(true).Foreground(com.st.pal.accent)
	s.FullDesc = lipgloss.NewStyle().Foreground(com.st.pal.text)
	h.Styles = s
	vp := viewport.New()
	vp.KeyMap = viewport.DefaultKeyMap()
	vp.MouseWheelEnabled = true
	return helpScreen{com: com, help: h, vp: vp}
}

// SetSize lays the sections out in as many columns as fit in w.
func (h *helpScreen) SetSize(w, ht int) {
	st, km := &h.com.st, h.com.keys
	h.vp.SetWidth(w)
	h.vp.SetHeight(ht)
	var blocks []string
	for _, s := range km.helpSections() {
		body := h.help.FullHelpView([][]key.Binding{s.keys})
		blocks = append(blocks, st.helpSection.Render(s.title)+"\n"+body)
	}
	colW := 0
	for _, b := range blocks {
		colW = max(colW, lipgloss.Width(b))
	}
	colW += 4
	perRow := max(1, (w-2)/colW)
	var rows []string
	for i := 0; i < len(blocks); i += perRow {
		var row []string
		for j := i; j < min(i+perRow, len(blocks)); j++ {
			row = append(row, lipgloss.NewStyle().Width(colW).Render(blocks[j]))
		}
		rows = append(rows, lipgloss.JoinHorizontal(lipgloss.Top, row...))
	}
	title := st.title.Render("Keys") + st.dim.Render("  —  esc, q or ? closes; j/k scroll")
	content := title + "\n\n" + strings.Join(rows, "\n\n")
	lines := strings.Split(content, "\n")
	for i, l := range lines {
		lines[i] = " " + l
	}
	h.vp.SetContentLines(lines)
}

// Update scrolls the help screen.
func (h *helpScreen) Update(msg tea.Msg) {
	h.vp, _ = h.vp.Update(msg)
}

// View renders the help screen, exactly the viewport's size.
func (h *helpScreen) View() string { return h.vp.View() }
