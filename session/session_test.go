package session_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/session"
)

const (
	alice = "alice"
	bob   = "bob"
	dAB   = "d:alice:bob"
)

var (
	none   = session.Moves{}
	active = session.Moves{Active: true}
	both   = session.Moves{Active: true, Write: true}
)

// base is bob's session of dAB with 3 unread messages of 5, and timestamps
// that no rule may touch (the store sets them).
func base() session.State {
	return session.State{
		User: bob, Conv: dAB,
		ReadSeq: 2, WriteSeq: 5, UnreadCount: 3,
		ActiveTS: 1000, WriteTS: 900,
		LastConv: dAB, LastSeq: 5,
	}
}

// with returns base changed by fn.
func with(fn func(s *session.State)) session.State {
	s := base()
	fn(&s)
	return s
}

// checkMoves checks the moves of an event and that they agree with what it
// did to the state: nothing moves exactly when nothing changed, and write_ts
// never moves without active_ts.
func checkMoves(t *testing.T, in, got session.State, moves, want session.Moves) {
	t.Helper()
	if moves != want {
		t.Errorf("moves = %+v, want %+v", moves, want)
	}
	if moves.Changed() != (got != in) {
		t.Errorf("moves = %+v but state changed = %v", moves, got != in)
	}
	if moves.Write && !moves.Active {
		t.Errorf("moves = %+v: write_ts moves without active_ts", moves)
	}
	if got.ActiveTS != in.ActiveTS || got.WriteTS != in.WriteTS {
		t.Errorf("the rule set timestamps: active %d -> %d, write %d -> %d", in.ActiveTS, got.ActiveTS, in.WriteTS, got.WriteTS)
	}
}

func TestMovesChanged(t *testing.T) {
	for _, tc := range []struct {
		m    session.Moves
		want bool
	}{
		{none, false},
		{active, true},
		{session.Moves{Write: true}, true},
		{both, true},
	} {
		if got := tc.m.Changed(); got != tc.want {
			t.Errorf("%+v.Changed() = %v, want %v", tc.m, got, tc.want)
		}
	}
}

