package protocol_test

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/imcore/im/protocol"
)

// randomText mixes what JSON escapes differently: plain ASCII, quotes,
// control characters, HTML characters, multi-byte runes, line separators
// and invalid UTF-8.
func randomText(rng *rand.Rand) string {
	pieces := []string{"a", "Z", " ", `"`, `\`, "\n", "\t", "\x01", "\x1f", "<", ">", "&", "é", "👨‍👩‍👧", "\u2028", "\u2029", "\xff", "\xe2\x82", "€"}
	var b strings.Builder
	for range rng.IntN(40) {
		b.WriteString(pieces[rng.IntN(len(pieces))])
	}
	return b.String()
}

func TestEncodedLenMatchesJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ints := []int64{0, 1, -1, 42, 1763800000000, -9223372036854775808, 9223372036854775807}
	pick := func() int64 { return ints[rng.IntN(len(ints))] }
	for i := range 2000 {
		m := protocol.Message{Conv: randomText(rng), Seq: pick(), MsgID: randomText(rng), From: randomText(rng),
			Body: randomText(rng), ClientTS: pick(), ServerTS: pick()}
		if i%3 == 0 {
			m.Kind = randomText(rng)
		}
		if got, want := m.EncodedLen(), len(mustJSON(t, m)); got != want {
			t.Fatalf("message %q: EncodedLen %d, JSON %d", mustJSON(t, m), got, want)
		}
		if bound := m.MaxEncodedLen(); bound < m.EncodedLen() {
			t.Fatalf("message %s: MaxEncodedLen %d, below EncodedLen %d", mustJSON(t, m), bound, m.EncodedLen())
		}
		s := protocol.Session{Conv: randomText(rng), Kind: randomText(rng), Title: randomText(rng),
			UnreadCount: pick(), ReadSeq: pick(), WriteSeq: pick(), ActiveTS: pick(), WriteTS: pick(),
			Muted: i%2 == 0, MuteUntil: pick(), Priority: pick(), Deleted: i%3 == 0, MarkedUnread: i%5 == 0,
			Category: randomText(rng), SubBiz: randomText(rng), Ticks: protocol.Ticks{DeliveredSeq: pick(), ReadSeq: pick()}}
		switch i % 3 {
		case 1:
			s.Members = []string{}
		case 2:
			s.Members = []string{randomText(rng), randomText(rng)}
			s.LastMsg = &m
		}
		if got, want := s.EncodedLen(), len(mustJSON(t, s)); got != want {
			t.Fatalf("session %q: EncodedLen %d, JSON %d", mustJSON(t, s), got, want)
		}
		r := protocol.MemberReceipt{User: randomText(rng), DeliveredSeq: pick(), ReadSeq: pick()}
		if got, want := r.EncodedLen(), len(mustJSON(t, r)); got != want {
			t.Fatalf("receipt %q: EncodedLen %d, JSON %d", mustJSON(t, r), got, want)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
