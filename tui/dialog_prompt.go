package tui

import (
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
)

// promptWidth is the widest a prompt's fields grow.
const promptWidth = 48

// promptDialog asks for one or more lines of text.
type promptDialog struct {
	asks
	com    *common
	title  string
	labels []string
	inputs []textinput.Model
	focus  int
	hint   string
	err    string
	submit func(values []string) (tea.Cmd, error)
	width  int
}

// newPrompt builds a prompt with one field per label; values prefill them.
func newPrompt(com *common, title, hint string, labels []string, values []string, submit func([]string) (tea.Cmd, error)) *promptDialog {
	d := &promptDialog{com: com, title: title, labels: labels, hint: hint, submit: submit, width: promptWidth}
	for i := range labels {
		ti := textinput.New()
		ti.Prompt = "› "
		com.st.styleField(&ti)
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

func (d *promptDialog) SetSize(w, _ int) {
	d.width = min(w, promptWidth)
	for i := range d.inputs {
		d.inputs[i].SetWidth(max(4, d.width-3))
	}
}

func (d *promptDialog) KeyMap() []key.Binding {
	k := d.com.keys.Dialog
	return []key.Binding{k.Confirm, k.NextField, k.Cancel}
}

func (d *promptDialog) Update(msg tea.Msg) (bool, tea.Cmd) {
	km, isKey := msg.(tea.KeyPressMsg)
	if !isKey {
		// A paste, the cursor's own messages.
		var cmd tea.Cmd
		d.inputs[d.focus], cmd = d.inputs[d.focus].Update(msg)
		return false, cmd
	}
	k := d.com.keys.Dialog
	switch {
	case key.Matches(km, k.Cancel):
		return true, nil
	case km.String() == "tab" || km.String() == "down":
		d.setFocus((d.focus + 1) % len(d.inputs))
		return false, nil
	case km.String() == "shift+tab" || km.String() == "up":
		d.setFocus((d.focus + len(d.inputs) - 1) % len(d.inputs))
		return false, nil
	case key.Matches(km, k.Confirm):
		if d.focus < len(d.inputs)-1 {
			d.setFocus(d.focus + 1)
			return false, nil
		}
		vals := make([]string, len(d.inputs))
		for i, in := range d.inputs {
			vals[i] = strings.TrimSpace(in.Value())
		}
		cmd, err := d.submit(vals)
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

func (d *promptDialog) View() string {
	st, w := &d.com.st, d.width
	var b strings.Builder
	b.WriteString(st.dialogTitle.Render(d.title))
	for i := range d.inputs {
		b.WriteString("\n\n" + st.dim.Render(d.labels[i]) + "\n" + d.inputs[i].View())
	}
	if d.err != "" {
		b.WriteString("\n\n" + lipgloss.NewStyle().Foreground(d.com.st.pal.err).Render(d.com.cells.truncate(d.err, w)))
	}
	if d.hint != "" {
		b.WriteString("\n\n" + st.dim.Render(strings.Join(d.com.cells.wrap(d.hint, w), "\n")))
	}
	return b.String()
}
