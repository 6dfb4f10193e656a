package tui

import (
	"fmt"

	tea "charm.land/bubbletea/v2"
)

// newSplitDialog says that body is over the body limit, by how much, and
// offers to send it to conv as several messages; no keeps it in the input
// to edit.
func newSplitDialog(com *common, conv, body string) dialog {
	parts := splitBody(body, maxBodyBytes)
	text := fmt.Sprintf("This message is %d of %d bytes: too long for one message. Send it as %d messages? No keeps it here to shorten.",
		len(body), maxBodyBytes, len(parts))
	var d *confirmDialog
	d = newConfirm(com, "Message too long", text, func() tea.Cmd {
		d.ask(splitSendMsg{conv: conv, body: body, parts: parts})
		return nil
	})
	return d
}
