package tui

import (
	"slices"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/client"
	"github.com/imcore/im/protocol"
)

// The actions on one message of the open chat: reply to it, edit or
// delete one's own for everyone, react to it, and jump to the message a
// reply quotes. Replying and editing use the input: a bar above it says
// which message it is for, and esc gives the input back to plain messages
// (an edit puts back the draft it held before).

// composeKind is what enter does with the input.
type composeKind int

const (
	composeMessage composeKind = iota // send a message
	composeReply                      // send a reply to target
	composeEdit                       // edit target
)

// compose is the input's purpose.
type compose struct {
	kind   composeKind
	target client.Message
	stash  string // editing: what the input held before
}

// relatedMsg follows a reply, edit, deletion or reaction queued in the
// backend: the chat reloads to show it, or says why it could not.
type relatedMsg struct {
	conv string
	what string
	err  error
}

// messageActionKey handles the history's keys for the selected message's
// actions; ok is false for other keys.
func (p *chatPane) messageActionKey(msg tea.KeyPressMsg) (tea.Cmd, bool) {
	k, c := p.com.keys.History, p.c
	var act func(client.Message) tea.Cmd
	switch {
	case key.Matches(msg, k.Reply):
		act = p.startReply
	case key.Matches(msg, k.Edit):
		act = p.startEdit
	case key.Matches(msg, k.DeleteMsg):
		act = p.confirmDelete
	case key.Matches(msg, k.React):
		act = p.openReact
	case key.Matches(msg, k.Quoted):
		act = p.jumpToQuoted
	default:
		return nil, false
	}
	if c.sel < 0 || c.sel >= len(c.msgs) {
		return notice("no message selected", false), true
	}
	if p.readOnly() {
		return notice("you are no longer a member of this group", false), true
	}
	return act(c.msgs[c.sel]), true
}

// actionRefusal says why message m cannot be acted on (own: only one's
// own messages), "" when it can.
func (p *chatPane) actionRefusal(m client.Message, own bool) string {
	switch {
	case m.Kind == protocol.KindSystem:
		return "system messages cannot be changed"
	case m.Failed || m.Seq < 0:
		return "the server does not hold this message"
	case m.Deleted:
		return "the message was deleted"
	case own && m.From != p.com.me():
		return "only your own messages can be changed"
	}
	return ""
}

// startReply makes the input a reply to m.
func (p *chatPane) startReply(m client.Message) tea.Cmd {
	if m.Failed || m.Seq < 0 {
		return notice("the server does not hold this message", false)
	}
	p.endCompose()
	p.compose = compose{kind: composeReply, target: m}
	p.setMode(focusInput)
	p.layout()
	return nil
}

// startEdit puts the text of the user's message m in the input to edit.
func (p *chatPane) startEdit(m client.Message) tea.Cmd {
	if why := p.actionRefusal(m, true); why != "" {
		return notice(why, false)
	}
	p.endCompose()
	p.compose = compose{kind: composeEdit, target: m, stash: p.input.Value()}
	p.input.SetValue(m.Body)
	p.input.CursorEnd()
	p.setMode(focusInput)
	p.layout()
	return nil
}

// endCompose gives the input back to plain messages; an edit puts back
// what the input held before it.
func (p *chatPane) endCompose() {
	if p.compose.kind == composeEdit {
		p.input.SetValue(p.compose.stash)
	}
	p.compose = compose{}
	p.layout()
}

// draftText is the open chat's draft: what the input holds, or held
// before an edit took it.
func (p *chatPane) draftText() string {
	if p.compose.kind == composeEdit {
		return p.compose.stash
	}
	return p.input.Value()
}

// sendCompose sends body as the reply or the edit the input is for.
// Queueing is a local write, done here in Update to keep the outbox's
// order.
func (p *chatPane) sendCompose(body string) tea.Cmd {
	c, t := p.c, p.compose.target
	if len(body) > maxBodyBytes {
		return notice("too long: "+itoa(int64(len(body)))+" bytes, the limit is "+itoa(maxBodyBytes), true)
	}
	if p.compose.kind == composeEdit {
		if body == t.Body {
			p.endCompose()
			return nil
		}
		_, err := p.com.b.Edit(c.conv, t.MsgID, body)
		if err != nil {
			return notice("edit: "+err.Error(), true)
		}
		p.endCompose()
		return related(c.conv, "edit", nil)
	}
	msg, err := p.com.b.Reply(c.conv, t.MsgID, body)
	if err != nil {
		return notice("reply: "+err.Error(), true)
	}
	p.compose = compose{}
	p.input.Reset()
	forget := p.keepDraft()
	p.layout()
	c.gotoBottom()
	return tea.Batch(forget, func() tea.Msg { return sentMsg{conv: c.conv, msg: msg} })
}

