package tui

import (
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// dangerDialog asks before something that cannot be taken back (deleting
// a chat, leaving a group, quitting). No letter answers it, so that a word
// typed while the list has the keys ("daily") confirms nothing: the
// action is a deliberate choice, ←/→ or tab onto its button and enter; the
// safe button is the one chosen when it opens, so enter alone, or esc,
// does nothing. again, when set, is the key that opened it: pressing it
// once more confirms too (q q quits).
type dangerDialog struct {
	asks
	com         *common
	title, text string
	action      string // the action's button: Delete, Leave, Quit
	again       string
	yes         func() tea.Cmd
	sel         int // 0 the safe button, 1 the action
	width       int
}

// newDanger builds the dialog for action (its button's label).
func newDanger(com *common, title, text, action string, yes func() tea.Cmd) *dangerDialog {
	return &dangerDialog{com: com, title: title, text: text, action: action, yes: yes, width: 40}
}

// newQuitDialog asks before the program ends; key (q) pressed again quits.
func newQuitDialog(com *common, again string) *dangerDialog {
	var d *dangerDialog
	d = newDanger(com, "Quit imtui", "Quit? Unsent messages stay in the outbox for the next start.", "Quit", func() tea.Cmd {
		d.ask(quitMsg{})
		return nil
	})
	d.again = again
	return d
}

func (d *dangerDialog) SetSize(w, _ int) { d.width = w }

func (d *dangerDialog) KeyMap() []key.Binding {
	k := d.com.keys.Dialog
	return []key.Binding{bind([]string{"left", "right", "tab"}, "←/→/tab", "choose"), k.Confirm, k.Cancel}
}

func (d *dangerDialog) Update(msg tea.Msg) (bool, tea.Cmd) {
	km, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return false, nil
	}
	switch s := km.String(); {
	case d.again != "" && s == d.again:
		return true, d.yes()
	case s == "left" || s == "right" || s == "tab" || s == "shift+tab":
		d.sel = 1 - d.sel
	case key.Matches(km, d.com.keys.Dialog.Confirm):
		if d.sel == 1 {
			return true, d.yes()
		}
		return true, nil
	case key.Matches(km, d.com.keys.Dialog.Cancel), s == "n":
		// n (no) may cancel: a word that holds it only keeps things as they are.
		return true, nil
	}
	return false, nil
}

func (d *dangerDialog) View() string {
	st := &d.com.st
	button := func(label string, on bool) string {
		if on {
			return st.accent.Render("▸[ " + label + " ]")
		}
		return st.dim.Render(" [ " + label + " ]")
	}
	hint := "←/→ then enter · n or esc cancels"
	if d.again != "" {
		hint = d.again + " again, or ←/→ then enter · n or esc cancels"
	}
	return st.dialogTitle.Render(d.title) + "\n\n" + strings.Join(d.com.cells.wrap(d.text, d.width), "\n") +
		"\n\n" + button("Cancel", d.sel == 0) + "  " + button(d.action, d.sel == 1) +
		"\n\n" + st.dim.Render(d.com.cells.truncate(hint, d.width))
}
