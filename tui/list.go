package tui

import (
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/session"
)

// listPane is the session list with its folder stack: the main list,
// category folders and sub-business lists. It loads the lists it shows,
// moves its cursor, and acts on the selected session; opening a chat it
// asks of the root.
type listPane struct {
	asks
	com     *common
	levels  []listLevel
	lists   map[string][]protocol.Session // by sub_biz; "" is the main list
	loaded  map[string]bool
	totals  map[string]int64 // the backend's total unread, by sub_biz
	loading map[string]int   // sub_biz -> 1 loading, 2 loading and dirty
	rows    []listRow
	width   int
	height  int // rows area height in lines
	focused bool
	loadErr string

	filter    textinput.Model // the search by title
	filtering bool            // the search field is shown
}

// listLevel is one step into the list: the main list, a category folder,
// or a sub-business's nested list.
type listLevel struct {
	subBiz   string
	category string
	title    string
	cursor   int
	offset   int
}

func newListPane(com *common) listPane {
	return listPane{
		com:     com,
		levels:  []listLevel{{title: "Chats"}},
		lists:   map[string][]protocol.Session{},
		loaded:  map[string]bool{},
		totals:  map[string]int64{},
		loading: map[string]int{},
		width:   80,
		height:  22,
		filter:  newFilterInput(&com.st),
	}
}

// Init loads the main list.
func (l *listPane) Init() tea.Cmd {
	l.loading[""] = 1
	return l.load("")
}

// SetSize sets the pane's size: the header line and the rows below.
func (l *listPane) SetSize(w, h int) {
	l.width, l.height = w, max(rowHeight, h-1)
	l.clamp()
}

// SetFocused says whether the list has the keys (its cursor shows).
func (l *listPane) SetFocused(f bool) { l.focused = f }

// KeyMap returns the list's bindings.
func (l *listPane) KeyMap() listKeys { return l.com.keys.List }

// Update handles the list's messages: its loaded lists and, while it has
// the focus, keys.
func (l *listPane) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case sessionsMsg:
		return l.onSessions(msg)
	case tea.KeyPressMsg:
		return l.onKey(msg)
	case tea.PasteMsg:
		if l.filtering {
			return l.filterKey(msg)
		}
	}
	return nil
}

// load reads one list from the backend.
func (l *listPane) load(subBiz string) tea.Cmd {
	b := l.com.b
	return func() tea.Msg {
		s, total, err := b.Sessions(subBiz)
		return sessionsMsg{subBiz: subBiz, sessions: s, total: total, err: err}
	}
}

// reload reloads the main list and the nested list on screen, coalescing
// bursts: at most one load per list is in flight.
func (l *listPane) reload() tea.Cmd {
	subs := []string{""}
	if sb := l.level().subBiz; sb != "" {
		subs = append(subs, sb)
	}
	var cmds []tea.Cmd
	for _, sb := range subs {
		if l.loading[sb] > 0 {
			l.loading[sb] = 2
			continue
		}
		l.loading[sb] = 1
		cmds = append(cmds, l.load(sb))
	}
	return tea.Batch(cmds...)
}

// onSessions stores a loaded list; a reload requested meanwhile follows.
func (l *listPane) onSessions(msg sessionsMsg) tea.Cmd {
	var cmd tea.Cmd
	if l.loading[msg.subBiz] == 2 {
		l.loading[msg.subBiz] = 1
		cmd = l.load(msg.subBiz)
	} else {
		delete(l.loading, msg.subBiz)
	}
	if msg.err != nil {
		l.loadErr = "could not load chats: " + msg.err.Error()
		return cmd
	}
	l.loadErr = ""
	l.setSessions(msg.subBiz, msg.sessions, msg.total)
	return cmd
}

// setSessions stores a loaded list and rebuilds the rows, keeping the
// cursor on the same conversation or folder.
func (l *listPane) setSessions(subBiz string, sessions []protocol.Session, total int64) {
	l.lists[subBiz] = sessions
	l.loaded[subBiz] = true
	l.totals[subBiz] = total
	if l.level().subBiz == subBiz {
		l.rebuild()
	}
}

// onKey handles a key while the list has the focus.
func (l *listPane) onKey(msg tea.KeyPressMsg) tea.Cmd {
	if l.filtering {
		return l.filterKey(msg)
	}
	k := l.com.keys.List
	switch {
	case key.Matches(msg, k.Search):
		l.startFilter()
	case key.Matches(msg, k.Up):
		l.move(-1)
	case key.Matches(msg, k.Down):
		l.move(1)
	case key.Matches(msg, k.PageUp):
		l.move(-l.visibleRows())
	case key.Matches(msg, k.PageDown):
		l.move(l.visibleRows())
	case key.Matches(msg, k.Top):
		l.moveTo(0)
	case key.Matches(msg, k.Bottom):
		l.moveTo(len(l.rows) - 1)
	case key.Matches(msg, k.Open):
		return l.openRow()
	case key.Matches(msg, k.Back):
		l.pop()
	case key.Matches(msg, k.NewChat):
		l.ask(showDialogMsg{newChatDialog(l.com)})
	case key.Matches(msg, k.NewGroup):
		l.ask(showDialogMsg{newGroupDialog(l.com)})
	case key.Matches(msg, k.Settings):
		l.ask(showDialogMsg{newSettingsDialog(l.com)})
	case key.Matches(msg, k.Pin, k.Mute, k.MarkUnread, k.Delete, k.Category):
		return l.sessionAction(msg)
	case typedText(msg):
		// A letter that is no command is the start of a word: it goes to
		// the search by title (as a chat app's list does), with what
		// follows, rather than being read letter by letter as commands.
		l.startFilter()
		return l.filterKey(msg)
	}
	return nil
}