// related returns the command that reports a queued relation.
func related(conv, what string, err error) tea.Cmd {
	return func() tea.Msg { return relatedMsg{conv: conv, what: what, err: err} }
}

// onRelated follows a queued relation: the chat shows it.
func (p *chatPane) onRelated(msg relatedMsg) tea.Cmd {
	if msg.err != nil {
		return notice(msg.what+": "+msg.err.Error(), true)
	}
	if p.c != nil && p.c.conv == msg.conv {
		return p.reload()
	}
	return nil
}

// confirmDelete asks before deleting the user's message m for everyone:
// Cancel is chosen when the dialog opens.
func (p *chatPane) confirmDelete(m client.Message) tea.Cmd {
	if why := p.actionRefusal(m, true); why != "" {
		return notice(why, false)
	}
	b, conv := p.com.b, p.c.conv
	text := "Delete “" + p.com.cells.truncate(oneLine(m.Body), 40) + "” for everyone? Every member's chat will show “" +
		deletedText + "” in its place."
	p.ask(showDialogMsg{newDanger(p.com, "Delete for everyone", text, "Delete", func() tea.Cmd {
		_, err := b.DeleteForEveryone(conv, m.MsgID)
		return related(conv, "delete", err)
	})})
	return nil
}

// openReact opens the reaction picker on m.
func (p *chatPane) openReact(m client.Message) tea.Cmd {
	if why := p.actionRefusal(m, false); why != "" {
		return notice(why, false)
	}
	p.ask(showDialogMsg{newReactDialog(p.com, p.c.conv, m)})
	return nil
}

// newestEditable is the index of the newest loaded message when it is
// the user's own and may be edited (↑ in an empty input edits it), -1
// otherwise: ↑ then scrolls as it always did.
func (p *chatPane) newestEditable() int {
	c := p.c
	if c == nil || len(c.msgs) == 0 || p.compose.kind != composeMessage || p.readOnly() {
		return -1
	}
	i := len(c.msgs) - 1
	if p.actionRefusal(c.msgs[i], true) != "" {
		return -1
	}
	return i
}

// jumpToQuoted selects the message reply m quotes, loading older history
// (from the device, then the server) until it is loaded.
func (p *chatPane) jumpToQuoted(m client.Message) tea.Cmd {
	c := p.c
	if m.ReplyTo <= 0 {
		return notice("not a reply", false)
	}
	p.setMode(focusHistory)
	if i, ok := c.bySeq[m.ReplyTo]; ok {
		c.sel = i
		c.showSel()
		return nil
	}
	if q, ok := c.quotes[m.ReplyTo]; ok {
		return p.jumpTo(q) // on the device: load down from it
	}
	c.jumpTo = m.ReplyTo
	if cmd := p.continueJump(); cmd != nil {
		return tea.Batch(cmd, notice("loading the quoted message…", false))
	}
	return nil
}

// continueJump goes on with a jump to a reply's target once a page is in:
// the target is selected when loaded, else the next older page is asked
// for. The jump ends, saying so, at the start of the history.
func (p *chatPane) continueJump() tea.Cmd {
	c := p.c
	if c == nil || c.jumpTo == 0 {
		return nil
	}
	if i, ok := c.bySeq[c.jumpTo]; ok {
		c.jumpTo = 0
		c.sel = i
		c.showSel()
		return nil
	}
	if c.loadingOlder || c.awaitServer != 0 || c.reloading {
		return nil // a page is on its way
	}
	if cmd := p.loadOlder(); cmd != nil {
		return cmd
	}
	c.jumpTo = 0
	return notice("the quoted message is no longer in the history", false)
}

// missingQuotes returns the targets of the replies among msgs that are
// not among them, as the device holds them.
func missingQuotes(b Backend, conv string, msgs []client.Message) []client.Message {
	var want []int64
	for _, m := range msgs {
		if m.ReplyTo > 0 && !slices.Contains(want, m.ReplyTo) {
			want = append(want, m.ReplyTo)
		}
	}
	if len(want) == 0 {
		return nil
	}
	want = slices.DeleteFunc(want, func(seq int64) bool {
		return slices.ContainsFunc(msgs, func(m client.Message) bool { return m.Seq == seq && !m.Outbox })
	})
	if len(want) == 0 {
		return nil
	}
	q, _ := b.MessagesAt(conv, want)
	return q
}

// composeBar is the line above the input while it is for a reply or an
// edit, "" otherwise.
func (p *chatPane) composeBar() string {
	t := p.compose.target
	switch p.compose.kind {
	case composeReply:
		what := oneLine(t.Body)
		if t.Deleted {
			what = deletedText
		}
		return quoteMark + "Replying to " + senderName(p.com.people, t.From, p.com.me()) + ": " + what
	case composeEdit:
		return "✎ Editing: " + oneLine(t.Body)
	}
	return ""
}
