package faultrun

import (
	"fmt"
	"slices"

	"github.com/imcore/im/protocol"
)

// Violation is one broken invariant.
type Violation struct {
	// Kind names the invariant (see Verify).
	Kind   string
	Detail string
}

func (v Violation) String() string { return v.Kind + ": " + v.Detail }

// Verify checks the world once the run is quiet and every client has
// converged, and returns every violation found (none: the run passed).
// Its checks, by Kind:
//
//   - history: each conversation's seqs run 1, 2, … without a gap, and
//     each (conv, msg_id) appears once (duplicate).
//   - lost: a message acknowledged (its client gave it a seq, or the server
//     wrote sent for it) is not in history; unsent: a message handed to an
//     client never reached history; unconfirmed: it did, but its sender's
//     client never showed it acknowledged.
//   - seq: a message is in history under another seq than the one it was
//     acknowledged with, or was acknowledged with two seqs (on the wire or
//     by the client); content: its sender or body differ; phantom: history
//     holds a message nobody sent.
//   - local: every device of every member holds each message of the
//     conversation exactly once, under its seq, and nothing else; no
//     message is left in its outbox, no read mark left unconfirmed.
//   - boundary: per user and conversation, read <= delivered <= newest
//     seq; delivered == newest (every device acknowledged everything); a
//     sender's read covers its own messages; receipts list the members.
//   - session: each user's session of each conversation: write_seq is
//     the newest seq and last_msg the newest message; read_seq is the
//     user's read boundary; unread_count counts the messages from others
//     above it; ticks are the minimum of the members' boundaries; members
//     as expected; not deleted. total: total_unread is the sum of
//     unread_count over sessions neither muted nor deleted.
//   - local-session: every device's stored session agrees with the
//     server's (write_seq, read_seq, unread_count, muted, priority), its
//     ticks are never ahead of the server's, and its total unread equals
//     the server's.
//   - client: an client's Run failed, or it reported a send refused.
//   - server: the server would not give a conversation's history or
//     receipts, or a user's sessions.
func Verify(w *World) []Violation {
	var v violations
	for _, u := range w.Unreadable {
		v.add("server", "could not read the %s", u)
	}
	index := v.checkHistory(w)
	v.checkMessages(w, index)
	v.checkDevices(w)
	v.checkBoundaries(w)
	v.checkSessions(w)
	v.checkLocalSessions(w)
	v.checkServices(w)
	return v.list
}

type violations struct{ list []Violation }

func (v *violations) add(kind, format string, args ...any) {
	v.list = append(v.list, Violation{Kind: kind, Detail: fmt.Sprintf(format, args...)})
}

// newestSeq returns the seq of conv's newest message.
func newestSeq(w *World, conv string) int64 {
	h := w.History[conv]
	if len(h) == 0 {
		return 0
	}
	return h[len(h)-1].Seq
}

// checkHistory checks each conversation's seqs and keys and indexes the
// messages by key.
func (v *violations) checkHistory(w *World) map[MsgKey]protocol.Message {
	index := make(map[MsgKey]protocol.Message)
	for _, conv := range sortedKeys(w.History) {
		for i, m := range w.History[conv] {
			if m.Conv != conv {
				v.add("history", "%s: history holds a message of %s (seq %d)", conv, m.Conv, m.Seq)
			}
			if want := int64(i + 1); m.Seq != want {
				v.add("history", "%s: message %d of history has seq %d, want %d (a gap or a disorder)", conv, i+1, m.Seq, want)
			}
			key := MsgKey{conv, m.MsgID}
			if old, dup := index[key]; dup {
				v.add("duplicate", "%s is in history twice: seq %d and seq %d", key, old.Seq, m.Seq)
				continue
			}
			index[key] = m
		}
	}
	return index
}