func TestOnMessage(t *testing.T) {
	tests := []struct {
		name   string
		in     session.State
		seq    int64
		sender string
		want   session.State
		moves  session.Moves
	}{
		{
			name: "first message to the recipient: a request",
			in:   session.State{User: bob, Conv: dAB},
			seq:  1, sender: alice,
			want:  session.State{User: bob, Conv: dAB, WriteSeq: 1, UnreadCount: 1, LastConv: dAB, LastSeq: 1, Request: true},
			moves: both,
		},
		{
			name: "first message to the sender",
			in:   session.State{User: alice, Conv: dAB},
			seq:  1, sender: alice,
			want:  session.State{User: alice, Conv: dAB, ReadSeq: 1, WriteSeq: 1, LastConv: dAB, LastSeq: 1},
			moves: both,
		},
		{
			name: "recipient: unread counts up",
			in:   base(),
			seq:  6, sender: alice,
			want:  with(func(s *session.State) { s.WriteSeq, s.UnreadCount, s.LastSeq = 6, 4, 6 }),
			moves: both,
		},
		{
			name: "sender: an implicit read",
			in:   base(),
			seq:  6, sender: bob,
			want:  with(func(s *session.State) { s.ReadSeq, s.WriteSeq, s.UnreadCount, s.LastSeq = 6, 6, 0, 6 }),
			moves: both,
		},
		{
			name: "sender clears marked_unread",
			in:   with(func(s *session.State) { s.MarkedUnread = true }),
			seq:  6, sender: bob,
			want:  with(func(s *session.State) { s.ReadSeq, s.WriteSeq, s.UnreadCount, s.LastSeq = 6, 6, 0, 6 }),
			moves: both,
		},
		{
			name: "recipient keeps marked_unread",
			in:   with(func(s *session.State) { s.MarkedUnread = true }),
			seq:  6, sender: alice,
			want: with(func(s *session.State) {
				s.MarkedUnread = true
				s.WriteSeq, s.UnreadCount, s.LastSeq = 6, 4, 6
			}),
			moves: both,
		},
		{
			name: "a skipped seq: unread is write_seq - read_seq",
			in:   base(),
			seq:  9, sender: alice,
			want:  with(func(s *session.State) { s.WriteSeq, s.UnreadCount, s.LastSeq = 9, 7, 9 }),
			moves: both,
		},
		{
			name: "a message brings a deleted session back",
			in:   with(func(s *session.State) { s.Deleted, s.ReadSeq, s.UnreadCount = true, 5, 0 }),
			seq:  6, sender: alice,
			want:  with(func(s *session.State) { s.ReadSeq, s.WriteSeq, s.UnreadCount, s.LastSeq = 5, 6, 1, 6 }),
			moves: both,
		},
		{
			name: "the user's own message brings a deleted session back",
			in:   with(func(s *session.State) { s.Deleted, s.ReadSeq, s.UnreadCount = true, 5, 0 }),
			seq:  6, sender: bob,
			want:  with(func(s *session.State) { s.ReadSeq, s.WriteSeq, s.UnreadCount, s.LastSeq = 6, 6, 0, 6 }),
			moves: both,
		},
		{
			name: "other fields are kept",
			in: with(func(s *session.State) {
				s.Muted, s.MuteUntil, s.Priority, s.Category, s.SubBiz = true, 77, 1, "promotions", "shop"
			}),
			seq: 6, sender: alice,
			want: with(func(s *session.State) {
				s.Muted, s.MuteUntil, s.Priority, s.Category, s.SubBiz = true, 77, 1, "promotions", "shop"
				s.WriteSeq, s.UnreadCount, s.LastSeq = 6, 4, 6
			}),
			moves: both,
		},
		{
			name: "the same seq again is ignored",
			in:   base(),
			seq:  5, sender: alice,
			want:  base(),
			moves: none,
		},
		{
			name: "a stale seq from another is ignored",
			in:   base(),
			seq:  3, sender: alice,
			want:  base(),
			moves: none,
		},
		{
			name: "one's own stale seq still reads up to it",
			in:   base(),
			seq:  3, sender: bob,
			want:  with(func(s *session.State) { s.ReadSeq, s.UnreadCount = 3, 2 }),
			moves: session.Moves{Active: true},
		},
		{
			name: "a stale seq does not undelete",
			in:   with(func(s *session.State) { s.Deleted, s.ReadSeq, s.UnreadCount = true, 5, 0 }),
			seq:  4, sender: alice,
			want:  with(func(s *session.State) { s.Deleted, s.ReadSeq, s.UnreadCount = true, 5, 0 }),
			moves: none,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.in
			moves := got.OnMessage(tc.seq, tc.sender, session.Events{})
			if got != tc.want {
				t.Errorf("OnMessage(%d, %s) on %+v\n got %+v\nwant %+v", tc.seq, tc.sender, tc.in, got, tc.want)
			}
			checkMoves(t, tc.in, got, moves, tc.moves)
			if got.UnreadCount != got.WriteSeq-got.ReadSeq {
				t.Errorf("unread %d != write_seq %d - read_seq %d", got.UnreadCount, got.WriteSeq, got.ReadSeq)
			}
		})
	}
}

