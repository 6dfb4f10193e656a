package servertest

import (
	"reflect"
	"slices"
	"testing"

	"github.com/imcore/im/protocol"
)

// Sync runs one sync and checks what every answer must satisfy: sessions
// in strictly ascending active_ts above since, all of the list asked for,
// cursor the highest active_ts returned (or since), and for direct chats
// unread_count at most write_seq - read_seq (exactly that but for the
// relation entries among them, which are events, not unread).
func (c *Client) Sync(q protocol.Sync) *protocol.Sessions {
	c.T.Helper()
	f := c.RequestOK(&q)
	page, ok := f.(*protocol.Sessions)
	if !ok {
		c.T.Fatalf("sync: want sessions, got %s", Describe(f))
	}
	prev := q.Since
	for _, s := range page.Sessions {
		if s.ActiveTS <= prev {
			c.T.Fatalf("%s/%s sync since %d: %s has active_ts %d, not above the previous %d (want strictly ascending, above since)",
				c.User, c.Device, q.Since, s.Conv, s.ActiveTS, prev)
		}
		prev = s.ActiveTS
		if s.SubBiz != q.SubBiz {
			c.T.Fatalf("%s/%s sync of list %q returned %s of list %q", c.User, c.Device, q.SubBiz, s.Conv, s.SubBiz)
		}
		if s.Kind == "direct" && (s.UnreadCount < 0 || s.UnreadCount > s.WriteSeq-s.ReadSeq || s.ReadSeq > s.WriteSeq) {
			c.T.Fatalf("%s/%s: %s has unread %d, read_seq %d, write_seq %d", c.User, c.Device, s.Conv, s.UnreadCount, s.ReadSeq, s.WriteSeq)
		}
	}
	if page.Cursor != prev {
		c.T.Fatalf("%s/%s sync since %d: cursor %d, want %d (the highest active_ts returned, or since)", c.User, c.Device, q.Since, page.Cursor, prev)
	}
	return page
}

// SyncAll loads a whole list (since 0, in one page) and returns it by
// conversation, with the page.
func (c *Client) SyncAll(subBiz string) (map[string]protocol.Session, *protocol.Sessions) {
	c.T.Helper()
	page := c.Sync(protocol.Sync{Since: 0, Limit: 1000, SubBiz: subBiz})
	if page.HasMore {
		c.T.Fatalf("%s/%s: full sync has more than 1000 sessions", c.User, c.Device)
	}
	out := make(map[string]protocol.Session, len(page.Sessions))
	for _, s := range page.Sessions {
		if _, dup := out[s.Conv]; dup {
			c.T.Fatalf("%s/%s: sync lists %s twice", c.User, c.Device, s.Conv)
		}
		out[s.Conv] = s
	}
	return out, page
}

// SessionOf returns the caller's session of conv from a full sync of the
// main list.
func (c *Client) SessionOf(conv string) protocol.Session {
	c.T.Helper()
	return c.SessionIn("", conv)
}

// SessionIn returns the caller's session of conv from a full sync of the
// list of subBiz.
func (c *Client) SessionIn(subBiz, conv string) protocol.Session {
	c.T.Helper()
	all, _ := c.SyncAll(subBiz)
	s, ok := all[conv]
	if !ok {
		c.T.Fatalf("%s/%s: no session %s in list %q (have %v)", c.User, c.Device, conv, subBiz, Convs(all))
	}
	return s
}

// FindSession returns the session of conv in a sync page.
func FindSession(page *protocol.Sessions, conv string) (protocol.Session, bool) {
	for _, s := range page.Sessions {
		if s.Conv == conv {
			return s, true
		}
	}
	return protocol.Session{}, false
}

// Convs returns the conversations of a list, sorted.
func Convs(all map[string]protocol.Session) []string {
	var out []string
	for conv := range all {
		out = append(out, conv)
	}
	slices.Sort(out)
	return out
}

