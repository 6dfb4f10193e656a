package tui

import (
	"sort"

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

// rowHeight is the number of lines one row takes.
const rowHeight = 2

// rebuild derives the rows of the current level from the loaded lists,
// keeping the cursor on the same conversation or folder.
func (l *listPane) rebuild() {
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
