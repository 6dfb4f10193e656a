package servertest

import (
	"strings"

	"github.com/imcore/im/protocol"
)

// Pushes is what reached a device, by kind.
type Pushes struct {
	Msgs   []protocol.Message
	Status []protocol.Status
	Syncs  []int64 // the cursors of session_sync pushes
	Typing []protocol.Typing
	Other  []protocol.Frame
}

// TakePushes makes a barrier round trip and sorts what arrived before it
// (and was not yet taken). A push the server queued for the device before
// the request that caused it was answered is among them. The typing of
// DialReplayed's probes is dropped.
func (c *Client) TakePushes() Pushes {
	c.T.Helper()
	var out Pushes
	for _, f := range c.Barrier() {
		switch f := f.(type) {
		case *protocol.MsgPush:
			out.Msgs = append(out.Msgs, f.Msg)
		case *protocol.Status:
			out.Status = append(out.Status, *f)
		case *protocol.SessionSync:
			out.Syncs = append(out.Syncs, f.Cursor)
		case *protocol.Typing:
			if !strings.HasPrefix(f.User, probeUser) {
				out.Typing = append(out.Typing, *f)
			}
		default:
			out.Other = append(out.Other, f)
		}
	}
	return out
}

// WantMsg is a message a device must be pushed.
type WantMsg struct {
	Seq    int64
	From   string
	Body   string
	System bool
}

// SystemMsg is the system message seq of from with body.
func SystemMsg(seq int64, from, body string) *WantMsg {
	return &WantMsg{Seq: seq, From: from, Body: body, System: true}
}

// WantPushes requires every client to have been pushed exactly: msg in
// conv (when not nil), one status of conv with ticks (when not nil), one
// session_sync (when sync) whose cursor is the user's newest active_ts, and
// nothing else. Every client must get the same message object, which is
// returned.
func WantPushes(conv string, msg *WantMsg, ticks *protocol.Ticks, sync bool, clients ...*Client) protocol.Message {
	var first protocol.Message
	for i, c := range clients {
		t := c.T
		t.Helper()
		got := c.TakePushes()
		who := c.User + "/" + c.Device
		if len(got.Other) > 0 || len(got.Typing) > 0 {
			t.Fatalf("%s: unexpected frames %s %s", who, JSON(got.Typing), DescribeAll(got.Other))
		}
		switch {
		case msg == nil && len(got.Msgs) > 0:
			t.Fatalf("%s: want no msg, got %s", who, JSON(got.Msgs))
		case msg != nil:
			if len(got.Msgs) != 1 {
				t.Fatalf("%s: want exactly one msg (seq %d %q), got %s (and status %s, session_sync %v)", who, msg.Seq, msg.Body, JSON(got.Msgs), JSON(got.Status), got.Syncs)
			}
			m := got.Msgs[0]
			kind := ""
			if msg.System {
				kind = protocol.KindSystem
			}
			if m.Conv != conv || m.Seq != msg.Seq || m.From != msg.From || m.Body != msg.Body || m.Kind != kind || m.MsgID == "" || m.ServerTS == 0 {
				t.Fatalf("%s: got msg %s, want conv %s seq %d from %s body %q kind %q", who, JSON(m), conv, msg.Seq, msg.From, msg.Body, kind)
			}
			if i == 0 {
				first = m
			} else if m != first {
				t.Fatalf("%s: got msg %s, but %s/%s got %s", who, JSON(m), clients[0].User, clients[0].Device, JSON(first))
			}
		}
		wantStatus(c, who, conv, ticks, got.Status)
		switch {
		case !sync && len(got.Syncs) > 0:
			t.Fatalf("%s: want no session_sync, got cursors %v", who, got.Syncs)
		case sync:
			if len(got.Syncs) != 1 {
				t.Fatalf("%s: want exactly one session_sync, got cursors %v", who, got.Syncs)
			}
			if _, page := c.SyncAll(""); page.Cursor != got.Syncs[0] {
				t.Fatalf("%s: session_sync cursor %d, but the newest active_ts is %d", who, got.Syncs[0], page.Cursor)
			}
		}
	}
	return first
}

// WantQuiet requires that nothing at all was pushed to the clients.
func WantQuiet(clients ...*Client) {
	for _, c := range clients {
		c.T.Helper()
	}
	WantPushes("", nil, nil, false, clients...)
}
