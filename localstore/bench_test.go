package localstore

import (
	"fmt"
	"testing"

	"github.com/imcore/im/protocol"
)

// loadProfile fills s with 1,000 sessions and 10,000 messages (10 per
// conversation) and returns a conversation to page through.
func loadProfile(b *testing.B, s *Store) string {
	b.Helper()
	var sessions []protocol.Session
	var msgs []protocol.Message
	for i := range 1000 {
		conv := fmt.Sprintf("d:alice:user%04d", i)
		for seq := int64(1); seq <= 10; seq++ {
			msgs = append(msgs, msg(conv, seq, "bob"))
		}
		last := msgs[len(msgs)-1]
		sessions = append(sessions, protocol.Session{
			Conv: conv, Kind: "direct", Title: conv[8:], Members: []string{"alice", conv[8:]},
			UnreadCount: int64(i % 3), WriteSeq: 10, ReadSeq: 10 - int64(i%3),
			ActiveTS: int64(1000 + i), WriteTS: int64(1000 + (i*7919)%1000), Priority: int64(i % 50 / 49),
			LastMsg: &last,
		})
	}
	if err := s.PutSessions(sessions); err != nil {
		b.Fatal(err)
	}
	if _, err := s.PutMessages(msgs); err != nil {
		b.Fatal(err)
	}
	return sessions[500].Conv
}

// BenchmarkSessions reads the whole main list of 1,000 sessions, sorted.
func BenchmarkSessions(b *testing.B) {
	s, _ := openTemp(b)
	loadProfile(b, s)
	b.ResetTimer()
	for b.Loop() {
		list, err := s.Sessions("")
		if err != nil || len(list) != 1000 {
			b.Fatalf("%d sessions, %v", len(list), err)
		}
	}
}

// BenchmarkMessagesPage reads the newest page of 50 messages of one
// conversation in a store of 10,000.
func BenchmarkMessagesPage(b *testing.B) {
	s, _ := openTemp(b)
	conv := loadProfile(b, s)
	b.ResetTimer()
	for b.Loop() {
		page, err := s.Messages(conv, 0, 50)
		if err != nil || len(page) != 10 {
			b.Fatalf("%d messages, %v", len(page), err)
		}
	}
}

// BenchmarkMessagesPageLongChat reads pages of 50 from one conversation of
// 10,000 messages: the newest, and one deep in the past.
func BenchmarkMessagesPageLongChat(b *testing.B) {
	s, _ := openTemp(b)
	var msgs []protocol.Message
	for seq := int64(1); seq <= 10000; seq++ {
		msgs = append(msgs, msg(conv, seq, "bob"))
	}
	if _, err := s.PutMessages(msgs); err != nil {
		b.Fatal(err)
	}
	for _, before := range []int64{0, 2000} {
		b.Run(fmt.Sprintf("before=%d", before), func(b *testing.B) {
			for b.Loop() {
				page, err := s.Messages(conv, before, 50)
				if err != nil || len(page) != 50 {
					b.Fatalf("%d messages, %v", len(page), err)
				}
			}
		})
	}
}

// BenchmarkPutMessage stores one pushed message at a time, as the client
// does for a live push.
func BenchmarkPutMessage(b *testing.B) {
	s, _ := openTemp(b)
	seq := int64(0)
	for b.Loop() {
		seq++
		if _, err := s.PutMessages([]protocol.Message{msg(conv, seq, "bob")}); err != nil {
			b.Fatal(err)
		}
	}
}
