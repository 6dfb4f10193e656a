package chat

import (
	"github.com/imcore/im/protocol"
)

// Answers that list items (history, sync, receipts) are cut to a byte
// budget, so that no single request makes the server build or queue
// megabytes: the page keeps the items that fit, at least one, and says
// has_more so the client asks again from where it stopped.

// cutHistory keeps the messages of a history page that fit in budget:
// the newest ones of a page read backwards (before_seq), the oldest of a
// page read forwards (after_seq). msgs is in ascending seq order. It
// reports whether it cut anything.
func cutHistory(msgs []protocol.Message, forwards bool, budget int) ([]protocol.Message, bool) {
	used := 0
	if forwards {
		for i := range msgs {
			if used += msgs[i].EncodedLen() + 1; used > budget && i > 0 {
				return msgs[:i], true
			}
		}
		return msgs, false
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if used += msgs[i].EncodedLen() + 1; used > budget && i < len(msgs)-1 {
			return msgs[i+1:], true
		}
	}
	return msgs, false
}

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
