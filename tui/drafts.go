package tui

import (
	"time"

	tea "charm.land/bubbletea/v2"
)

// draftSaveDelay is how long typing pauses before the draft is saved (it
// is saved at once on leaving the chat, sending, quitting).
const draftSaveDelay = time.Second

// draftsMsg carries the drafts kept by the backend, loaded at start.
type draftsMsg struct {
	drafts map[string]string
	err    error
}

// draftSaveMsg saves the open chat's draft after a pause in typing,
// unless more was typed since (gen).
type draftSaveMsg struct {
	conv string
	gen  int
}

// loadDrafts reads the kept drafts.
func loadDrafts(b Backend) tea.Cmd {
	return func() tea.Msg {
		d, err := b.Drafts()
		return draftsMsg{drafts: d, err: err}
	}
}

// saveDraft keeps text as conv's draft in the backend.
func (p *chatPane) saveDraft(conv, text string) tea.Cmd {
	b := p.com.b
	return call(func() { b.SaveDraft(conv, text) })
}

// setDraft records text as conv's draft, for the list to show it.
func (p *chatPane) setDraft(conv, text string) {
	if text == "" {
		delete(p.com.live.drafts, conv)
		return
	}
	p.com.live.drafts[conv] = text
}

// noteDraft follows a change of the input: the list shows the draft at
// once, the backend keeps it after a pause in typing.
func (p *chatPane) noteDraft() tea.Cmd {
	conv := p.c.conv
	p.setDraft(conv, p.input.Value())
	p.draftGen++
	gen := p.draftGen
	return p.com.tick(draftSaveDelay, func(time.Time) tea.Msg { return draftSaveMsg{conv: conv, gen: gen} })
}

// keepDraft saves the open chat's draft at once (leaving the chat,
// quitting).
func (p *chatPane) keepDraft() tea.Cmd {
	if p.c == nil || p.readOnly() {
		return nil
	}
	p.draftGen++ // a pending timed save is superseded
	conv, text := p.c.conv, p.draftText()
	p.setDraft(conv, text)
	return p.saveDraft(conv, text)
}

// giveBack returns text that was not sent to conv's draft: in the input
// if the chat is open and empty, else before the chat's draft.
func (p *chatPane) giveBack(conv, text string) tea.Cmd {
	if p.conv() == conv && inputBody(p.input.Value()) == "" {
		p.input.SetValue(text)
		p.layout()
		return p.keepDraft()
	}
	if p.conv() == conv {
		p.input.SetValue(text + "\n" + p.input.Value())
		p.layout()
		return p.keepDraft()
	}
	if old := p.com.live.drafts[conv]; old != "" {
		text += "\n" + old
	}
	p.setDraft(conv, text)
	return p.saveDraft(conv, text)
}