func TestOnRead(t *testing.T) {
	tests := []struct {
		name  string
		in    session.State
		seq   int64
		want  session.State
		moves session.Moves
	}{
		{
			name: "read up",
			in:   base(), seq: 4,
			want:  with(func(s *session.State) { s.ReadSeq, s.UnreadCount = 4, 1 }),
			moves: active,
		},
		{
			name: "read everything",
			in:   base(), seq: 5,
			want:  with(func(s *session.State) { s.ReadSeq, s.UnreadCount = 5, 0 }),
			moves: active,
		},
		{
			name: "clamped to write_seq",
			in:   base(), seq: 99,
			want:  with(func(s *session.State) { s.ReadSeq, s.UnreadCount = 5, 0 }),
			moves: active,
		},
		{
			name: "the same read again moves nothing",
			in:   base(), seq: 2,
			want: base(), moves: none,
		},
		{
			name: "a lower read never lowers read_seq",
			in:   base(), seq: 1,
			want: base(), moves: none,
		},
		{
			name: "a read of nothing stored",
			in:   session.State{User: bob, Conv: dAB}, seq: 3,
			want: session.State{User: bob, Conv: dAB}, moves: none,
		},
		{
			name: "a read clears marked_unread",
			in:   with(func(s *session.State) { s.MarkedUnread = true }), seq: 3,
			want:  with(func(s *session.State) { s.ReadSeq, s.UnreadCount = 3, 2 }),
			moves: active,
		},
		{
			name: "a read that moves nothing still clears marked_unread",
			in:   with(func(s *session.State) { s.MarkedUnread = true }), seq: 1,
			want:  base(),
			moves: active,
		},
		{
			name: "a clamped read clears marked_unread of a fully read session",
			in:   with(func(s *session.State) { s.ReadSeq, s.UnreadCount, s.MarkedUnread = 5, 0, true }), seq: 9,
			want:  with(func(s *session.State) { s.ReadSeq, s.UnreadCount = 5, 0 }),
			moves: active,
		},
		{
			name: "a read keeps the other fields",
			in: with(func(s *session.State) {
				s.Muted, s.Priority, s.Deleted, s.Category = true, 1, true, "x"
			}), seq: 5,
			want: with(func(s *session.State) {
				s.Muted, s.Priority, s.Deleted, s.Category = true, 1, true, "x"
				s.ReadSeq, s.UnreadCount = 5, 0
			}),
			moves: active,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.in
			moves := got.OnRead(tc.seq, session.Events{})
			if got != tc.want {
				t.Errorf("OnRead(%d) on %+v\n got %+v\nwant %+v", tc.seq, tc.in, got, tc.want)
			}
			checkMoves(t, tc.in, got, moves, tc.moves)
		})
	}
}

func TestTakeTicks(t *testing.T) {
	low := protocol.Ticks{DeliveredSeq: 3, ReadSeq: 2}
	tests := []struct {
		name  string
		given protocol.Ticks
		want  protocol.Ticks
		rose  bool
	}{
		{"a rise of both", protocol.Ticks{DeliveredSeq: 5, ReadSeq: 4}, protocol.Ticks{DeliveredSeq: 5, ReadSeq: 4}, true},
		{"a rise of one", protocol.Ticks{DeliveredSeq: 3, ReadSeq: 3}, protocol.Ticks{DeliveredSeq: 3, ReadSeq: 3}, true},
		{"the same", low, low, false},
		{"lower: ticks never go back", protocol.Ticks{DeliveredSeq: 1, ReadSeq: 1}, low, false},
		{"one higher, one lower", protocol.Ticks{DeliveredSeq: 4, ReadSeq: 1}, protocol.Ticks{DeliveredSeq: 4, ReadSeq: 2}, true},
	}
	for _, tc := range tests {
		in := base()
		in.Ticks = low
		got := in
		rose := got.TakeTicks(tc.given)
		want := in
		want.Ticks = tc.want
		if got != want || rose != tc.rose {
			t.Errorf("%s: TakeTicks(%+v) on %+v\n got %+v, rose %v\nwant %+v, rose %v", tc.name, tc.given, in, got, rose, want, tc.rose)
		}
	}
}

