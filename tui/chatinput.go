package tui

import (
	"strings"
	"time"

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

// updateInput passes msg to the editor, relayouts when it grew or shrank
// and tells the others the user is typing.
func (p *chatPane) updateInput(msg tea.Msg) tea.Cmd {
	before, h := p.input.Value(), p.input.Height()
	var cmd tea.Cmd
	p.input, cmd = p.input.Update(msg)
	if p.input.Height() != h {
		p.layout()
	}
	after := p.input.Value()
	if after == before || after == "" || p.c == nil || p.readOnly() {
		return cmd
	}
	now := p.com.opts.Now()
	if now.Sub(p.c.lastTyping) < p.com.opts.TypingInterval {
		return cmd
	}
	p.c.lastTyping = now
	b, conv := p.com.b, p.c.conv
	return tea.Batch(cmd, call(func() { b.Typing(conv) }))
}

// send sends the input's text.
func (p *chatPane) send() tea.Cmd {
	body := inputBody(p.input.Value())
	if body == "" || p.c == nil || p.readOnly() {
		return nil
	}
	if n := len(body); n > maxBodyBytes {
		return notice("message too long: "+itoa(int64(n))+" of "+itoa(maxBodyBytes)+" bytes", true)
	}
	p.input.Reset()
	p.layout()
	p.c.gotoBottom()
	p.c.lastTyping = time.Time{}
	b, conv := p.com.b, p.c.conv
	return func() tea.Msg {
		msg, err := b.Send(conv, body)
		return sentMsg{conv: conv, body: body, msg: msg, err: err}
	}
}
