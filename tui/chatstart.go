package tui

import "github.com/imcore/im/client"

// historyStarts remembers, per conversation, the seq the user's history
// starts at as the server said (client.HistoryStart): a member who joined
// a group later may read nothing older, so the chat shows the start of
// the conversation there instead of asking again.
type historyStarts map[string]int64

// onHistoryStart applies the server's word that nothing older than
// ev.Seq may be read in ev.Conv: a wait for an older page ends, and the
// start of the conversation shows above ev.Seq.
func (p *chatPane) onHistoryStart(ev client.HistoryStart) {
	if p.starts == nil {
		p.starts = historyStarts{}
	}
	p.starts[ev.Conv] = ev.Seq
	c := p.c
	if c == nil || c.conv != ev.Conv {
		return
	}
	c.startSeq = ev.Seq
	c.awaitServer = 0
	c.rebuildAtTop(p.com.renderCtx())
}
