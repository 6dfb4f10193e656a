package protocol_test

import (
	"strings"
	"testing"

	"github.com/imcore/im/protocol"
)

func TestValidUser(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"", false},
		{"a", true},
		{"z", true},
		{"0", true},
		{"9", true},
		{"alice", true},
		{"bob.smith", true},
		{"bob_smith", true},
		{"bob-smith", true},
		{"a.-_0z", true},
		{"007", true},
		{"a_", true},
		{"a.", true},
		{"a-", true},
		{strings.Repeat("a", 31), true},
		{strings.Repeat("a", 32), true},
		{"9" + strings.Repeat("_", 31), true},
		{strings.Repeat("a", 33), false},
		{strings.Repeat("a", 100), false},
		// must start with a letter or digit
		{"_a", false},
		{".a", false},
		{"-a", false},
		{"_", false},
		{".", false},
		{"-", false},
		// forbidden characters
		{"Alice", false},
		{"alicE", false},
		{"A", false},
		{"al ice", false},
		{" alice", false},
		{"alice ", false},
		{"al:ice", false},
		{"alice@example", false},
		{"al/ice", false},
		{"al+ice", false},
		{"al\x00ice", false},
		{"al\nice", false},
		{"élise", false},
		{"al\u00e9", false},
		{"\xff", false},
		{"a\xff", false},
	}
	for _, tt := range tests {
		if got := protocol.ValidUser(tt.in); got != tt.want {
			t.Errorf("ValidUser(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
	// Every byte: allowed ones in any position after the first.
	for c := 0; c < 256; c++ {
		allowed := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
		if got := protocol.ValidUser("a" + string([]byte{byte(c)})); got != allowed {
			t.Errorf("ValidUser(a+byte %#x) = %v, want %v", c, got, allowed)
		}
		first := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if got := protocol.ValidUser(string([]byte{byte(c)}) + "a"); got != first {
			t.Errorf("ValidUser(byte %#x+a) = %v, want %v", c, got, first)
		}
	}
}

func TestValidDevice(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"", false},
		{"a", true},
		{"Z", true},
		{"0", true},
		{"_", true},
		{"-", true},
		{"laptop", true},
		{"Laptop-2_X", true},
		{"-leading", true},
		{strings.Repeat("D", 63), true},
		{strings.Repeat("D", 64), true},
		{strings.Repeat("D", 65), false},
		{strings.Repeat("D", 1000), false},
		{"lap.top", false},
		{"lap top", false},
		{"lap:top", false},
		{"lap/top", false},
		{"lap\ttop", false},
		{"lapt\u00f6p", false},
		{"\x00", false},
		{"\xff", false},
	}
	for _, tt := range tests {
		if got := protocol.ValidDevice(tt.in); got != tt.want {
			t.Errorf("ValidDevice(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
	for c := 0; c < 256; c++ {
		allowed := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
		for _, s := range []string{string([]byte{byte(c)}), "x" + string([]byte{byte(c)}) + "y"} {
			if got := protocol.ValidDevice(s); got != allowed {
				t.Errorf("ValidDevice(%q) = %v, want %v", s, got, allowed)
			}
		}
	}
}

func TestValidMsgID(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"", false},
		{"x", true},
		{"01JABCDEFGHJKMNPQRSTVWXYZ0", true},
		{"6f1c1a8e-2f43-4c1a-9d9b-3b7f3f0e9a51", true},
		{"01J…", true},
		{"with space", true},
		{"sym!@#$%^&*()[]{}:;'\",./<>?|\\", true},
		{strings.Repeat("é", 32), true},  // 64 bytes
		{strings.Repeat("é", 64), true},  // 64 characters, 128 bytes
		{strings.Repeat("😀", 64), true},  // 64 characters, 256 bytes
		{strings.Repeat("é", 65), false}, // 65 characters
		{strings.Repeat("m", 63), true},
		{strings.Repeat("m", 64), true},
		{strings.Repeat("m", 65), false},
		{strings.Repeat("m", 500), false},
		{"a\x00b", false},
		{"a\nb", false},
		{"a\tb", false},
		{"\x1f", false},
		{"a\x7f", false},
		{"\xff", false},
		{"ab\xc3", false},
	}
	for _, tt := range tests {
		if got := protocol.ValidMsgID(tt.in); got != tt.want {
			t.Errorf("ValidMsgID(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func wantCode(t *testing.T, what string, err *protocol.Error, want protocol.Code) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: unexpected error %v", what, err)
	case want != "" && err == nil:
		t.Errorf("%s: no error, want %s", what, want)
	case want != "" && err.Code != want:
		t.Errorf("%s: code %s, want %s (%v)", what, err.Code, want, err)
	case err != nil && err.Message == "":
		t.Errorf("%s: error %s has no message", what, err.Code)
	}
}

func TestCheckBody(t *testing.T) {
	tests := []struct {
		name string
		body string
		max  int
		want protocol.Code
	}{
		{"empty", "", protocol.DefaultMaxBody, protocol.CodeInvalid},
		{"one byte", "x", protocol.DefaultMaxBody, ""},
		{"unicode", "héllo 世界 😀", protocol.DefaultMaxBody, ""},
		{"newlines", "a\nb\r\n", protocol.DefaultMaxBody, ""},
		{"invalid utf8", "bad \xff byte", protocol.DefaultMaxBody, protocol.CodeInvalid},
		{"cut rune", "\xe4\xb8", protocol.DefaultMaxBody, protocol.CodeInvalid},
		{"surrogate", "\xed\xa0\x80", protocol.DefaultMaxBody, protocol.CodeInvalid},
		{"4095 bytes", strings.Repeat("a", 4095), protocol.DefaultMaxBody, ""},
		{"4096 bytes", strings.Repeat("a", 4096), protocol.DefaultMaxBody, ""},
		{"4096 bytes multibyte", strings.Repeat("é", 2048), protocol.DefaultMaxBody, ""},
		{"4097 bytes", strings.Repeat("a", 4097), protocol.DefaultMaxBody, protocol.CodeTooLarge},
		{"4097 bytes multibyte", "a" + strings.Repeat("é", 2048), protocol.DefaultMaxBody, protocol.CodeTooLarge},
		{"2049 runes too many bytes", strings.Repeat("😀", 1025), protocol.DefaultMaxBody, protocol.CodeTooLarge},
		{"huge", strings.Repeat("a", 100000), protocol.DefaultMaxBody, protocol.CodeTooLarge},
		{"custom limit ok", "0123456789", 10, ""},
		{"custom limit over", "0123456789a", 10, protocol.CodeTooLarge},
		{"custom limit empty", "", 10, protocol.CodeInvalid},
	}
	for _, tt := range tests {
		wantCode(t, "CheckBody "+tt.name, protocol.CheckBody(tt.body, tt.max), tt.want)
	}
	if protocol.DefaultLimits.MaxBody != 4096 || protocol.DefaultMaxBody != 4096 {
		t.Errorf("default body limit %d/%d, want 4096", protocol.DefaultLimits.MaxBody, protocol.DefaultMaxBody)
	}
}

func TestHelloValidate(t *testing.T) {
	tests := []struct {
		name string
		h    protocol.Hello
		want protocol.Code
	}{
		{"dev", protocol.Hello{Protocol: 1, User: "alice", Device: "laptop"}, ""},
		{"token only", protocol.Hello{Protocol: 1, Device: "laptop", Token: "t"}, ""},
		{"with id", protocol.Hello{Ref: protocol.Ref{ID: "1"}, Protocol: 1, User: "alice", Device: "Phone_1-x", Token: "t"}, ""},
		{"long device", protocol.Hello{Protocol: 1, Device: strings.Repeat("d", 64)}, ""},
		{"no protocol", protocol.Hello{User: "alice", Device: "laptop"}, protocol.CodeInvalid},
		{"protocol 2", protocol.Hello{Protocol: 2, User: "alice", Device: "laptop"}, protocol.CodeInvalid},
		{"protocol -1", protocol.Hello{Protocol: -1, User: "alice", Device: "laptop"}, protocol.CodeInvalid},
		{"no device", protocol.Hello{Protocol: 1, User: "alice"}, protocol.CodeInvalid},
		{"device too long", protocol.Hello{Protocol: 1, User: "alice", Device: strings.Repeat("d", 65)}, protocol.CodeInvalid},
		{"device bad char", protocol.Hello{Protocol: 1, User: "alice", Device: "my laptop"}, protocol.CodeInvalid},
		{"device dot", protocol.Hello{Protocol: 1, User: "alice", Device: "lap.top"}, protocol.CodeInvalid},
	}
	for _, tt := range tests {
		wantCode(t, "Hello.Validate "+tt.name, tt.h.Validate(), tt.want)
	}
	if protocol.Version != 1 {
		t.Errorf("Version = %d, want 1", protocol.Version)
	}
}

func TestSendValidate(t *testing.T) {
	ok := protocol.Send{Conv: "d:alice:bob", MsgID: "01J", Body: "hey"}
	tests := []struct {
		name string
		edit func(*protocol.Send)
		lim  protocol.Limits
		want protocol.Code
	}{
		{"direct", func(*protocol.Send) {}, protocol.DefaultLimits, ""},
		{"group", func(s *protocol.Send) { s.Conv = "g:team-1" }, protocol.DefaultLimits, ""},
		{"max body", func(s *protocol.Send) { s.Body = strings.Repeat("b", 4096) }, protocol.DefaultLimits, ""},
		{"max msg_id", func(s *protocol.Send) { s.MsgID = strings.Repeat("m", 64) }, protocol.DefaultLimits, ""},
		{"biz conv", func(s *protocol.Send) { s.Conv = "biz:shop" }, protocol.DefaultLimits, protocol.CodeInvalid},
		{"reversed direct", func(s *protocol.Send) { s.Conv = "d:bob:alice" }, protocol.DefaultLimits, protocol.CodeInvalid},
		{"self direct", func(s *protocol.Send) { s.Conv = "d:alice:alice" }, protocol.DefaultLimits, protocol.CodeInvalid},
		{"empty conv", func(s *protocol.Send) { s.Conv = "" }, protocol.DefaultLimits, protocol.CodeInvalid},
		{"garbage conv", func(s *protocol.Send) { s.Conv = "alice" }, protocol.DefaultLimits, protocol.CodeInvalid},
		{"empty msg_id", func(s *protocol.Send) { s.MsgID = "" }, protocol.DefaultLimits, protocol.CodeInvalid},
		{"long msg_id", func(s *protocol.Send) { s.MsgID = strings.Repeat("m", 65) }, protocol.DefaultLimits, protocol.CodeInvalid},
		{"control msg_id", func(s *protocol.Send) { s.MsgID = "a\nb" }, protocol.DefaultLimits, protocol.CodeInvalid},
		{"empty body", func(s *protocol.Send) { s.Body = "" }, protocol.DefaultLimits, protocol.CodeInvalid},
		{"bad utf8 body", func(s *protocol.Send) { s.Body = "\xc3(" }, protocol.DefaultLimits, protocol.CodeInvalid},
		{"large body", func(s *protocol.Send) { s.Body = strings.Repeat("b", 4097) }, protocol.DefaultLimits, protocol.CodeTooLarge},
		{"custom limit", func(s *protocol.Send) { s.Body = "four" }, protocol.Limits{MaxBody: 3}, protocol.CodeTooLarge},
		{"custom limit ok", func(s *protocol.Send) { s.Body = "thr" }, protocol.Limits{MaxBody: 3}, ""},
		{"raised limit", func(s *protocol.Send) { s.Body = strings.Repeat("b", 5000) }, protocol.Limits{MaxBody: 8192}, ""},
	}
	for _, tt := range tests {
		s := ok
		tt.edit(&s)
		wantCode(t, "Send.Validate "+tt.name, s.Validate(tt.lim), tt.want)
	}
}

func TestHistoryValidate(t *testing.T) {
	tests := []struct {
		name string
		h    protocol.History
		want protocol.Code
	}{
		{"newest page", protocol.History{Conv: "d:alice:bob"}, ""},
		{"group", protocol.History{Conv: "g:x", Limit: 50}, ""},
		{"before", protocol.History{Conv: "d:alice:bob", BeforeSeq: 480, Limit: 20}, ""},
		{"after", protocol.History{Conv: "d:alice:bob", AfterSeq: i64(41), Limit: 200}, ""},
		{"after zero", protocol.History{Conv: "d:alice:bob", AfterSeq: i64(0)}, ""},
		{"before zero with after", protocol.History{Conv: "d:alice:bob", BeforeSeq: 0, AfterSeq: i64(5)}, ""},
		{"limit above max", protocol.History{Conv: "g:x", Limit: 100000}, ""},
		{"both", protocol.History{Conv: "d:alice:bob", BeforeSeq: 480, AfterSeq: i64(41)}, protocol.CodeInvalid},
		{"both after zero", protocol.History{Conv: "d:alice:bob", BeforeSeq: 1, AfterSeq: i64(0)}, protocol.CodeInvalid},
		{"negative before", protocol.History{Conv: "d:alice:bob", BeforeSeq: -1}, protocol.CodeInvalid},
		{"negative after", protocol.History{Conv: "d:alice:bob", AfterSeq: i64(-1)}, protocol.CodeInvalid},
		{"negative limit", protocol.History{Conv: "d:alice:bob", Limit: -1}, protocol.CodeInvalid},
		{"bad conv", protocol.History{Conv: "d:bob:alice"}, protocol.CodeInvalid},
		{"empty conv", protocol.History{}, protocol.CodeInvalid},
		{"biz conv", protocol.History{Conv: "biz:shop"}, protocol.CodeInvalid},
	}
	for _, tt := range tests {
		wantCode(t, "History.Validate "+tt.name, tt.h.Validate(), tt.want)
	}
}

func TestHistoryPageLimit(t *testing.T) {
	tests := []struct{ limit, want int }{
		{0, 20},
		{1, 1},
		{20, 20},
		{199, 199},
		{200, 200},
		{201, 200},
		{1000, 200},
		{1 << 40, 200},
	}
	for _, tt := range tests {
		h := protocol.History{Conv: "g:x", Limit: tt.limit}
		if got := h.PageLimit(); got != tt.want {
			t.Errorf("PageLimit with limit %d = %d, want %d", tt.limit, got, tt.want)
		}
	}
	if protocol.DefaultHistoryLimit != 20 || protocol.MaxHistoryLimit != 200 {
		t.Errorf("history limits %d/%d, want 20/200", protocol.DefaultHistoryLimit, protocol.MaxHistoryLimit)
	}
}

func marksN(n int) []protocol.Mark {
	m := make([]protocol.Mark, n)
	for i := range m {
		m[i] = protocol.Mark{Conv: "g:x", Seq: int64(i)}
	}
	return m
}

func TestValidateMarks(t *testing.T) {
	tests := []struct {
		name  string
		marks []protocol.Mark
		want  protocol.Code
	}{
		{"one", []protocol.Mark{{Conv: "d:alice:bob", Seq: 44}}, ""},
		{"several", []protocol.Mark{{Conv: "d:alice:bob", Seq: 44}, {Conv: "g:x", Seq: 1}, {Conv: "g:x", Seq: 3}}, ""},
		{"seq zero", []protocol.Mark{{Conv: "g:x", Seq: 0}}, ""},
		{"thousands", marksN(3000), ""},
		{"nil", nil, protocol.CodeInvalid},
		{"empty", []protocol.Mark{}, protocol.CodeInvalid},
		{"bad conv", []protocol.Mark{{Conv: "d:bob:alice", Seq: 1}}, protocol.CodeInvalid},
		{"empty conv", []protocol.Mark{{Seq: 1}}, protocol.CodeInvalid},
		{"biz conv", []protocol.Mark{{Conv: "biz:shop", Seq: 1}}, protocol.CodeInvalid},
		{"bad conv after good", []protocol.Mark{{Conv: "g:x", Seq: 1}, {Conv: "nope", Seq: 1}}, protocol.CodeInvalid},
		{"negative seq", []protocol.Mark{{Conv: "g:x", Seq: -1}}, protocol.CodeInvalid},
		{"negative seq after good", []protocol.Mark{{Conv: "g:x", Seq: 5}, {Conv: "g:y", Seq: -5}}, protocol.CodeInvalid},
	}
	for _, tt := range tests {
		wantCode(t, "ValidateMarks "+tt.name, protocol.ValidateMarks(tt.marks), tt.want)
	}
}

func TestParseMessageConv(t *testing.T) {
	for _, s := range []string{"d:alice:bob", "g:x"} {
		c, err := protocol.ParseMessageConv(s)
		if err != nil || c.String() != s {
			t.Errorf("ParseMessageConv(%q) = %v, %v", s, c, err)
		}
	}
	for _, s := range []string{"biz:shop", "d:bob:alice", "", "g:", strings.Repeat("x", 500)} {
		c, err := protocol.ParseMessageConv(s)
		wantCode(t, "ParseMessageConv "+s, err, protocol.CodeInvalid)
		if c != (protocol.Conv{}) {
			t.Errorf("ParseMessageConv(%q) returned %#v with its error", s, c)
		}
	}
}
