package tui

import (
	"errors"
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// dialog is a modal box over the screen that takes the keys until it
// closes.
type dialog interface {
	// update handles a key; done closes the dialog.
	update(m *Model, msg tea.KeyPressMsg) (done bool, cmd tea.Cmd)
	// view renders the box's content for an inner width.
	view(st *styles, w int) string
}

// dialogWidth is the inner width of dialogs on a screen w cells wide.
func dialogWidth(w int) int { return max(16, min(w-6, 64)) }

// confirmDialog asks a yes/no question.
type confirmDialog struct {
	title, text string
	yes         func(m *Model) tea.Cmd
}

func (d *confirmDialog) update(m *Model, msg tea.KeyPressMsg) (bool, tea.Cmd) {
	switch {
	case msg.String() == "y" || key.Matches(msg, m.keys.Dialog.Confirm):
		return true, d.yes(m)
	case msg.String() == "n" || key.Matches(msg, m.keys.Dialog.Cancel):
		return true, nil
	}
	return false, nil
}

func (d *confirmDialog) view(st *styles, w int) string {
	return st.dialogTitle.Render(d.title) + "\n\n" + strings.Join(wrapText(d.text, w), "\n") +
		"\n\n" + st.dim.Render("y / enter: yes    n / esc: no")
}

// choiceRows is the most options a choice dialog shows at once; it
// scrolls through more (a group's members, say).
const choiceRows = 10

// choiceDialog picks one of a few options.
type choiceDialog struct {
	title   string
	options []string
	sel     int
	top     int // the first option shown
	choose  func(m *Model, i int) tea.Cmd
}

func (d *choiceDialog) update(m *Model, msg tea.KeyPressMsg) (bool, tea.Cmd) {
	k := m.keys.Dialog
	switch {
	case key.Matches(msg, k.Cancel):
		return true, nil
	case key.Matches(msg, k.Up):
		d.sel = (d.sel + len(d.options) - 1) % len(d.options)
	case key.Matches(msg, k.Down), key.Matches(msg, k.NextField):
		d.sel = (d.sel + 1) % len(d.options)
	case key.Matches(msg, k.Confirm):
		return true, d.choose(m, d.sel)
	default:
		if s := msg.String(); len(s) == 1 && s[0] >= '1' && s[0] <= '9' && int(s[0]-'1') < len(d.options) {
			return true, d.choose(m, int(s[0]-'1'))
		}
	}
	// Keep the selection in the window shown.
	d.top = max(min(d.top, d.sel), d.sel-choiceRows+1)
	return false, nil
}

func (d *choiceDialog) view(st *styles, w int) string {
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
		b.WriteString("\n" + truncate(line, w))
	}
	if end < len(d.options) {
		b.WriteString("\n" + st.dim.Render("  ↓ "+itoa(int64(len(d.options)-end))+" more"))
	}
	b.WriteString("\n\n" + st.dim.Render("↑/↓ and enter, or 1-"+itoa(int64(min(len(d.options), 9)))+"; esc cancels"))
	return b.String()
}

// promptDialog asks for one or more lines of text.
type promptDialog struct {
	title  string
	labels []string
	inputs []textinput.Model
	focus  int
	hint   string
	err    string
	submit func(m *Model, values []string) (tea.Cmd, error)
}

// newPrompt builds a prompt with one field per label; values prefill them.
func newPrompt(title, hint string, labels []string, values []string, submit func(*Model, []string) (tea.Cmd, error)) *promptDialog {
	d := &promptDialog{title: title, labels: labels, hint: hint, submit: submit}
	s := textinput.DefaultDarkStyles()
	s.Cursor.Blink = false
	s.Cursor.Color = colAccent
	s.Focused.Text = lipgloss.NewStyle().Foreground(colText)
	for i := range labels {
		ti := textinput.New()
		ti.Prompt = "› "
		ti.SetStyles(s)
		ti.CharLimit = 256
		if i < len(values) {
			ti.SetValue(values[i])
			ti.CursorEnd()
		}
		d.inputs = append(d.inputs, ti)
	}
	d.inputs[0].Focus()
	return d
}

