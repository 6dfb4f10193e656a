package tui

import (
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/imcore/im/protocol"
)

// The rows of the settings screen before the blocked users.
const (
	rowName = iota
	rowLastSeen
	rowReceipts
	settingsRows // the first blocked user's row
)

// settingsDialog is the settings screen: the display name, who sees
// when the user was last online, read receipts, and the users blocked,
// each of which it unblocks (asking). The name and the two options are
// saved together, the keys changed only; a block is lifted at once.
type settingsDialog struct {
	asks
	com        *common
	orig       protocol.UserSettings // as the screen opened
	name       textinput.Model
	hideSeen   bool // last seen: nobody
	noReceipts bool // read receipts off
	blocked    []string
	row        int
	unblocking string // the blocked user the screen asks about, "" none
	err        string
	width      int
}

// newSettingsDialog opens the settings screen on the user's settings.
func newSettingsDialog(com *common) *settingsDialog {
	s := com.people.settings
	ti := textinput.New()
	ti.Prompt = "› "
	ti.Placeholder = "none: your id, " + com.me() + ", shows"
	com.st.styleField(&ti)
	ti.CharLimit = protocol.DefaultMaxName
	ti.SetValue(s.Name)
	ti.CursorEnd()
	ti.Focus()
	return &settingsDialog{
		com: com, orig: s, name: ti,
		hideSeen: s.HidesLastSeen(), noReceipts: !s.ReadReceipts,
		blocked: slices.Clone(s.Blocked), width: promptWidth,
	}
}

func (d *settingsDialog) SetSize(w, _ int) {
	d.width = w
	d.name.SetWidth(max(4, min(w, promptWidth)-3))
}

func (d *settingsDialog) KeyMap() []key.Binding {
	k := d.com.keys.Dialog
	return []key.Binding{k.Up, k.Down, bind([]string{"space"}, "space/←/→", "change"), k.Confirm, k.Cancel}
}

// onSettings follows the settings as the client now has them: the
// blocked users (an unblock done, or a block made elsewhere); what the
// user is editing stays.
func (d *settingsDialog) onSettings(s protocol.UserSettings) {
	d.blocked = slices.Clone(s.Blocked)
	d.row = min(d.row, d.rows()-1)
}

// rows is the number of rows: the name, the options, the blocked users.
func (d *settingsDialog) rows() int { return settingsRows + len(d.blocked) }

func (d *settingsDialog) Update(msg tea.Msg) (bool, tea.Cmd) {
	km, isKey := msg.(tea.KeyPressMsg)
	if !isKey {
		if d.row == rowName {
			var cmd tea.Cmd
			d.name, cmd = d.name.Update(msg) // a paste, the cursor's blink
			return false, cmd
		}
		return false, nil
	}
	if d.unblocking != "" {
		return d.confirmUnblock(km)
	}
	k, s := d.com.keys.Dialog, km.String()
	switch {
	case key.Matches(km, k.Cancel):
		return true, nil
	case s == "down" || s == "tab":
		d.move(1)
	case s == "up" || s == "shift+tab":
		d.move(-1)
	case d.row >= settingsRows && (key.Matches(km, k.Confirm) || s == "u" || s == "x" || s == "delete"):
		d.unblocking = d.blocked[d.row-settingsRows]
	case key.Matches(km, k.Confirm):
		return d.save()
	case d.row == rowLastSeen && (s == "space" || s == "left" || s == "right"):
		d.hideSeen = !d.hideSeen
	case d.row == rowReceipts && (s == "space" || s == "left" || s == "right"):
		d.noReceipts = !d.noReceipts
	case d.row == rowName:
		var cmd tea.Cmd
		d.name, cmd = d.name.Update(msg)
		d.err = ""
		return false, cmd
	}
	return false, nil
}

// move moves the cursor by n rows, round.
func (d *settingsDialog) move(n int) {
	d.row = (d.row + n + d.rows()) % d.rows()
	if d.row == rowName {
		d.name.Focus()
	} else {
		d.name.Blur()
	}
}

