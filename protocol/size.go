package protocol

import (
	"strconv"
	"unicode/utf8"
)

// DefaultMaxPageBytes is the default byte budget of one page of an answer
// (history, sync, receipts): a page is cut when its items would make the
// frame larger, and has_more tells the client to ask again.
const DefaultMaxPageBytes = 512 << 10

// EncodedLen returns the length of m's JSON text as Encode writes it (inside
// a frame), without encoding it.
func (m *Message) EncodedLen() int {
	n := len(`{"conv":,"seq":,"msg_id":,"from":,"body":,"client_ts":,"server_ts":}`) +
		JSONStringLen(m.Conv) + intLen(m.Seq) + JSONStringLen(m.MsgID) + JSONStringLen(m.From) +
		JSONStringLen(m.Body) + intLen(m.ClientTS) + intLen(m.ServerTS)
	if m.Kind != "" {
		n += len(`,"kind":`) + JSONStringLen(m.Kind)
	}
	if m.ReplyTo != 0 {
		n += len(`,"reply_to":`) + intLen(m.ReplyTo)
	}
	if m.RefSeq != 0 {
		n += len(`,"ref":`) + intLen(m.RefSeq)
	}
	if m.EditedTS != 0 {
		n += len(`,"edited_ts":`) + intLen(m.EditedTS)
	}
	if m.Deleted {
		n += len(`,"deleted":true`)
	}
	if m.Reactions != nil {
		n += reactionsLen(*m.Reactions)
	}
	return n
}

// MaxEncodedLen returns a bound EncodedLen never exceeds, from the
// lengths of m's strings alone (JSON writes no byte of a string as more
// than six) without reading them: enough to tell that a page of messages
// fits a byte budget without measuring each.
func (m *Message) MaxEncodedLen() int {
	const maxInt = 20 // the longest int64
	n := len(`{"conv":,"seq":,"msg_id":,"from":,"body":,"client_ts":,"server_ts":,"kind":,"reply_to":,"ref":,"edited_ts":,"deleted":true}`) +
		6*maxInt + 5*2 + 6*(len(m.Conv)+len(m.MsgID)+len(m.From)+len(m.Body)+len(m.Kind))
	if m.Reactions != nil {
		n += len(`,"reactions":null`)
		for _, r := range *m.Reactions {
			n += len(`,{"body":,"users":null}`) + 2 + 6*len(r.Body)
			for _, u := range r.Users {
				n += 3 + 6*len(u)
			}
		}
	}
	return n
}

// reactionsLen is the length of `,"reactions":` and rs as JSON.
func reactionsLen(rs []Reaction) int {
	if rs == nil {
		return len(`,"reactions":null`)
	}
	n := len(`,"reactions":[]`)
	if len(rs) > 0 {
		n += len(rs) - 1
		for _, r := range rs {
			n += len(`{"body":,"users":}`) + JSONStringLen(r.Body)
			if r.Users == nil {
				n += len("null")
				continue
			}
			n += len("[]")
			for i, u := range r.Users {
				if i > 0 {
					n++
				}
				n += JSONStringLen(u)
			}
		}
	}
	return n
}

// EncodedLen returns the length of s's JSON text as Encode writes it.
func (s *Session) EncodedLen() int {
	n := len(`{"conv":,"kind":,"title":,"members":,"unread_count":,"read_seq":,"write_seq":,"active_ts":,"write_ts":,"muted":,"mute_until":,"priority":,"deleted":,"marked_unread":,"category":,"sub_biz":,"last_msg":,"ticks":{"delivered_seq":,"read_seq":},"request":}`) +
		JSONStringLen(s.Conv) + JSONStringLen(s.Kind) + JSONStringLen(s.Title) +
		intLen(s.UnreadCount) + intLen(s.ReadSeq) + intLen(s.WriteSeq) + intLen(s.ActiveTS) + intLen(s.WriteTS) +
		boolLen(s.Muted) + intLen(s.MuteUntil) + intLen(s.Priority) + boolLen(s.Deleted) + boolLen(s.MarkedUnread) +
		JSONStringLen(s.Category) + JSONStringLen(s.SubBiz) +
		intLen(s.Ticks.DeliveredSeq) + intLen(s.Ticks.ReadSeq) + boolLen(s.Request)
	if s.Members == nil {
		n += len("null")
	} else {
		n += len("[]")
		for i, u := range s.Members {
			if i > 0 {
				n++
			}
			n += JSONStringLen(u)
		}
	}
	if s.LastMsg == nil {
		n += len("null")
	} else {
		n += s.LastMsg.EncodedLen()
	}
	return n
}

// EncodedLen returns the length of r's JSON text as Encode writes it.
func (r *MemberReceipt) EncodedLen() int {
	return len(`{"user":,"delivered_seq":,"read_seq":}`) + JSONStringLen(r.User) + intLen(r.DeliveredSeq) + intLen(r.ReadSeq)
}

// JSONStringLen returns the length of s as a JSON string, quotes included,
// escaped as encoding/json escapes it: HTML-sensitive characters and the
// line separators as \uXXXX, invalid UTF-8 as \ufffd.
func JSONStringLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
				n += 2
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

func intLen(v int64) int {
	var buf [20]byte
	return len(strconv.AppendInt(buf[:0], v, 10))
}

func boolLen(b bool) int {
	if b {
		return 4
	}
	return 5
}
