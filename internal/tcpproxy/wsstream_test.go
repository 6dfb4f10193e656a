package tcpproxy

import (
	"encoding/binary"
	"slices"
	"strings"
	"testing"
)

// frameBytes encodes one WebSocket frame the way RFC 6455 section 5.2
// lays it out, masked with mask when it is not nil.
func frameBytes(fin bool, opcode byte, payload []byte, mask []byte) []byte {
	b0 := opcode
	if fin {
		b0 |= 0x80
	}
	out := []byte{b0}
	maskBit := byte(0)
	if mask != nil {
		maskBit = 0x80
	}
	switch n := len(payload); {
	case n < 126:
		out = append(out, maskBit|byte(n))
	case n < 1<<16:
		out = append(out, maskBit|126)
		out = binary.BigEndian.AppendUint16(out, uint16(n))
	default:
		out = append(out, maskBit|127)
		out = binary.BigEndian.AppendUint64(out, uint64(n))
	}
	if mask == nil {
		return append(out, payload...)
	}
	out = append(out, mask...)
	for i, c := range payload {
		out = append(out, c^mask[i%4])
	}
	return out
}

// streamCase is a byte stream with its frame boundaries and the text
// messages it carries.
type streamCase struct {
	data     []byte
	frameEnd map[int]bool // offsets right after the upgrade and after each frame
	upgrade  int          // the upgrade's length
	messages []string
}

func (c *streamCase) add(frame []byte) {
	c.data = append(c.data, frame...)
	c.frameEnd[len(c.data)] = true
}

func buildStream(masked bool) *streamCase {
	var mask []byte
	if masked {
		mask = []byte{0x12, 0x34, 0x56, 0x78}
	}
	c := &streamCase{frameEnd: map[int]bool{}}
	c.data = []byte("GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n\r\n")
	c.upgrade = len(c.data)
	c.frameEnd[len(c.data)] = true
	long := strings.Repeat("x", 300)
	huge := strings.Repeat("y", 70000)
	c.add(frameBytes(true, opText, []byte(`{"type":"sent"}`), mask))
	c.add(frameBytes(false, opText, []byte("ab"), mask))
	c.add(frameBytes(true, 0x9, []byte("ping"), mask)) // a ping between fragments
	c.add(frameBytes(false, opContinuation, []byte("cd"), mask))
	c.add(frameBytes(true, opContinuation, []byte("ef"), mask))
	c.add(frameBytes(true, opText, nil, mask)) // empty
	c.add(frameBytes(true, 0x2, []byte("binary"), mask))
	c.add(frameBytes(true, opText, []byte(long), mask))
	c.add(frameBytes(true, opText, []byte(huge), mask))
	c.messages = []string{`{"type":"sent"}`, "abcdef", "", long, huge}
	return c
}

// The stream knows after every byte whether it ends inside the upgrade
// or inside a frame, and reassembles every text message, however the
// bytes are split.
func TestWSStreamFollowsFramesAtEveryByte(t *testing.T) {
	for _, masked := range []bool{false, true} {
		c := buildStream(masked)
		var got []string
		s := &wsStream{onText: func(p []byte) { got = append(got, string(p)) }}
		for i := range c.data {
			s.feed(c.data[i : i+1])
			at := i + 1
			if wantHS := at < c.upgrade; s.inHandshake() != wantHS {
				t.Fatalf("masked %v: after %d bytes inHandshake %v, want %v", masked, at, s.inHandshake(), wantHS)
			}
			if want := at >= c.upgrade && !c.frameEnd[at]; s.midFrame() != want {
				t.Fatalf("masked %v: after %d bytes midFrame %v, want %v", masked, at, s.midFrame(), want)
			}
		}
		if !slices.Equal(got, c.messages) {
			t.Fatalf("masked %v: messages %d, want %d (%q…)", masked, len(got), len(c.messages), shorten(got))
		}
		if s.frames != int64(len(c.frameEnd)-1) {
			t.Fatalf("masked %v: %d frames, want %d", masked, s.frames, len(c.frameEnd)-1)
		}
	}
}

func TestWSStreamSplitAnywhere(t *testing.T) {
	c := buildStream(true)
	for _, size := range []int{2, 3, 7, 100, 4096, len(c.data)} {
		var got []string
		s := &wsStream{onText: func(p []byte) { got = append(got, string(p)) }}
		for chunk := range slices.Chunk(c.data, size) {
			s.feed(chunk)
		}
		if !slices.Equal(got, c.messages) || s.midFrame() || s.inHandshake() {
			t.Fatalf("chunks of %d: %d messages, midFrame %v", size, len(got), s.midFrame())
		}
	}
}

func TestWSStreamUpgradeBytes(t *testing.T) {
	c := buildStream(false)
	s := &wsStream{}
	if n := s.upgradeBytes(c.data[:10]); n != 10 {
		t.Fatalf("upgradeBytes of the first 10 bytes = %d, want 10", n)
	}
	s.feed(c.data[:10])
	if n := s.upgradeBytes(c.data[10:]); n != c.upgrade-10 {
		t.Fatalf("upgradeBytes after 10 = %d, want %d", n, c.upgrade-10)
	}
	s.feed(c.data[10:c.upgrade])
	if n := s.upgradeBytes(c.data[c.upgrade:]); n != 0 {
		t.Fatalf("upgradeBytes after the upgrade = %d, want 0", n)
	}
}

func shorten(msgs []string) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		if len(m) > 20 {
			m = m[:20] + "…"
		}
		out[i] = m
	}
	return out
}
