package tui

import (
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// statusDialog shows whole what the status bar may cut at its width: the
// connection's state and why it is offline, and the last error notice.
type statusDialog struct {
	asks
	com   *common
	bar   *statusBar
	width int
}

// newStatusDialog shows the status of bar.
func newStatusDialog(com *common, bar *statusBar) *statusDialog {
	return &statusDialog{com: com, bar: bar, width: 40}
}

func (d *statusDialog) SetSize(w, _ int) { d.width = w }

func (d *statusDialog) KeyMap() []key.Binding {
	k := d.com.keys.Dialog
	return []key.Binding{k.Confirm, k.Cancel}
}

func (d *statusDialog) Update(msg tea.Msg) (bool, tea.Cmd) {
	km, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return false, nil
	}
	k := d.com.keys.Dialog
	return key.Matches(km, k.Confirm, k.Cancel, d.com.keys.Global.Status) || km.String() == "q", nil
}

func (d *statusDialog) View() string {
	st, cw := &d.com.st, d.com.cells
	wrap := func(s string) string { return strings.Join(cw.wrap(s, d.width), "\n") }
	state, _ := d.bar.connText()
	var b strings.Builder
	b.WriteString(st.dialogTitle.Render("Status") + "\n\n" + wrap(state+" · "+d.com.b.Server()))
	if err := d.com.conn.Err; err != nil {
		b.WriteString("\n\n" + st.dim.Render("Why") + "\n" + wrap(err.Error()))
	}
	if d.bar.lastErr != "" {
		b.WriteString("\n\n" + st.dim.Render("Last error, "+d.bar.lastErrAt.In(d.com.opts.Location).Format("15:04:05")) + "\n" + wrap(d.bar.lastErr))
	}
	b.WriteString("\n\n" + st.dim.Render("enter or esc closes"))
	return b.String()
}
