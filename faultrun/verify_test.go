package faultrun

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/imcore/im/localstore"
	"github.com/imcore/im/protocol"
)

// worldSpec describes a small run's outcome; build turns it into the
// consistent World every check accepts.
type worldSpec struct {
	members map[string][]string
	// history per conversation: "user:body" for a message, "!user" for a
	// system message by user.
	history map[string][]string
	// read per conversation and user (delivered is the newest seq).
	read   map[string]map[string]int64
	muted  map[string]string // user → a conversation it muted
	device map[string]int    // user → devices
}

func testSpec() worldSpec {
	return worldSpec{
		members: map[string][]string{
			"d:alice:bob": {"alice", "bob"},
			"g:team":      {"alice", "bob", "carol"},
		},
		history: map[string][]string{
			"d:alice:bob": {"alice:hi", "bob:hey", "alice:how are you"},
			"g:team":      {"!alice", "carol:hello", "bob:yo", "carol:news"},
		},
		read: map[string]map[string]int64{
			"d:alice:bob": {"alice": 3, "bob": 2},
			"g:team":      {"alice": 1, "bob": 3, "carol": 4},
		},
		muted:  map[string]string{"bob": "g:team"},
		device: map[string]int{"alice": 2, "bob": 1, "carol": 1},
	}
}

func (s worldSpec) build() *World {
	w := &World{
		Members: s.members, History: map[string][]protocol.Message{}, Receipts: map[string][]protocol.MemberReceipt{},
		Sessions: map[string][]protocol.Session{}, TotalUnread: map[string]int64{},
		Ledger: LedgerView{Acked: map[MsgKey]int64{}, Wire: map[MsgKey][]int64{}},
	}
	for _, conv := range sortedKeys(s.history) {
		for i, entry := range s.history[conv] {
			seq := int64(i + 1)
			m := protocol.Message{Conv: conv, Seq: seq, MsgID: fmt.Sprintf("m%d", seq), ServerTS: 1000 + seq}
			if entry[0] == '!' {
				m.From, m.Kind, m.Body, m.MsgID = entry[1:], protocol.KindSystem, "created", fmt.Sprintf("sys-%d", seq)
			} else {
				user, body, _ := strings.Cut(entry, ":")
				m.From, m.Body = user, body
				key := MsgKey{conv, m.MsgID}
				w.Ledger.Queued = append(w.Ledger.Queued, Queued{Key: key, User: user, Device: user + "-1", Body: body})
				w.Ledger.Acked[key] = seq
				w.Ledger.Wire[key] = []int64{seq}
				w.Ledger.WireFrames++
			}
			w.History[conv] = append(w.History[conv], m)
		}
	}
	for _, conv := range sortedKeys(s.members) {
		newest := int64(len(s.history[conv]))
		minRead := int64(-1)
		for _, u := range s.members[conv] {
			r := s.read[conv][u]
			w.Receipts[conv] = append(w.Receipts[conv], protocol.MemberReceipt{User: u, DeliveredSeq: newest, ReadSeq: r})
			if minRead < 0 || r < minRead {
				minRead = r
			}
		}
		for _, u := range s.members[conv] {
			sess := protocol.Session{Conv: conv, Members: s.members[conv], ReadSeq: s.read[conv][u], WriteSeq: newest,
				Muted: s.muted[u] == conv, Ticks: protocol.Ticks{DeliveredSeq: newest, ReadSeq: minRead}}
			last := w.History[conv][newest-1]
			sess.LastMsg = &last
			for _, m := range w.History[conv] {
				if m.Seq > sess.ReadSeq && m.From != u {
					sess.UnreadCount++
				}
			}
			w.Sessions[u] = append(w.Sessions[u], sess)
			if !sess.Muted {
				w.TotalUnread[u] += sess.UnreadCount
			}
		}
	}
	for _, u := range sortedKeys(s.device) {
		for k := 1; k <= s.device[u]; k++ {
			d := DeviceView{Name: fmt.Sprintf("%s-%d", u, k), User: u, Messages: map[string][]localstore.Message{},
				Sessions: map[string]protocol.Session{}, Ticks: map[string]protocol.Ticks{}, TotalUnread: w.TotalUnread[u]}
			for _, sess := range w.Sessions[u] {
				for _, m := range w.History[sess.Conv] {
					d.Messages[sess.Conv] = append(d.Messages[sess.Conv], localstore.Message{Message: m})
				}
				d.Sessions[sess.Conv] = sess
				d.Ticks[sess.Conv] = sess.Ticks
			}
			w.Devices = append(w.Devices, d)
		}
	}
	return w
}