func (d *promptDialog) update(m *Model, msg tea.KeyPressMsg) (bool, tea.Cmd) {
	k := m.keys.Dialog
	switch {
	case key.Matches(msg, k.Cancel):
		return true, nil
	case msg.String() == "tab" || msg.String() == "down":
		d.setFocus((d.focus + 1) % len(d.inputs))
		return false, nil
	case msg.String() == "shift+tab" || msg.String() == "up":
		d.setFocus((d.focus + len(d.inputs) - 1) % len(d.inputs))
		return false, nil
	case key.Matches(msg, k.Confirm):
		if d.focus < len(d.inputs)-1 {
			d.setFocus(d.focus + 1)
			return false, nil
		}
		vals := make([]string, len(d.inputs))
		for i, in := range d.inputs {
			vals[i] = strings.TrimSpace(in.Value())
		}
		cmd, err := d.submit(m, vals)
		if err != nil {
			d.err = err.Error()
			return false, nil
		}
		return true, cmd
	}
	var cmd tea.Cmd
	d.inputs[d.focus], cmd = d.inputs[d.focus].Update(msg)
	d.err = ""
	return false, cmd
}

func (d *promptDialog) setFocus(i int) {
	d.inputs[d.focus].Blur()
	d.focus = i
	d.inputs[d.focus].Focus()
}

func (d *promptDialog) view(st *styles, w int) string {
	var b strings.Builder
	b.WriteString(st.dialogTitle.Render(d.title))
	for i := range d.inputs {
		d.inputs[i].SetWidth(max(4, w-3))
		b.WriteString("\n\n" + st.dim.Render(d.labels[i]) + "\n" + d.inputs[i].View())
	}
	if d.err != "" {
		b.WriteString("\n\n" + lipgloss.NewStyle().Foreground(colErr).Render(truncate(d.err, w)))
	}
	if d.hint != "" {
		b.WriteString("\n\n" + st.dim.Render(strings.Join(wrapText(d.hint, w), "\n")))
	}
	return b.String()
}

// infoDialog shows text, such as a message's receipts, until dismissed.
type infoDialog struct {
	title string
	body  []string
	id    int   // matches the receipts request that fills it
	seq   int64 // the message
}

func (d *infoDialog) update(m *Model, msg tea.KeyPressMsg) (bool, tea.Cmd) {
	s := msg.String()
	if key.Matches(msg, m.keys.Dialog.Cancel) || key.Matches(msg, m.keys.Dialog.Confirm) || s == "q" || s == "i" {
		return true, nil
	}
	return false, nil
}

func (d *infoDialog) view(st *styles, w int) string {
	var b strings.Builder
	b.WriteString(st.dialogTitle.Render(d.title) + "\n")
	for _, l := range d.body {
		b.WriteString("\n" + truncate(l, w))
	}
	b.WriteString("\n\n" + st.dim.Render("esc closes"))
	return b.String()
}

// errEmpty is the error of a prompt submitted with a required field empty.
var errEmpty = errors.New("please fill in the field")

// renderDialog draws the dialog box for a screen w cells wide.
func renderDialog(st *styles, d dialog, w int) string {
	inner := dialogWidth(w)
	if _, ok := d.(*promptDialog); ok {
		inner = min(inner, 48)
	}
	content := d.view(st, inner)
	inner = min(inner, max(24, lipgloss.Width(content)))
	return st.dialog.Width(inner + 4).Render(content)
}

// overlay draws box over base with its top-left corner at x, y; both are
// multi-line strings, base exactly as wide as the screen.
func overlay(base, box string, x, y int) string {
	lines := strings.Split(base, "\n")
	for i, bl := range strings.Split(box, "\n") {
		row := y + i
		if row < 0 || row >= len(lines) {
			continue
		}
		line := lines[row]
		lw := ansi.StringWidth(line)
		bw := ansi.StringWidth(bl)
		left := ansi.Truncate(line, x, "")
		if pad := x - ansi.StringWidth(left); pad > 0 {
			left += strings.Repeat(" ", pad)
		}
		right := ""
		if x+bw < lw {
			right = ansi.TruncateLeft(line, x+bw, "")
			if pad := lw - (x + bw) - ansi.StringWidth(right); pad > 0 {
				right = strings.Repeat(" ", pad) + right
			}
		}
		lines[row] = left + "\x1b[m" + bl + "\x1b[m" + right
	}
	return strings.Join(lines, "\n")
}