func TestApply(t *testing.T) {
	const now = 10_000
	tests := []struct {
		name  string
		in    session.State
		op    session.Op
		args  session.OpArgs
		want  session.State
		moves session.Moves
	}{
		// pin / unpin
		{"pin", base(), session.OpPin, session.OpArgs{},
			with(func(s *session.State) { s.Priority = 1 }), both},
		{"pin a pinned session", with(func(s *session.State) { s.Priority = 1 }), session.OpPin, session.OpArgs{},
			with(func(s *session.State) { s.Priority = 1 }), none},
		{"unpin", with(func(s *session.State) { s.Priority = 1 }), session.OpUnpin, session.OpArgs{},
			base(), active},
		{"unpin an unpinned session", base(), session.OpUnpin, session.OpArgs{},
			base(), none},

		// mute / unmute
		{"mute", base(), session.OpMute, session.OpArgs{},
			with(func(s *session.State) { s.Muted = true }), active},
		{"mute until", base(), session.OpMute, session.OpArgs{Until: now + 500},
			with(func(s *session.State) { s.Muted, s.MuteUntil = true, now+500 }), active},
		{"mute a muted session", with(func(s *session.State) { s.Muted = true }), session.OpMute, session.OpArgs{},
			with(func(s *session.State) { s.Muted = true }), none},
		{"mute until again", with(func(s *session.State) { s.Muted, s.MuteUntil = true, now+500 }), session.OpMute, session.OpArgs{Until: now + 500},
			with(func(s *session.State) { s.Muted, s.MuteUntil = true, now+500 }), none},
		{"mute with a new until", with(func(s *session.State) { s.Muted, s.MuteUntil = true, now+500 }), session.OpMute, session.OpArgs{Until: now + 900},
			with(func(s *session.State) { s.Muted, s.MuteUntil = true, now+900 }), active},
		{"mute forever a session muted until", with(func(s *session.State) { s.Muted, s.MuteUntil = true, now+500 }), session.OpMute, session.OpArgs{},
			with(func(s *session.State) { s.Muted = true }), active},
		{"mute a session whose mute expired", with(func(s *session.State) { s.Muted, s.MuteUntil = true, now-1 }), session.OpMute, session.OpArgs{},
			with(func(s *session.State) { s.Muted = true }), active},
		{"mute until a time already past mutes nothing", base(), session.OpMute, session.OpArgs{Until: now - 1},
			base(), none},
		{"mute until now mutes nothing", base(), session.OpMute, session.OpArgs{Until: now},
			base(), none},
		{"mute clears marked_unread", with(func(s *session.State) { s.MarkedUnread = true }), session.OpMute, session.OpArgs{},
			with(func(s *session.State) { s.Muted = true }), active},
		{"mute a muted session clears marked_unread", with(func(s *session.State) { s.Muted, s.MarkedUnread = true, true }), session.OpMute, session.OpArgs{},
			with(func(s *session.State) { s.Muted = true }), active},
		{"unmute", with(func(s *session.State) { s.Muted = true }), session.OpUnmute, session.OpArgs{},
			base(), active},
		{"unmute a mute with until", with(func(s *session.State) { s.Muted, s.MuteUntil = true, now+500 }), session.OpUnmute, session.OpArgs{},
			base(), active},
		{"unmute an unmuted session", base(), session.OpUnmute, session.OpArgs{},
			base(), none},
		{"unmute keeps marked_unread", with(func(s *session.State) { s.Muted, s.MarkedUnread = true, true }), session.OpUnmute, session.OpArgs{},
			with(func(s *session.State) { s.MarkedUnread = true }), active},

		// mark_unread
		{"mark_unread", base(), session.OpMarkUnread, session.OpArgs{},
			with(func(s *session.State) { s.MarkedUnread = true }), both},
		{"mark_unread a read session keeps read_seq", with(func(s *session.State) { s.ReadSeq, s.UnreadCount = 5, 0 }), session.OpMarkUnread, session.OpArgs{},
			with(func(s *session.State) { s.ReadSeq, s.UnreadCount, s.MarkedUnread = 5, 0, true }), both},
		{"mark_unread a marked session", with(func(s *session.State) { s.MarkedUnread = true }), session.OpMarkUnread, session.OpArgs{},
			with(func(s *session.State) { s.MarkedUnread = true }), none},

		// delete
		{"delete", base(), session.OpDelete, session.OpArgs{},
			with(func(s *session.State) { s.Deleted, s.ReadSeq, s.UnreadCount = true, 5, 0 }), active},
		{"delete a read session lowers nothing", with(func(s *session.State) { s.ReadSeq, s.UnreadCount = 5, 0 }), session.OpDelete, session.OpArgs{},
			with(func(s *session.State) { s.Deleted, s.ReadSeq, s.UnreadCount = true, 5, 0 }), active},
		{"delete keeps mute and pin", with(func(s *session.State) { s.Muted, s.Priority = true, 1 }), session.OpDelete, session.OpArgs{},
			with(func(s *session.State) { s.Muted, s.Priority, s.Deleted, s.ReadSeq, s.UnreadCount = true, 1, true, 5, 0 }), active},
		{"delete a deleted session", with(func(s *session.State) { s.Deleted, s.ReadSeq, s.UnreadCount = true, 5, 0 }), session.OpDelete, session.OpArgs{},
			with(func(s *session.State) { s.Deleted, s.ReadSeq, s.UnreadCount = true, 5, 0 }), none},
		{"delete a deleted session with unread", with(func(s *session.State) { s.Deleted = true }), session.OpDelete, session.OpArgs{},
			with(func(s *session.State) { s.Deleted, s.ReadSeq, s.UnreadCount = true, 5, 0 }), active},
		{"delete an empty session", session.State{User: bob, Conv: dAB}, session.OpDelete, session.OpArgs{},
			session.State{User: bob, Conv: dAB, Deleted: true}, active},

		// set_category
		{"set_category", base(), session.OpSetCategory, session.OpArgs{Category: "promotions"},
			with(func(s *session.State) { s.Category = "promotions" }), active},
		{"set_category again", with(func(s *session.State) { s.Category = "promotions" }), session.OpSetCategory, session.OpArgs{Category: "promotions"},
			with(func(s *session.State) { s.Category = "promotions" }), none},
		{"set_category to another", with(func(s *session.State) { s.Category = "promotions" }), session.OpSetCategory, session.OpArgs{Category: "work"},
			with(func(s *session.State) { s.Category = "work" }), active},
		{"set_category clears", with(func(s *session.State) { s.Category = "promotions" }), session.OpSetCategory, session.OpArgs{},
			with(func(s *session.State) { s.Category = "" }), active},
		{"set_category over an account's filing", with(func(s *session.State) { s.Category = "promotions" }), session.OpSetCategory, session.OpArgs{Category: "work"},
			with(func(s *session.State) { s.Category = "work" }), active},
		{"set_category to the category it has", with(func(s *session.State) { s.Category = "promotions" }), session.OpSetCategory, session.OpArgs{Category: "promotions"},
			with(func(s *session.State) { s.Category = "promotions" }), none},
		{"set_category \"\" with none", base(), session.OpSetCategory, session.OpArgs{}, base(), none},

		// unknown
		{"an unknown op changes nothing", base(), session.Op("archive"), session.OpArgs{Until: 5, Category: "x"},
			base(), none},
		{"an empty op changes nothing", base(), session.Op(""), session.OpArgs{},
			base(), none},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.in
			moves := got.Apply(tc.op, tc.args, now)
			if got != tc.want {
				t.Errorf("Apply(%s, %+v) on %+v\n got %+v\nwant %+v", tc.op, tc.args, tc.in, got, tc.want)
			}
			checkMoves(t, tc.in, got, moves, tc.moves)
			if got.UnreadCount != got.WriteSeq-got.ReadSeq {
				t.Errorf("unread %d != write_seq %d - read_seq %d", got.UnreadCount, got.WriteSeq, got.ReadSeq)
			}
			if got.ReadSeq < tc.in.ReadSeq || got.WriteSeq != tc.in.WriteSeq {
				t.Errorf("read_seq %d -> %d, write_seq %d -> %d: an op never lowers read_seq nor moves write_seq",
					tc.in.ReadSeq, got.ReadSeq, tc.in.WriteSeq, got.WriteSeq)
			}
			// Applying the same op again right away changes nothing.
			again := got
			if m := again.Apply(tc.op, tc.args, now); m.Changed() || again != got {
				t.Errorf("Apply(%s) twice: second moves %+v, state %+v -> %+v", tc.op, m, got, again)
			}
		})
	}
}