// session returns user's server session of conv.
func session(w *World, user, conv string) *protocol.Session {
	for i := range w.Sessions[user] {
		if w.Sessions[user][i].Conv == conv {
			return &w.Sessions[user][i]
		}
	}
	panic("no session " + user + " " + conv)
}

func TestVerifyAcceptsAConsistentWorld(t *testing.T) {
	if v := Verify(testSpec().build()); len(v) != 0 {
		t.Fatalf("violations in a consistent world: %v", v)
	}
}

// Every check fails when its invariant is broken: each case breaks one
// and expects a violation of its kind.
func TestVerifyFindsEachBrokenInvariant(t *testing.T) {
	dm, team := "d:alice:bob", "g:team"
	cases := []struct {
		name    string
		kind    string
		breakIt func(w *World)
	}{
		{"an acknowledged message missing from history", "lost", func(w *World) {
			w.History[dm] = w.History[dm][:2]
		}},
		{"a message in history twice", "duplicate", func(w *World) {
			m := w.History[dm][1]
			m.Seq = 4
			w.History[dm] = append(w.History[dm], m)
		}},
		{"a gap in the seqs", "history", func(w *World) {
			w.History[team][3].Seq = 5
		}},
		{"seqs not from 1", "history", func(w *World) {
			w.History[team] = w.History[team][1:]
		}},
		{"acknowledged with another seq", "seq", func(w *World) {
			w.Ledger.Acked[MsgKey{dm, "m2"}] = 7
		}},
		{"two sent answers with different seqs", "seq", func(w *World) {
			w.Ledger.Wire[MsgKey{dm, "m2"}] = []int64{2, 3}
		}},
		{"a sent answer for a message not in history", "lost", func(w *World) {
			w.Ledger.Wire[MsgKey{dm, "gone"}] = []int64{4}
		}},
		{"a wire tap that saw nothing", "lost", func(w *World) {
			w.Ledger.WireFrames = 0
		}},
		{"a client that reported two seqs", "seq", func(w *World) {
			w.Ledger.Conflicts = append(w.Ledger.Conflicts, "alice-1: conflict")
		}},
		{"a queued message that never got anywhere", "unsent", func(w *World) {
			w.Ledger.Queued = append(w.Ledger.Queued, Queued{Key: MsgKey{dm, "never"}, User: "alice", Device: "alice-1", Body: "x"})
		}},
		{"a stored message its sender never saw acknowledged", "unconfirmed", func(w *World) {
			delete(w.Ledger.Acked, MsgKey{dm, "m1"})
		}},
		{"a message nobody sent", "phantom", func(w *World) {
			delete(w.Ledger.Acked, MsgKey{dm, "m3"})
			w.Ledger.Queued = slices.DeleteFunc(w.Ledger.Queued, func(q Queued) bool { return q.Key == MsgKey{dm, "m3"} })
		}},
		{"another body", "content", func(w *World) {
			w.History[dm][0].Body = "changed"
		}},
		{"a device missing a message", "local", func(w *World) {
			w.Devices[1].Messages[team] = w.Devices[1].Messages[team][:3]
		}},
		{"a device holding a message twice", "local", func(w *World) {
			w.Devices[0].Messages[dm] = append(w.Devices[0].Messages[dm], w.Devices[0].Messages[dm][0])
		}},
		{"a device holding a seq history lacks", "local", func(w *World) {
			m := w.Devices[0].Messages[dm][0]
			m.Seq, m.MsgID = 9, "m9"
			w.Devices[0].Messages[dm] = append(w.Devices[0].Messages[dm], m)
		}},
		{"a device holding another message under a seq", "local", func(w *World) {
			w.Devices[2].Messages[dm][1].MsgID = "other"
		}},
		{"a message left in the outbox", "local", func(w *World) {
			w.Devices[0].Outbox = 1
			w.Devices[0].Messages[dm] = append(w.Devices[0].Messages[dm], localstore.Message{Message: protocol.Message{Conv: dm, MsgID: "x"}, Outbox: true})
		}},
		{"a read mark never confirmed", "local", func(w *World) {
			w.Devices[0].PendingReads = map[string]int64{dm: 3}
		}},
		{"delivered behind the newest seq", "boundary", func(w *World) {
			w.Receipts[team][1].DeliveredSeq = 3
		}},
		{"read above delivered", "boundary", func(w *World) {
			w.Receipts[dm][1].ReadSeq = 3
			w.Receipts[dm][1].DeliveredSeq = 2
		}},
		{"a sender's read below its own message", "boundary", func(w *World) {
			w.Receipts[team][1].ReadSeq = 2 // bob sent seq 3
		}},
		{"a member missing from receipts", "boundary", func(w *World) {
			w.Receipts[team] = w.Receipts[team][:2]
		}},
		{"a wrong unread count", "session", func(w *World) {
			session(w, "alice", team).UnreadCount++
			w.TotalUnread["alice"]++
		}},
		{"a wrong write_seq", "session", func(w *World) {
			session(w, "carol", team).WriteSeq = 3
		}},
		{"a session read_seq that is not the read boundary", "session", func(w *World) {
			s := session(w, "alice", team)
			s.ReadSeq, s.UnreadCount = 2, 2
			w.TotalUnread["alice"]--
		}},
		{"wrong ticks", "session", func(w *World) {
			session(w, "alice", dm).Ticks.ReadSeq = 3
		}},
		{"a missing session", "session", func(w *World) {
			w.Sessions["carol"] = nil
		}},
		{"a deleted session", "session", func(w *World) {
			session(w, "bob", dm).Deleted = true
		}},
		{"a wrong total", "total", func(w *World) {
			w.TotalUnread["bob"]++
		}},
		{"a muted session counted in the total", "total", func(w *World) {
			w.TotalUnread["bob"] += session(w, "bob", team).UnreadCount
		}},
		{"a stored session behind the server's", "local-session", func(w *World) {
			s := w.Devices[1].Sessions[dm]
			s.ReadSeq = 2
			w.Devices[1].Sessions[dm] = s
		}},
		{"stored ticks ahead of the server's", "local-session", func(w *World) {
			w.Devices[3].Ticks[team] = protocol.Ticks{DeliveredSeq: 5, ReadSeq: 1}
		}},
		{"a stored total that differs", "local-session", func(w *World) {
			w.Devices[0].TotalUnread++
		}},
		{"a refused send", "client", func(w *World) {
			w.Ledger.Errors = append(w.Ledger.Errors, ErrorCount{Device: "bob-1", Op: "send", N: 1, Sample: "refused"})
		}},
		{"a server that would not answer", "server", func(w *World) {
			w.Unreadable = []string{"history of g:team: not_found"}
		}},
		{"a client that stopped", "client", func(w *World) {
			w.Ledger.RunErrors = map[string]string{"bob-1": "hello refused"}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := testSpec().build()
			c.breakIt(w)
			v := Verify(w)
			if !slices.ContainsFunc(v, func(v Violation) bool { return v.Kind == c.kind }) {
				t.Fatalf("no %q violation; got %v", c.kind, v)
			}
		})
	}
}
