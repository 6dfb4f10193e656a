package tui

import (
	"sort"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/session"
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
// keeping the cursor on the same conversation or folder. In a list (not
// inside a folder) each category is one folder row, placed among the chats
// as a chat with its newest message would be: below the pinned ones.
func (l *listPane) rebuild() {
	lv := l.level()
	var keep string
	if lv.cursor >= 0 && lv.cursor < len(l.rows) {
		keep = l.rows[lv.cursor].key()
	}
	sessions := l.lists[lv.subBiz]
	if l.filtering {
		l.rows = l.filtered(sessions)
		l.keepCursor(keep)
		return
	}
	var folders []listRow
	if lv.category == "" {
		folders = l.folders(sessions)
	}
	rows := make([]listRow, 0, len(sessions)+len(folders))
	for i := range sessions {
		s := &sessions[i]
		if s.Category != lv.category {
			continue
		}
		for len(folders) > 0 && s.Priority == 0 && folders[0].latest >= s.WriteTS {
			rows = append(rows, folders[0])
			folders = folders[1:]
		}
		kind := rowSession
		if _, ok := protocol.IsGateway(s.Conv); ok {
			kind = rowGateway
		}
		rows = append(rows, listRow{kind: kind, sess: s})
	}
	rows = append(rows, folders...)
	l.rows = rows
	l.keepCursor(keep)
}

// keepCursor puts the cursor back on the row of key, if it is still there.
func (l *listPane) keepCursor(key string) {
	if key != "" {
		for i, r := range l.rows {
			if r.key() == key {
				l.level().cursor = i
				break
			}
		}
	}
	l.clamp()
}

// folders returns a row for each category of sessions, newest first: what
// it holds, its unread count by the session rules (muted chats left out,
// unless their mute has expired) and its newest write_ts.
func (l *listPane) folders(sessions []protocol.Session) []listRow {
	now := l.com.opts.Now().UnixMilli()
	byName := map[string]*listRow{}
	var out []*listRow
	for i := range sessions {
		s := &sessions[i]
		if s.Category == "" {
			continue
		}
		f := byName[s.Category]
		if f == nil {
			f = &listRow{kind: rowFolder, folder: s.Category}
			byName[s.Category] = f
			out = append(out, f)
		}
		f.count++
		f.unread += session.ObjectUnread(s, now)
		f.marked = f.marked || s.MarkedUnread
		f.latest = max(f.latest, s.WriteTS)
	}
	rows := make([]listRow, len(out))
	for i, f := range out {
		rows[i] = *f
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].latest != rows[j].latest {
			return rows[i].latest > rows[j].latest
		}
		return rows[i].folder < rows[j].folder
	})
	return rows
}