// confirmUnblock answers the question about the blocked user.
func (d *settingsDialog) confirmUnblock(km tea.KeyPressMsg) (bool, tea.Cmd) {
	user := d.unblocking
	switch s := km.String(); {
	case s == "y" || key.Matches(km, d.com.keys.Dialog.Confirm):
		d.unblocking = ""
		b, label := d.com.b, d.com.people.label(user)
		return false, tea.Batch(call(func() { b.Unblock(user) }), notice("unblocking "+label+"…"+offlineNote(d.com), false))
	case s == "n" || key.Matches(km, d.com.keys.Dialog.Cancel):
		d.unblocking = ""
	}
	return false, nil
}

// change is what the screen changes of the settings it opened on.
func (d *settingsDialog) change() protocol.SettingsChange {
	var c protocol.SettingsChange
	if name := strings.TrimSpace(d.name.Value()); name != d.orig.Name {
		c.Name = &name
	}
	if d.hideSeen != d.orig.HidesLastSeen() {
		v := protocol.LastSeenEveryone
		if d.hideSeen {
			v = protocol.LastSeenNobody
		}
		c.LastSeen = &v
	}
	if on := !d.noReceipts; on != d.orig.ReadReceipts {
		c.ReadReceipts = &on
	}
	return c
}

// save sends the keys changed and closes the screen.
func (d *settingsDialog) save() (bool, tea.Cmd) {
	c := d.change()
	if c.Empty() {
		return true, notice("settings unchanged", false)
	}
	if c.Name != nil && !protocol.ValidName(*c.Name, protocol.DefaultMaxName) {
		d.err = "a name is at most " + itoa(protocol.DefaultMaxName) + " characters, without control characters"
		return false, nil
	}
	b := d.com.b
	return true, tea.Batch(call(func() { b.ChangeSettings(c) }), notice("saving settings…"+offlineNote(d.com), false))
}

func (d *settingsDialog) View() string {
	st, cw, w := &d.com.st, d.com.cells, d.width
	var b strings.Builder
	b.WriteString(st.dialogTitle.Render("Settings") + st.dim.Render(" · "+d.com.me()))
	label := func(row int, text string) string {
		if row == d.row {
			return st.accent.Render("▸ " + text)
		}
		return "  " + text
	}
	b.WriteString("\n\n" + label(rowName, "Name") + st.dim.Render(" (shown to the people you write to)"))
	b.WriteString("\n  " + d.name.View())
	option := func(row int, name, value, note string) {
		line := label(row, cw.fit(name, 15)) + "‹ " + value + " ›"
		b.WriteString("\n" + line)
		if row == d.row && note != "" {
			for _, l := range cw.wrap(note, max(8, w-4)) {
				b.WriteString("\n    " + st.dim.Render(l))
			}
		}
	}
	b.WriteString("\n")
	seen, seenNote := protocol.LastSeenEveryone, "everyone you share a chat with sees when you were last online"
	if d.hideSeen {
		seen, seenNote = protocol.LastSeenNobody, "nobody sees when you were last online, and you see nobody's"
	}
	option(rowLastSeen, "Last seen", seen, seenNote)
	receipts, receiptsNote := "on", "others see when you read their messages"
	if d.noReceipts {
		receipts, receiptsNote = "off", "in direct chats nobody sees your reads, and you see nobody's: ticks stay grey"
	}
	option(rowReceipts, "Read receipts", receipts, receiptsNote)

	b.WriteString("\n\n" + st.dim.Render("Blocked"))
	if len(d.blocked) == 0 {
		b.WriteString("\n  " + st.dim.Render("nobody"))
	}
	for i, u := range d.blocked {
		row := settingsRows + i
		line := label(row, d.com.people.label(u))
		if row == d.row {
			line += st.dim.Render("  enter unblocks")
		}
		b.WriteString("\n" + cw.truncate(line, w))
	}
	switch {
	case d.unblocking != "":
		b.WriteString("\n\n" + st.accent.Render(cw.truncate("Unblock "+d.com.people.label(d.unblocking)+"? y / enter: yes    n / esc: no", w)))
	case d.err != "":
		b.WriteString("\n\n" + lipgloss.NewStyle().Foreground(d.com.st.pal.err).Render(cw.truncate(d.err, w)))
	default:
		b.WriteString("\n\n" + st.dim.Render(cw.truncate("↑/↓ choose · space ←/→ change · enter saves · esc cancels", w)))
	}
	return b.String()
}
