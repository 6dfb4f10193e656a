package tui

import (
	"sort"
	"strings"

	"github.com/imcore/im/protocol"
)

// rowKind says what a list row opens.
type rowKind int

const (
	rowSession rowKind = iota // a conversation
	rowFolder                 // a category: opens its sessions
	rowGateway                // a biz:<name> session: opens the nested list
)

// listRow is one entry of the visible list.
type listRow struct {
	kind   rowKind
	sess   *protocol.Session // rowSession and rowGateway
	folder string            // rowFolder: the category
	count  int               // rowFolder: sessions inside
	unread int64             // rowFolder: unread inside, muted excluded
	marked bool              // rowFolder: a session inside is marked unread
	latest int64             // rowFolder: newest write_ts inside
}

// key identifies a row across reloads, to keep the cursor on it.
func (r listRow) key() string {
	if r.kind == rowFolder {
		return "folder:" + r.folder
	}
	return r.sess.Conv
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

// listModel is the session list with its folder stack.
type listModel struct {
	levels  []listLevel
	lists   map[string][]protocol.Session // by sub_biz; "" is the main list
	loaded  map[string]bool
	total   int64 // total unread of the main list
	rows    []listRow
	width   int
	height  int // rows area height in lines
	loadErr string
}

func newListModel() listModel {
	return listModel{
		levels: []listLevel{{title: "Chats"}},
		lists:  map[string][]protocol.Session{},
		loaded: map[string]bool{},
	}
}

// level returns the current level.
func (l *listModel) level() *listLevel { return &l.levels[len(l.levels)-1] }

// rowHeight is the number of lines one row takes.
const rowHeight = 2

// setSessions stores a loaded list and rebuilds the rows, keeping the
// cursor on the same conversation or folder.
func (l *listModel) setSessions(subBiz string, sessions []protocol.Session, total int64) {
	l.lists[subBiz] = sessions
	l.loaded[subBiz] = true
	if subBiz == "" {
		l.total = total
	}
	if l.level().subBiz == subBiz {
		l.rebuild()
	}
}

// rebuild derives the rows of the current level from the loaded lists.
func (l *listModel) rebuild() {
	lv := l.level()
	var keep string
	if lv.cursor >= 0 && lv.cursor < len(l.rows) {
		keep = l.rows[lv.cursor].key()
	}
	sessions := l.lists[lv.subBiz]
	rows := make([]listRow, 0, len(sessions)+4)
	if lv.category == "" {
		folders := map[string]*listRow{}
		var names []string
		for i := range sessions {
			s := &sessions[i]
			if s.Category != "" {
				f := folders[s.Category]
				if f == nil {
					f = &listRow{kind: rowFolder, folder: s.Category}
					folders[s.Category] = f
					names = append(names, s.Category)
				}
				f.count++
				if !s.Muted {
					f.unread += s.UnreadCount
				}
				f.marked = f.marked || s.MarkedUnread
				f.latest = max(f.latest, s.WriteTS)
			}
		}
		sort.Strings(names)
		for _, n := range names {
			rows = append(rows, *folders[n])
		}
	}
	for i := range sessions {
		s := &sessions[i]
		if s.Category != lv.category {
			continue
		}
		kind := rowSession
		if _, ok := protocol.IsGateway(s.Conv); ok {
			kind = rowGateway
		}
		rows = append(rows, listRow{kind: kind, sess: s})
	}
	l.rows = rows
	if keep != "" {
		for i, r := range rows {
			if r.key() == keep {
				lv.cursor = i
				break
			}
		}
	}
	l.clamp()
}

// selected returns the row under the cursor.
func (l *listModel) selected() (listRow, bool) {
	c := l.level().cursor
	if c < 0 || c >= len(l.rows) {
		return listRow{}, false
	}
	return l.rows[c], true
}

// visibleRows is how many rows fit.
func (l *listModel) visibleRows() int { return max(1, l.height/rowHeight) }

// move moves the cursor by d rows.
func (l *listModel) move(d int) {
	l.level().cursor += d
	l.clamp()
}

// moveTo puts the cursor on row i.
func (l *listModel) moveTo(i int) {
	l.level().cursor = i
	l.clamp()
}

// clamp keeps the cursor in range and on screen.
func (l *listModel) clamp() {
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
func (l *listModel) push(lv listLevel) {
	l.levels = append(l.levels, lv)
	l.rebuild()
	l.level().cursor = 0
	l.clamp()
}

// pop leaves the current folder; false at the top.
func (l *listModel) pop() bool {
	if len(l.levels) == 1 {
		return false
	}
	l.levels = l.levels[:len(l.levels)-1]
	l.rebuild()
	return true
}

// find returns the loaded session of conv in any list.
func (l *listModel) find(conv string) (protocol.Session, bool) {
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
func (l *listModel) breadcrumb() string {
	parts := make([]string, len(l.levels))
	for i, lv := range l.levels {
		parts[i] = lv.title
	}
	return strings.Join(parts, " › ")
}

// rowAt returns the row index shown at line y of the rows area.
func (l *listModel) rowAt(y int) (int, bool) {
	if y < 0 {
		return 0, false
	}
	i := l.level().offset + y/rowHeight
	return i, i < len(l.rows)
}
