package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// choiceRows is the most options a choice dialog shows at once; it
// scrolls through more (a group's members, say).
const choiceRows = 10

// choiceDialog picks one of a few options.
type choiceDialog struct {
	asks
	com     *common
	title   string
	options []string
	sel     int
	top     int // the first option shown
	choose  func(i int) tea.Cmd
	width   int
}

func newChoice(com *common, title string, options []string, choose func(i int) tea.Cmd) *choiceDialog {
	return &choiceDialog{com: com, title: title, options: options, choose: choose, width: 40}
}

func (d *choiceDialog) SetSize(w, _ int) { d.width = w }

func (d *choiceDialog) KeyMap() []key.Binding {
	k := d.com.keys.Dialog
	return []key.Binding{k.Up, k.Down, k.Confirm, k.Cancel}
}

func (d *choiceDialog) Update(msg tea.Msg) (bool, tea.Cmd) {
	km, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return false, nil
	}
	k := d.com.keys.Dialog
	switch {
	case key.Matches(km, k.Cancel):
		return true, nil
	case key.Matches(km, k.Up):
		d.sel = (d.sel + len(d.options) - 1) % len(d.options)
	case key.Matches(km, k.Down), key.Matches(km, k.NextField):
		d.sel = (d.sel + 1) % len(d.options)
	case key.Matches(km, k.Confirm):
		return true, d.choose(d.sel)
	default:
		if s := km.String(); len(s) == 1 && s[0] >= '1' && s[0] <= '9' && int(s[0]-'1') < len(d.options) {
			return true, d.choose(int(s[0] - '1'))
		}
	}
	// Keep the selection in the window shown.
	d.top = max(min(d.top, d.sel), d.sel-choiceRows+1)
	return false, nil
}

func (d *choiceDialog) View() string {
	st, w := &d.com.st, d.width
	var b strings.Builder
	b.WriteString(st.dialogTitle.Render(d.title) + "\n")
	end := min(len(d.options), d.top+choiceRows)
	if d.top > 0 {
		b.WriteString("\n" + st.dim.Render("  ↑ "+itoa(int64(d.top))+" more"))
	}
	for i := d.top; i < end; i++ {
		o, num := d.options[i], " " // only 1-9 have a digit key
		if i < 9 {
			num = itoa(int64(i + 1))
		}
		line := fmt.Sprintf("  %s  %s", num, o)
		if i == d.sel {
			line = st.accent.Render(fmt.Sprintf("▸ %s  %s", num, o))
		}
		b.WriteString("\n" + d.com.cells.truncate(line, w))
	}
	if end < len(d.options) {
		b.WriteString("\n" + st.dim.Render("  ↓ "+itoa(int64(len(d.options)-end))+" more"))
	}
	b.WriteString("\n\n" + st.dim.Render("↑/↓ and enter, or 1-"+itoa(int64(min(len(d.options), 9)))+"; esc cancels"))
	return b.String()
}