// SessionOp applies a session operation and returns the session of its ok.
func (c *Client) SessionOp(op protocol.SessionOp) protocol.Session {
	c.T.Helper()
	f := c.RequestOK(&op)
	ok, isOK := f.(*protocol.OK)
	if !isOK || ok.Session == nil {
		c.T.Fatalf("session_op %s on %s: want ok with a session, got %s", op.Op, op.Conv, Describe(f))
	}
	if ok.Session.Conv != op.Conv {
		c.T.Fatalf("session_op %s on %s: answered with the session of %s", op.Op, op.Conv, ok.Session.Conv)
	}
	return *ok.Session
}

// WantSession requires the caller's session of want.Conv to equal want in
// every field but the two timestamps, and returns it.
func (c *Client) WantSession(want protocol.Session) protocol.Session {
	c.T.Helper()
	got := c.SessionOf(want.Conv)
	WantSameSession(c.T, c.User+"/"+c.Device+" session", got, want)
	return got
}

// WantTotalUnread requires a list's total_unread to be the sum of
// unread_count over its sessions that are neither muted nor deleted, and,
// when want >= 0, to be want. It returns the list.
func (c *Client) WantTotalUnread(subBiz string, want int64) map[string]protocol.Session {
	c.T.Helper()
	all, page := c.SyncAll(subBiz)
	var sum int64
	for _, s := range all {
		if !s.Muted && !s.Deleted {
			sum += s.UnreadCount
		}
	}
	if page.TotalUnread != sum {
		c.T.Fatalf("%s list %q: total_unread %d, but the unmuted, undeleted sessions sum to %d: %s",
			c.User, subBiz, page.TotalUnread, sum, JSON(page.Sessions))
	}
	if want >= 0 && page.TotalUnread != want {
		c.T.Fatalf("%s list %q: total_unread %d, want %d: %s", c.User, subBiz, page.TotalUnread, want, JSON(page.Sessions))
	}
	return all
}

// WantSameSession requires got to equal want in every field but the
// timestamps.
func WantSameSession(t testing.TB, what string, got, want protocol.Session) {
	t.Helper()
	g, w := got, want
	g.ActiveTS, g.WriteTS, w.ActiveTS, w.WriteTS = 0, 0, 0, 0
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%s:\n got %s\nwant %s", what, JSON(got), JSON(want))
	}
}

// WantIdenticalSession requires got to equal want in every field.
func WantIdenticalSession(t testing.TB, what string, got, want protocol.Session) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got %s\nwant %s", what, JSON(got), JSON(want))
	}
}

// WantMoved checks which timestamps of a session moved (up) from before to
// after: active_ts when active, write_ts when write; the others must not
// have.
func WantMoved(t testing.TB, what string, before, after protocol.Session, active, write bool) {
	t.Helper()
	if active && after.ActiveTS <= before.ActiveTS {
		t.Fatalf("%s: active_ts %d did not move up from %d", what, after.ActiveTS, before.ActiveTS)
	}
	if !active && after.ActiveTS != before.ActiveTS {
		t.Fatalf("%s: active_ts moved from %d to %d, want unchanged", what, before.ActiveTS, after.ActiveTS)
	}
	if write && after.WriteTS <= before.WriteTS {
		t.Fatalf("%s: write_ts %d did not move up from %d", what, after.WriteTS, before.WriteTS)
	}
	if !write && after.WriteTS != before.WriteTS {
		t.Fatalf("%s: write_ts moved from %d to %d, want unchanged", what, before.WriteTS, after.WriteTS)
	}
}

// ExpectSessionSync requires exactly one session_sync, with cursor, on
// every client.
func ExpectSessionSync(cursor int64, clients ...*Client) {
	for _, c := range clients {
		c.T.Helper()
		f := c.ExpectType("session_sync").(*protocol.SessionSync)
		if f.Cursor != cursor {
			c.T.Fatalf("%s/%s: session_sync cursor %d, want %d", c.User, c.Device, f.Cursor, cursor)
		}
		c.ExpectNone("a second session_sync", OfType("session_sync"))
	}
}

// ExpectNoSessionSync proves that no session_sync reached any of the
// clients. Called after the request that could have caused one was
// answered: the server queues its nudges before that answer.
func ExpectNoSessionSync(clients ...*Client) {
	for _, c := range clients {
		c.T.Helper()
		c.ExpectNone("session_sync", OfType("session_sync"))
	}
}