func TestMutedAtAndExpireMute(t *testing.T) {
	const now = 10_000
	tests := []struct {
		name         string
		muted        bool
		until        int64
		wantMuted    bool
		wantExpired  bool
		wantAfterMut bool
		wantAfterUnt int64
	}{
		{"not muted", false, 0, false, false, false, 0},
		{"muted until unmuted", true, 0, true, false, true, 0},
		{"muted until the future", true, now + 1, true, false, true, now + 1},
		{"muted until now", true, now, false, true, false, 0},
		{"muted until the past", true, now - 1, false, true, false, 0},
		{"muted until long ago", true, 1, false, true, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := with(func(s *session.State) { s.Muted, s.MuteUntil = tc.muted, tc.until })
			if got := s.MutedAt(now); got != tc.wantMuted {
				t.Errorf("MutedAt(%d) with muted=%v until=%d = %v, want %v", now, tc.muted, tc.until, got, tc.wantMuted)
			}
			before := s
			if got := s.ExpireMute(now); got != tc.wantExpired {
				t.Errorf("ExpireMute = %v, want %v", got, tc.wantExpired)
			}
			want := with(func(s *session.State) { s.Muted, s.MuteUntil = tc.wantAfterMut, tc.wantAfterUnt })
			if s != want {
				t.Errorf("after ExpireMute: %+v, want %+v", s, want)
			}
			if !tc.wantExpired && s != before {
				t.Errorf("ExpireMute that expired nothing changed %+v -> %+v", before, s)
			}
			if s.MutedAt(now) != tc.wantMuted {
				t.Errorf("MutedAt after ExpireMute = %v, want %v", s.MutedAt(now), tc.wantMuted)
			}
			if s.ExpireMute(now) {
				t.Errorf("ExpireMute twice: the second expired again")
			}
		})
	}
}

