package tui

import (
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/imcore/im/client"
)

// searchHits is the most hits a search shows.
const searchHits = 50

// searchResultsMsg answers a search of the messages of a chat.
type searchResultsMsg struct {
	id   int
	hits []client.Message
	err  error
}

// jumpToMsg asks the chat to show message msg, selected.
type jumpToMsg struct{ msg client.Message }

// searchDialog searches the messages of a chat stored on this device, or
// of every chat: the hits, newest first, show as the user types with the
// words found marked; enter shows the one chosen in its chat.
type searchDialog struct {
	asks
	com     *common
	conv    string                   // "" searches every chat
	title   string                   // the chat's
	chatOf  func(conv string) string // names a hit's chat, searching every chat
	input   textinput.Model
	hits    []client.Message
	sel     int
	top     int // the first hit shown
	pending int // the id of the search in flight, 0 for none
	err     string
	width   int
	height  int
}

func newSearchDialog(com *common, conv, title string) *searchDialog {
	d := &searchDialog{com: com, conv: conv, title: title, input: newFilterInput(&com.st), width: 40, height: 20}
	d.input.Prompt = "› "
	d.input.Focus()
	return d
}

// newGlobalSearchDialog searches the messages of every chat; chatOf
// names a hit's chat.
func newGlobalSearchDialog(com *common, chatOf func(conv string) string) *searchDialog {
	d := newSearchDialog(com, "", "")
	d.chatOf = chatOf
	return d
}

func (d *searchDialog) SetSize(w, h int) {
	d.width, d.height = w, h
	d.input.SetWidth(max(4, w-3))
}

func (d *searchDialog) KeyMap() []key.Binding {
	k := d.com.keys.Dialog
	return []key.Binding{k.Up, k.Down, k.Confirm, k.Cancel}
}

// rows is how many hits fit.
func (d *searchDialog) rows() int { return max(3, min(10, d.height-12)) }

func (d *searchDialog) Update(msg tea.Msg) (bool, tea.Cmd) {
	switch msg := msg.(type) {
	case searchResultsMsg:
		if msg.id != d.pending {
			return false, nil
		}
		d.pending, d.hits, d.sel, d.top, d.err = 0, msg.hits, 0, 0, ""
		if msg.err != nil {
			d.err = msg.err.Error()
		}
		return false, nil
	case tea.KeyPressMsg:
		switch msg.String() {
		case "esc":
			return true, nil
		case "up":
			d.sel = max(0, d.sel-1)
			d.top = min(d.top, d.sel)
			return false, nil
		case "down":
			d.sel = max(0, min(len(d.hits)-1, d.sel+1))
			d.top = max(d.top, d.sel-d.rows()+1)
			return false, nil
		case "enter":
			if len(d.hits) == 0 {
				return false, nil
			}
			d.ask(jumpToMsg{d.hits[d.sel]})
			return true, nil
		}
	}
	before := d.input.Value()
	var cmd tea.Cmd
	d.input, cmd = d.input.Update(msg)
	if q := d.input.Value(); q != before {
		return false, tea.Batch(cmd, d.search(q))
	}
	return false, cmd
}

// search asks the backend for the hits of query.
func (d *searchDialog) search(query string) tea.Cmd {
	d.pending = d.com.nextID()
	if strings.TrimSpace(query) == "" {
		d.hits, d.pending = nil, 0
		return nil
	}
	b, conv, id := d.com.b, d.conv, d.pending
	return func() tea.Msg {
		hits, err := b.SearchMessages(conv, query, searchHits)
		return searchResultsMsg{id: id, hits: hits, err: err}
	}
}

func (d *searchDialog) View() string {
	st, cw, w := &d.com.st, d.com.cells, d.width
	var b strings.Builder
	title, where := "Search in "+d.title, "this chat's messages"
	if d.conv == "" {
		title, where = "Search in every chat", "the messages of every chat"
	}
	b.WriteString(st.dialogTitle.Render(title) + "\n\n" + d.input.View() + "\n")
	q := strings.TrimSpace(d.input.Value())
	switch {
	case d.err != "":
		b.WriteString("\n" + st.errText.Render(cw.truncate(d.err, w)))
	case q == "":
		b.WriteString("\n" + st.dim.Render(cw.truncate("Words to find in "+where+" on this device.", w)))
	case len(d.hits) == 0 && d.pending == 0:
		b.WriteString("\n" + st.dim.Render(cw.truncate("No message holds “"+oneLine(q)+"”.", w)))
	}
	now, terms, hit := d.com.now(), strings.Fields(q), st.hitStyle()
	end := min(len(d.hits), d.top+d.rows())
	for i := d.top; i < end; i++ {
		m := &d.hits[i]
		where := ""
		if d.chatOf != nil {
			where = d.chatOf(m.Conv) + " · "
		}
		line := cw.truncate(listTime(msgTime(m, now).UnixMilli(), now)+" "+where+m.From+": "+oneLine(m.Body), w-2)
		if i == d.sel {
			b.WriteString("\n" + highlight("▸ "+line, terms, st.accent, hit))
		} else {
			b.WriteString("\n  " + highlight(line, terms, lipgloss.NewStyle(), hit))
		}
	}
	if n := len(d.hits); n > 0 {
		b.WriteString("\n\n" + st.dim.Render(itoa(int64(n))+" found · ↑/↓ and enter shows it · esc closes"))
	}
	return b.String()
}
