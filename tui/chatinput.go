package tui

import (
	"strings"
	"time"
	"unicode/utf8"

	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"
)

// maxBodyBytes is the protocol's limit on a message body.
const maxBodyBytes = 4096

// inputMaxLines is the tallest the input grows before it scrolls.
const inputMaxLines = 6

// inputMaxRows bounds the input's content in rows, far above any message
// the server takes: what is typed or pasted is never cut, a message over
// the limit is refused whole when it is sent (or split).
const inputMaxRows = 100000

// newInput returns the message editor: a multi-line textarea that grows
// with its content, with the terminal's own cursor (no blink timers).
func newInput(k keyMap, st *styles) textarea.Model {
	ta := textarea.New()
	ta.ShowLineNumbers = false
	ta.Prompt = ""
	ta.Placeholder = "Type a message"
	ta.CharLimit = 0 // it counts characters, the limit is in bytes: send checks
	ta.DynamicHeight = true
	ta.MinHeight = 1
	ta.MaxHeight = inputMaxLines
	ta.MaxContentHeight = inputMaxRows
	ta.KeyMap.InsertNewline = k.Input.Newline
	// Page keys scroll the history, not the input.
	ta.KeyMap.PageUp.SetEnabled(false)
	ta.KeyMap.PageDown.SetEnabled(false)
	st.styleInput(&ta)
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
	if after != before && p.c != nil && p.compose.kind != composeEdit {
		// An edit's text is no draft: the draft waits in the stash.
		cmd = tea.Batch(cmd, p.noteDraft())
	}
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

// send sends the input's text. A text over the body limit is not sent: a
// dialog says its size and offers to split it.
func (p *chatPane) send() tea.Cmd {
	body := inputBody(p.input.Value())
	if p.compose.kind == composeEdit && body == "" && p.c != nil {
		return notice("an edit cannot be empty: x in the history deletes a message", false)
	}
	if body == "" || p.c == nil || p.readOnly() {
		return nil
	}
	if p.compose.kind != composeMessage {
		return p.sendCompose(body)
	}
	if len(body) > maxBodyBytes {
		p.ask(showDialogMsg{newSplitDialog(p.com, p.c.conv, body)})
		return nil
	}
	return p.sendParts(p.c.conv, []string{body})
}

// sendParts empties the input and sends parts to conv, in order; a part
// the backend refuses, and those after it, come back to the input. The
// parts are queued here, in Update, not in a command: Bubble Tea runs
// commands concurrently, and messages typed in a burst must reach the
// outbox in the order they were typed. Queueing is a local write; the
// network is the client's business.
func (p *chatPane) sendParts(conv string, parts []string) tea.Cmd {
	p.input.Reset()
	forget := p.keepDraft()
	p.layout()
	p.c.gotoBottom()
	p.c.lastTyping = time.Time{}
	sent := sentMsg{conv: conv}
	for i, part := range parts {
		msg, err := p.com.b.Send(conv, part)
		if err != nil {
			sent = sentMsg{conv: conv, body: strings.Join(parts[i:], "\n"), err: err}
			break
		}
		sent.msg = msg
	}
	return tea.Batch(forget, func() tea.Msg { return sent })
}

// splitBody cuts body into parts of at most limit bytes, after a line
// break or a space when there is one in the second half of a part, else
// between two characters. The whitespace where a part ends is dropped.
func splitBody(body string, limit int) []string {
	var parts []string
	rest := body
	for len(rest) > limit {
		cut := limit
		for cut > 0 && !utf8.RuneStart(rest[cut]) {
			cut--
		}
		window := rest[:cut]
		if i := strings.LastIndexByte(window, '\n'); i >= limit/2 {
			cut = i + 1
		} else if i := strings.LastIndexByte(window, ' '); i >= limit/2 {
			cut = i + 1
		}
		if part := strings.TrimRight(rest[:cut], " \n\t"); part != "" {
			parts = append(parts, part)
		}
		rest = strings.TrimLeft(rest[cut:], " \n\t")
	}
	if rest != "" {
		parts = append(parts, rest)
	}
	return parts
}