func TestUnreadContribution(t *testing.T) {
	tests := []struct {
		name string
		s    session.State
		want int64
	}{
		{"plain", base(), 3},
		{"empty", session.State{User: bob, Conv: dAB}, 0},
		{"muted", with(func(s *session.State) { s.Muted = true }), 0},
		{"muted until", with(func(s *session.State) { s.Muted, s.MuteUntil = true, 99 }), 0},
		{"deleted", with(func(s *session.State) { s.Deleted = true }), 0},
		{"marked unread counts as it is", with(func(s *session.State) { s.MarkedUnread = true }), 3},
		{"marked unread with nothing unread", with(func(s *session.State) { s.ReadSeq, s.UnreadCount, s.MarkedUnread = 5, 0, true }), 0},
		{"pinned", with(func(s *session.State) { s.Priority = 1 }), 3},
		{"in a sub-business", with(func(s *session.State) { s.SubBiz = "shop" }), 3},
	}
	for _, tc := range tests {
		if got := tc.s.UnreadContribution(); got != tc.want {
			t.Errorf("%s: UnreadContribution = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestIsGateway(t *testing.T) {
	for conv, want := range map[string]bool{
		"biz:shop":    true,
		dAB:           false,
		"g:team":      false,
		"biz:":        false,
		"":            false,
		"shop":        false,
		"biz:Shop":    false,
		"d:bob:alice": false,
	} {
		s := session.State{User: alice, Conv: conv}
		if got := s.IsGateway(); got != want {
			t.Errorf("IsGateway(%q) = %v, want %v", conv, got, want)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		op    session.Op
		args  session.OpArgs
		valid bool
	}{
		{session.OpPin, session.OpArgs{}, true},
		{session.OpUnpin, session.OpArgs{}, true},
		{session.OpMute, session.OpArgs{}, true},
		{session.OpMute, session.OpArgs{Until: 1763800000000}, true},
		{session.OpMute, session.OpArgs{Until: -1}, false},
		{session.OpUnmute, session.OpArgs{}, true},
		{session.OpMarkUnread, session.OpArgs{}, true},
		{session.OpDelete, session.OpArgs{}, true},
		{session.OpSetCategory, session.OpArgs{}, true},
		{session.OpSetCategory, session.OpArgs{Category: "promotions"}, true},
		{session.OpSetCategory, session.OpArgs{Category: "a"}, true},
		{session.OpSetCategory, session.OpArgs{Category: "9_x.y-z"}, true},
		{session.OpSetCategory, session.OpArgs{Category: strings.Repeat("c", session.MaxCategoryLen)}, true},
		{session.OpSetCategory, session.OpArgs{Category: strings.Repeat("c", session.MaxCategoryLen+1)}, false},
		{session.OpSetCategory, session.OpArgs{Category: "Promotions"}, false},
		{session.OpSetCategory, session.OpArgs{Category: "_x"}, false},
		{session.OpSetCategory, session.OpArgs{Category: "-x"}, false},
		{session.OpSetCategory, session.OpArgs{Category: "a b"}, false},
		{session.OpSetCategory, session.OpArgs{Category: "ünï"}, false},
		{session.Op("archive"), session.OpArgs{}, false},
		{session.Op(""), session.OpArgs{}, false},
		{session.Op("PIN"), session.OpArgs{}, false},
		{session.Op("pin "), session.OpArgs{}, false},
	}
	for _, tc := range tests {
		err := session.Validate(tc.op, tc.args)
		if tc.valid {
			if err != nil {
				t.Errorf("Validate(%q, %+v) = %v, want nil", tc.op, tc.args, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("Validate(%q, %+v) = nil, want invalid", tc.op, tc.args)
			continue
		}
		if err.Code != protocol.CodeInvalid || err.Message == "" {
			t.Errorf("Validate(%q, %+v) = %+v, want code %s with a message", tc.op, tc.args, err, protocol.CodeInvalid)
		}
	}
}

// TestRulesKeepInvariants applies a long deterministic random sequence of
// events and checks after each one what every rule keeps: unread is
// write_seq - read_seq, read_seq <= write_seq, neither ever goes back, an
// event that changes nothing moves nothing, and write_ts never moves alone.
func TestRulesKeepInvariants(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 7))
	ops := []session.Op{session.OpPin, session.OpUnpin, session.OpMute, session.OpUnmute,
		session.OpMarkUnread, session.OpDelete, session.OpSetCategory}
	st := session.State{User: bob, Conv: dAB}
	var now int64 = 1000
	for i := range 5000 {
		now += r.Int64N(3)
		prev := st
		var moves session.Moves
		var what string
		switch k := r.IntN(10); {
		case k < 3:
			sender := alice
			if r.IntN(3) == 0 {
				sender = bob
			}
			seq := st.WriteSeq + r.Int64N(3) - 1 // sometimes stale, sometimes skipping
			what = "message"
			moves = st.OnMessage(seq, sender, session.Events{})
		case k < 5:
			what = "read"
			moves = st.OnRead(r.Int64N(st.WriteSeq+3), session.Events{})
		case k < 6:
			what = "expire"
			if st.ExpireMute(now) {
				moves = active
			}
		default:
			op := ops[r.IntN(len(ops))]
			args := session.OpArgs{}
			if op == session.OpMute && r.IntN(2) == 0 {
				args.Until = now + 1 + r.Int64N(5)
			}
			if op == session.OpSetCategory {
				args.Category = []string{"", "a", "b"}[r.IntN(3)]
			}
			what = string(op)
			moves = st.Apply(op, args, now)
		}
		switch {
		case st.UnreadCount != st.WriteSeq-st.ReadSeq:
			t.Fatalf("step %d (%s): unread %d != %d - %d", i, what, st.UnreadCount, st.WriteSeq, st.ReadSeq)
		case st.ReadSeq > st.WriteSeq:
			t.Fatalf("step %d (%s): read_seq %d > write_seq %d", i, what, st.ReadSeq, st.WriteSeq)
		case st.ReadSeq < prev.ReadSeq || st.WriteSeq < prev.WriteSeq:
			t.Fatalf("step %d (%s): seqs went back: %+v -> %+v", i, what, prev, st)
		case moves.Changed() != (st != prev):
			t.Fatalf("step %d (%s): moves %+v but changed = %v (%+v -> %+v)", i, what, moves, st != prev, prev, st)
		case moves.Write && !moves.Active:
			t.Fatalf("step %d (%s): write_ts moves alone", i, what)
		case st.Deleted && st.UnreadCount != 0:
			t.Fatalf("step %d (%s): deleted with %d unread", i, what, st.UnreadCount)
		}
	}
}

func TestOnJoin(t *testing.T) {
	// A new member joining after seq 4 has nothing unread before it.
	st := session.State{User: "dave", Conv: "g:x"}
	if m := st.OnJoin(4); m != active || st.ReadSeq != 4 || st.WriteSeq != 4 || st.UnreadCount != 0 {
		t.Fatalf("new member: moves %+v, state %+v", m, st)
	}
	st.OnMessage(5, "alice", session.Events{})
	if st.UnreadCount != 1 {
		t.Errorf("after the join message: unread %d, want 1", st.UnreadCount)
	}
	// A member added back keeps its session; read_seq moves up past what
	// was sent while it was out.
	back := session.State{User: "carol", Conv: "g:x", ReadSeq: 2, WriteSeq: 3, UnreadCount: 1}
	if m := back.OnJoin(7); m != active || back.ReadSeq != 7 || back.WriteSeq != 7 || back.UnreadCount != 0 {
		t.Errorf("re-added member: moves %+v, state %+v", m, back)
	}
	// Joining before what the session already holds changes nothing.
	held := session.State{ReadSeq: 5, WriteSeq: 5}
	if m := held.OnJoin(3); m.Changed() {
		t.Errorf("join below the session's seqs changed it: %+v", held)
	}
}

func TestOnLeaveClearsUnread(t *testing.T) {
	st := session.State{ReadSeq: 1, WriteSeq: 3, UnreadCount: 2, MarkedUnread: true, Priority: 1, WriteTS: 7}
	m := st.OnLeave()
	want := session.State{ReadSeq: 3, WriteSeq: 3, UnreadCount: 0, Priority: 1, WriteTS: 7}
	if m != active || st != want {
		t.Errorf("OnLeave: moves %+v, state %+v, want active only and %+v", m, st, want)
	}
}

// TestOnRelationIsAnEvent: a relation entry raises write_seq without
// counting as unread, keeps the last message, write_ts and a deleted
// session deleted, and always moves active_ts; the sender's reads.
func TestOnRelationIsAnEvent(t *testing.T) {
	ev := session.Events{From: 0, Seqs: []int64{3}}
	s := session.State{User: "bob", Conv: "d:alice:bob", WriteSeq: 2, ReadSeq: 1, UnreadCount: 1, LastConv: "d:alice:bob", LastSeq: 2, Deleted: true}
	moves := s.OnRelation(3, "alice", ev)
	if moves != (session.Moves{Active: true}) || s.WriteSeq != 3 || s.UnreadCount != 1 || s.LastSeq != 2 || !s.Deleted {
		t.Fatalf("after alice's relation entry: %+v, moves %+v", s, moves)
	}
	moves = s.OnRelation(3, "bob", ev)
	if moves != (session.Moves{Active: true}) || s.ReadSeq != 3 || s.UnreadCount != 0 || s.LastSeq != 2 {
		t.Fatalf("after bob's own relation entry: %+v, moves %+v; want read up to it", s, moves)
	}
}

// The request rule: the other member's first message in a direct chat
// makes one, later messages of theirs keep it, the user's own send (or
// relation entry) clears it, and a group never has one.
func TestRequestFlag(t *testing.T) {
	st := session.State{User: "bob", Conv: "d:alice:bob"}
	st.OnMessage(1, "alice", session.Events{})
	st.OnMessage(2, "alice", session.Events{})
	if !st.Request {
		t.Fatalf("after alice's messages: %+v, want a request", st)
	}
	st.OnRelation(3, "bob", session.Events{})
	if st.Request {
		t.Fatalf("after bob's reaction: %+v, want no request", st)
	}
	st.OnMessage(4, "alice", session.Events{})
	if st.Request {
		t.Errorf("after bob wrote, another of alice's: %+v, want no request", st)
	}
	own := session.State{User: "alice", Conv: "d:alice:bob"}
	own.OnMessage(1, "alice", session.Events{})
	if own.Request {
		t.Errorf("the sender's own session: %+v, want no request", own)
	}
	group := session.State{User: "bob", Conv: "g:team"}
	group.OnMessage(1, "alice", session.Events{})
	if group.Request {
		t.Errorf("a group: %+v, want no request", group)
	}
}
