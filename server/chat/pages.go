package chat

import (
	"github.com/imcore/im/protocol"
)

// Answers that list items (history, sync, receipts) are cut to a byte
// budget, so that no single request makes the server build or queue
// megabytes: the page keeps the items that fit, at least one, and says
// has_more so the client asks again from where it stopped. History is cut
// by the store as it reads (store.HistoryQuery.MaxBytes); sync pages and
// receipts here.

// cutSessions keeps the sessions of a sync page, in ascending active_ts,
// that fit in budget, and reports whether it cut anything.
func cutSessions(sessions []protocol.Session, budget int) ([]protocol.Session, bool) {
	used := 0
	for i := range sessions {
		if used += sessions[i].EncodedLen() + 1; used > budget && i > 0 {
			return sessions[:i], true
		}
	}
	return sessions, false
}

// receiptsPage returns the receipts after the user after (rows are ordered
// by user) that fit in budget, and whether more follow.
func receiptsPage(rows []protocol.MemberReceipt, after string, budget int) ([]protocol.MemberReceipt, bool) {
	start := 0
	if after != "" {
		for start < len(rows) && rows[start].User <= after {
			start++
		}
	}
	rows = rows[start:]
	used := 0
	for i := range rows {
		if used += rows[i].EncodedLen() + 1; used > budget && i > 0 {
			return rows[:i], true
		}
	}
	return rows, false
}