// checkMessages checks every promise of the ledger against history.
func (v *violations) checkMessages(w *World, index map[MsgKey]protocol.Message) {
	led := w.Ledger
	queued := make(map[MsgKey]Queued, len(led.Queued))
	for _, q := range led.Queued {
		queued[q.Key] = q
		m, inHistory := index[q.Key]
		seq, acked := led.Acked[q.Key]
		switch {
		case !inHistory && acked:
			v.add("lost", "%s sent by %s, acknowledged with seq %d, is not in history", q.Key, q.Device, seq)
		case !inHistory:
			v.add("unsent", "%s handed to %s's engine never reached history", q.Key, q.Device)
		case !acked:
			v.add("unconfirmed", "%s is in history (seq %d) but %s's engine never showed it acknowledged", q.Key, m.Seq, q.Device)
		case m.Seq != seq:
			v.add("seq", "%s acknowledged to %s with seq %d is in history with seq %d", q.Key, q.Device, seq, m.Seq)
		}
		if inHistory && (m.From != q.User || m.Body != q.Body || m.Kind != "") {
			v.add("content", "%s: history has from %q body %q kind %q, %s sent %q", q.Key, m.From, m.Body, m.Kind, q.User, q.Body)
		}
	}
	for _, key := range sortedMsgKeys(led.Wire) {
		seqs := led.Wire[key]
		if len(seqs) > 1 {
			v.add("seq", "%s: the server answered sent with seqs %v", key, seqs)
		}
		m, ok := index[key]
		switch {
		case !ok:
			v.add("lost", "%s: the server answered sent (seq %v) but it is not in history", key, seqs)
		case m.Seq != seqs[0]:
			v.add("seq", "%s: the server answered sent with seq %d, history has seq %d", key, seqs[0], m.Seq)
		}
	}
	if len(led.Acked) > 0 && led.WireFrames == 0 {
		v.add("lost", "the proxy saw no sent answer while %d messages were acknowledged: the wire tap is broken", len(led.Acked))
	}
	for _, conv := range sortedKeys(w.History) {
		for _, m := range w.History[conv] {
			if _, ok := queued[MsgKey{conv, m.MsgID}]; !ok && m.Kind != protocol.KindSystem {
				v.add("phantom", "%s/%s (seq %d, from %s) was sent by no device", conv, m.MsgID, m.Seq, m.From)
			}
		}
	}
	for _, c := range led.Conflicts {
		v.add("seq", "%s", c)
	}
}

// checkDevices checks what every device holds against history.
func (v *violations) checkDevices(w *World) {
	for _, d := range w.Devices {
		if d.Outbox > 0 {
			v.add("local", "%s: %d messages still in the outbox", d.Name, d.Outbox)
		}
		if len(d.PendingReads) > 0 {
			v.add("local", "%s: read marks never confirmed: %v", d.Name, d.PendingReads)
		}
		for _, conv := range sortedKeys(w.Members) {
			if !slices.Contains(w.Members[conv], d.User) {
				continue
			}
			msgs, ok := d.Messages[conv]
			if !ok {
				v.add("local", "%s: the store was not read for %s", d.Name, conv)
				continue
			}
			h := w.History[conv]
			held := make(map[int64]string)
			for _, m := range msgs {
				switch {
				case m.Seq == 0 && m.Failed:
					v.add("local", "%s: %s/%s shown as failed", d.Name, conv, m.MsgID)
				case m.Seq == 0:
					v.add("local", "%s: %s/%s shown as still sending", d.Name, conv, m.MsgID)
				default:
					if old, dup := held[m.Seq]; dup {
						v.add("local", "%s: %s seq %d held twice (%s and %s)", d.Name, conv, m.Seq, old, m.MsgID)
					}
					held[m.Seq] = m.MsgID
				}
			}
			for _, m := range h {
				got, ok := held[m.Seq]
				switch {
				case !ok:
					v.add("local", "%s: misses %s seq %d (%s)", d.Name, conv, m.Seq, m.MsgID)
				case got != m.MsgID:
					v.add("local", "%s: holds %s seq %d as %s, history has %s", d.Name, conv, m.Seq, got, m.MsgID)
				}
				delete(held, m.Seq)
			}
			for seq, id := range held {
				v.add("local", "%s: holds %s seq %d (%s), which history does not have", d.Name, conv, seq, id)
			}
		}
	}
}

