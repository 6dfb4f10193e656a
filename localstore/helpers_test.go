package localstore

import (
	"path/filepath"
	"testing"

	"github.com/imcore/im/protocol"
)

// openTemp opens a fresh store in the test's temporary directory.
func openTemp(t testing.TB) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "profile.db")
	s, err := Open(path)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

// msg builds a stored message of conv.
func msg(conv string, seq int64, from string) protocol.Message {
	return protocol.Message{Conv: conv, Seq: seq, MsgID: "m" + itoa(seq), From: from, Body: "body " + itoa(seq), ClientTS: seq, ServerTS: 1000 + seq}
}

func itoa(n int64) string {
	const digits = "0123456789"
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{digits[n%10]}, b...)
	}
	return string(b)
}

// seqs returns the seqs of msgs (0 for outbox messages).
func seqs(msgs []Message) []int64 {
	out := make([]int64, len(msgs))
	for i, m := range msgs {
		out[i] = m.Seq
	}
	return out
}

func mustPut(t *testing.T, s *Store, msgs ...protocol.Message) int {
	t.Helper()
	n, err := s.PutMessages(msgs)
	if err != nil {
		t.Fatalf("put messages: %v", err)
	}
	return n
}
