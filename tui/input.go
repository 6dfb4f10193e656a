package tui

import (
	"strings"

	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
)

// maxBodyBytes is the protocol's limit on a message body.
const maxBodyBytes = 4096

// inputMaxLines is the tallest the input grows before it scrolls.
const inputMaxLines = 6

// newInput returns the message editor: a multi-line textarea that grows
// with its content, with the terminal's own cursor (no blink timers).
func newInput(k keyMap) textarea.Model {
	ta := textarea.New()
	ta.ShowLineNumbers = false
	ta.Prompt = ""
	ta.Placeholder = "Type a message"
	ta.CharLimit = maxBodyBytes
	ta.DynamicHeight = true
	ta.MinHeight = 1
	ta.MaxHeight = inputMaxLines
	ta.MaxContentHeight = 500
	ta.KeyMap.InsertNewline = k.Input.Newline
	// Page keys scroll the history, not the input.
	ta.KeyMap.PageUp.SetEnabled(false)
	ta.KeyMap.PageDown.SetEnabled(false)
	s := textarea.DefaultDarkStyles()
	plain := lipgloss.NewStyle()
	s.Focused.CursorLine = plain
	s.Focused.Text = plain.Foreground(colText)
	s.Focused.Placeholder = plain.Foreground(colDim)
	s.Blurred.CursorLine = plain.Foreground(colDim)
	s.Blurred.Text = plain.Foreground(colDim)
	s.Blurred.Placeholder = plain.Foreground(colDim)
	s.Cursor.Blink = false
	s.Cursor.Shape = tea.CursorBar
	s.Cursor.Color = colAccent
	ta.SetStyles(s)
	ta.SetVirtualCursor(false)
	return ta
}

// inputBody returns what Enter would send: the text without trailing
// blank lines and spaces, "" when there is nothing to send.
func inputBody(v string) string {
	v = strings.TrimRight(v, " \n\t")
	if strings.TrimSpace(v) == "" {
		return ""
	}
	return v
}