// typedText says msg is a printable character (not a space) with no
// modifier but shift: text, when no binding claims it.
func typedText(msg tea.KeyPressMsg) bool {
	return msg.Text != "" && strings.TrimSpace(msg.Text) != "" && msg.Mod&^tea.ModShift == 0
}

// openRow opens the selected chat, folder or business list.
func (l *listPane) openRow() tea.Cmd {
	r, ok := l.selected()
	if !ok {
		return nil
	}
	return l.openRowOf(r)
}

// openRowOf opens the chat, folder or business list of row r.
func (l *listPane) openRowOf(r listRow) tea.Cmd {
	switch r.kind {
	case rowFolder:
		l.push(listLevel{subBiz: l.level().subBiz, category: r.folder, title: r.folder})
		return nil
	case rowGateway:
		name, _ := protocol.IsGateway(r.sess.Conv)
		title := oneLine(r.sess.Title)
		if title == "" {
			title = name
		}
		l.push(listLevel{subBiz: name, title: title})
		if l.loading[name] > 0 {
			return nil
		}
		l.loading[name] = 1
		return l.load(name)
	}
	l.ask(openChatMsg{*r.sess})
	return nil
}

// clickRow selects the row at line y of the pane (0 is the header) and
// opens it.
func (l *listPane) clickRow(y int) tea.Cmd {
	i, ok := l.rowAt(y - 1)
	if !ok {
		return nil
	}
	l.moveTo(i)
	return l.openRow()
}

// listOrder names the lists loaded: the main list first, then the
// nested lists by name.
func (l *listPane) listOrder() []string {
	out := make([]string, 0, len(l.lists))
	for sb := range l.lists {
		if sb != "" {
			out = append(out, sb)
		}
	}
	slices.Sort(out)
	if _, ok := l.lists[""]; ok {
		out = append([]string{""}, out...)
	}
	return out
}

// level returns the current level.
func (l *listPane) level() *listLevel { return &l.levels[len(l.levels)-1] }

// selected returns the row under the cursor.
func (l *listPane) selected() (listRow, bool) {
	c := l.level().cursor
	if c < 0 || c >= len(l.rows) {
		return listRow{}, false
	}
	return l.rows[c], true
}

// visibleRows is how many rows fit (below the search field, when shown).
func (l *listPane) visibleRows() int { return max(1, l.rowsHeight()/rowHeight) }

// rowsHeight is the height of the rows area.
func (l *listPane) rowsHeight() int {
	if l.filtering {
		return max(rowHeight, l.height-1)
	}
	return l.height
}

// move moves the cursor by d rows.
func (l *listPane) move(d int) {
	l.level().cursor += d
	l.clamp()
}

// moveTo puts the cursor on row i.
func (l *listPane) moveTo(i int) {
	l.level().cursor = i
	l.clamp()
}

// clamp keeps the cursor in range and on screen.
func (l *listPane) clamp() {
	lv := l.level()
	lv.cursor = max(0, min(lv.cursor, len(l.rows)-1))
	vis := l.visibleRows()
	if lv.cursor < lv.offset {
		lv.offset = lv.cursor
	}
	if lv.cursor >= lv.offset+vis {
		lv.offset = lv.cursor - vis + 1
	}
	lv.offset = max(0, min(lv.offset, len(l.rows)-vis))
}

// push enters a folder or a nested list.
func (l *listPane) push(lv listLevel) {
	l.levels = append(l.levels, lv)
	l.rebuild()
	l.level().cursor = 0
	l.clamp()
}

// pop leaves the current folder; false at the top.
func (l *listPane) pop() bool {
	if len(l.levels) == 1 {
		return false
	}
	l.levels = l.levels[:len(l.levels)-1]
	l.rebuild()
	return true
}

// find returns the loaded session of conv in any list.
func (l *listPane) find(conv string) (protocol.Session, bool) {
	for _, list := range l.lists {
		for _, s := range list {
			if s.Conv == conv {
				return s, true
			}
		}
	}
	return protocol.Session{}, false
}

// breadcrumb names the path to the current level.
func (l *listPane) breadcrumb() string {
	parts := make([]string, len(l.levels))
	for i, lv := range l.levels {
		parts[i] = lv.title
	}
	return strings.Join(parts, " › ")
}

// rowAt returns the row index shown at line y of the rows area.
func (l *listPane) rowAt(y int) (int, bool) {
	if y < 0 {
		return 0, false
	}
	if l.filtering {
		y--
	}
	i := l.level().offset + y/rowHeight
	return i, y >= 0 && i < len(l.rows)
}

// headerTotal is the unread count the header shows: the current level's,
// a list's as the backend counts it, a folder's by the session rules.
func (l *listPane) headerTotal() int64 {
	lv := l.level()
	if lv.category == "" {
		return l.totals[lv.subBiz]
	}
	now := l.com.opts.Now().UnixMilli()
	var n int64
	for i := range l.lists[lv.subBiz] {
		if s := &l.lists[lv.subBiz][i]; s.Category == lv.category {
			n += session.ObjectUnread(s, now)
		}
	}
	return n
}