// checkBoundaries checks each member's delivered and read boundaries.
func (v *violations) checkBoundaries(w *World) {
	for _, conv := range sortedKeys(w.Members) {
		newest := newestSeq(w, conv)
		own := make(map[string]int64) // user → its newest message here
		for _, m := range w.History[conv] {
			if m.Kind != protocol.KindSystem {
				own[m.From] = max(own[m.From], m.Seq)
			}
		}
		var users []string
		for _, r := range w.Receipts[conv] {
			users = append(users, r.User)
			switch {
			case r.ReadSeq < 0 || r.ReadSeq > r.DeliveredSeq || r.DeliveredSeq > newest:
				v.add("boundary", "%s: %s has read %d, delivered %d, newest seq %d", conv, r.User, r.ReadSeq, r.DeliveredSeq, newest)
			case r.DeliveredSeq != newest:
				v.add("boundary", "%s: %s has delivered %d of %d: its devices hold everything but never acknowledged it", conv, r.User, r.DeliveredSeq, newest)
			}
			if r.ReadSeq < own[r.User] {
				v.add("boundary", "%s: %s has read %d below its own message %d (sending implies reading)", conv, r.User, r.ReadSeq, own[r.User])
			}
		}
		slices.Sort(users)
		if !slices.Equal(users, w.Members[conv]) {
			v.add("boundary", "%s: receipts list %v, the members are %v", conv, users, w.Members[conv])
		}
	}
}

// checkSessions checks each user's server sessions.
func (v *violations) checkSessions(w *World) {
	for _, user := range sortedKeys(w.Sessions) {
		byConv := make(map[string]protocol.Session)
		var total int64
		for _, s := range w.Sessions[user] {
			if _, dup := byConv[s.Conv]; dup {
				v.add("session", "%s: two sessions of %s in one full sync", user, s.Conv)
			}
			byConv[s.Conv] = s
			if !s.Muted && !s.Deleted {
				total += s.UnreadCount
			}
		}
		if total != w.TotalUnread[user] {
			v.add("total", "%s: total_unread %d, the sessions neither muted nor deleted sum to %d", user, w.TotalUnread[user], total)
		}
		for _, conv := range sortedKeys(w.Members) {
			if !slices.Contains(w.Members[conv], user) {
				continue
			}
			v.checkSession(w, user, conv, byConv)
		}
	}
}

// checkSession checks user's session of conv.
func (v *violations) checkSession(w *World, user, conv string, byConv map[string]protocol.Session) {
	newest := newestSeq(w, conv)
	s, ok := byConv[conv]
	if !ok {
		if newest > 0 {
			v.add("session", "%s has no session of %s, which holds %d messages", user, conv, newest)
		}
		return
	}
	var minDelivered, minRead int64 = -1, -1
	var read int64 = -1
	for _, r := range w.Receipts[conv] {
		if minDelivered < 0 || r.DeliveredSeq < minDelivered {
			minDelivered = r.DeliveredSeq
		}
		if minRead < 0 || r.ReadSeq < minRead {
			minRead = r.ReadSeq
		}
		if r.User == user {
			read = r.ReadSeq
		}
	}
	var unread int64
	for _, m := range w.History[conv] {
		if m.Seq > s.ReadSeq && m.From != user {
			unread++
		}
	}
	var bad []string
	if s.WriteSeq != newest {
		bad = append(bad, fmt.Sprintf("write_seq %d, newest seq %d", s.WriteSeq, newest))
	}
	if newest > 0 && (s.LastMsg == nil || s.LastMsg.Seq != newest || s.LastMsg.MsgID != w.History[conv][len(w.History[conv])-1].MsgID) {
		bad = append(bad, fmt.Sprintf("last_msg %+v is not the newest message", s.LastMsg))
	}
	if s.ReadSeq != read {
		bad = append(bad, fmt.Sprintf("read_seq %d, the user's read boundary is %d", s.ReadSeq, read))
	}
	if s.ReadSeq < 0 || s.ReadSeq > s.WriteSeq {
		bad = append(bad, fmt.Sprintf("read_seq %d outside 0..write_seq %d", s.ReadSeq, s.WriteSeq))
	}
	if s.UnreadCount != unread {
		bad = append(bad, fmt.Sprintf("unread_count %d, %d messages from others above read_seq %d", s.UnreadCount, unread, s.ReadSeq))
	}
	if newest > 0 && (s.Ticks.DeliveredSeq != minDelivered || s.Ticks.ReadSeq != minRead) {
		bad = append(bad, fmt.Sprintf("ticks %+v, the members' minimum is delivered %d read %d", s.Ticks, minDelivered, minRead))
	}
	members := slices.Clone(s.Members)
	slices.Sort(members)
	if !slices.Equal(members, w.Members[conv]) {
		bad = append(bad, fmt.Sprintf("members %v, want %v", s.Members, w.Members[conv]))
	}
	if s.Deleted {
		bad = append(bad, "deleted, though nobody deleted it")
	}
	for _, b := range bad {
		v.add("session", "%s's session of %s: %s", user, conv, b)
	}
}

