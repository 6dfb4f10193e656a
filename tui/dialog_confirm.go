package tui

import (
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// confirmDialog asks a yes/no question.
type confirmDialog struct {
	asks
	com         *common
	title, text string
	yes         func() tea.Cmd
	width       int
}

func newConfirm(com *common, title, text string, yes func() tea.Cmd) *confirmDialog {
	return &confirmDialog{com: com, title: title, text: text, yes: yes, width: 40}
}

func (d *confirmDialog) SetSize(w, _ int) { d.width = w }

func (d *confirmDialog) KeyMap() []key.Binding {
	k := d.com.keys.Dialog
	return []key.Binding{k.Confirm, k.Cancel}
}

func (d *confirmDialog) Update(msg tea.Msg) (bool, tea.Cmd) {
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return false, nil
	}
	switch {
	case k.String() == "y" || key.Matches(k, d.com.keys.Dialog.Confirm):
		return true, d.yes()
	case k.String() == "n" || key.Matches(k, d.com.keys.Dialog.Cancel):
		return true, nil
	}
	return false, nil
}

func (d *confirmDialog) View() string {
	st := &d.com.st
	return st.dialogTitle.Render(d.title) + "\n\n" + strings.Join(d.com.cells.wrap(d.text, d.width), "\n") +
		"\n\n" + st.dim.Render("y / enter: yes    n / esc: no")
}