// checkLocalSessions checks every device's stored sessions against the
// server's.
func (v *violations) checkLocalSessions(w *World) {
	for _, d := range w.Devices {
		server := make(map[string]protocol.Session)
		for _, s := range w.Sessions[d.User] {
			server[s.Conv] = s
		}
		for _, conv := range sortedKeys(w.Members) {
			if !slices.Contains(w.Members[conv], d.User) {
				continue
			}
			s, onServer := server[conv]
			l, local := d.Sessions[conv]
			if !onServer {
				continue // checkSession reports a missing one
			}
			if !local {
				v.add("local-session", "%s: no stored session of %s", d.Name, conv)
				continue
			}
			if l.WriteSeq != s.WriteSeq || l.ReadSeq != s.ReadSeq || l.UnreadCount != s.UnreadCount || l.Muted != s.Muted || l.Priority != s.Priority {
				v.add("local-session", "%s: %s stored with write_seq %d read_seq %d unread %d muted %v priority %d active_ts %d (cursor %d); the server has %d %d %d %v %d active_ts %d",
					d.Name, conv, l.WriteSeq, l.ReadSeq, l.UnreadCount, l.Muted, l.Priority, l.ActiveTS, d.Cursor,
					s.WriteSeq, s.ReadSeq, s.UnreadCount, s.Muted, s.Priority, s.ActiveTS)
			}
			if t := d.Ticks[conv]; t.DeliveredSeq > s.Ticks.DeliveredSeq || t.ReadSeq > s.Ticks.ReadSeq {
				v.add("local-session", "%s: %s ticks %+v ahead of the server's %+v", d.Name, conv, t, s.Ticks)
			}
		}
		if d.TotalUnread != w.TotalUnread[d.User] {
			v.add("local-session", "%s: total unread %d, the server's is %d", d.Name, d.TotalUnread, w.TotalUnread[d.User])
		}
	}
}

// checkServices reports clients that stopped or refused a send.
func (v *violations) checkServices(w *World) {
	for _, d := range sortedKeys(w.Ledger.RunErrors) {
		v.add("client", "%s: Run returned %s", d, w.Ledger.RunErrors[d])
	}
	for _, e := range w.Ledger.Errors {
		if e.Op == "send" {
			v.add("client", "%s: a send refused %d times, e.g. %s", e.Device, e.N, e.Sample)
		}
	}
}

// sortedMsgKeys returns m's keys in order.
func sortedMsgKeys[V any](m map[MsgKey]V) []MsgKey {
	keys := make([]MsgKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b MsgKey) int {
		if a.Conv != b.Conv {
			if a.Conv < b.Conv {
				return -1
			}
			return 1
		}
		if a.MsgID < b.MsgID {
			return -1
		}
		if a.MsgID > b.MsgID {
			return 1
		}
		return 0
	})
	return keys
}
