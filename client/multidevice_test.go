package client

import (
	"testing"
	"time"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/servertest"
)

// Reading on one device of a user clears the unread count on the other,
// through the server's session_sync nudge.
func TestReadOnOneDeviceClearsUnreadOnTheOther(t *testing.T) {
	env := servertest.Start(t)
	dm := conv(t, "alice", "bob")
	laptop := newProfile(t, env.URL, "alice", "").start()
	phone := newProfile(t, env.URL, "alice", "").start()
	if laptop.client.Device() == phone.client.Device() {
		t.Fatal("two profiles share a device id")
	}
	bob := newProfile(t, env.URL, "bob", "").startOnline()
	for _, body := range []string{"one", "two", "three"} {
		if _, err := bob.client.Send(dm, body); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []*profile{laptop, phone} {
		p.waitFor("three unread", func() bool {
			_, total, err := p.client.Sessions("")
			return err == nil && total == 3
		})
	}
	laptop.client.MarkRead(dm, 3)
	if _, total, _ := laptop.client.Sessions(""); total != 0 {
		t.Fatalf("the reading device still shows %d unread", total)
	}
	phone.waitFor("the read from the laptop", func() bool {
		s, ok := phone.session(dm)
		_, total, _ := phone.client.Sessions("")
		return ok && s.ReadSeq == 3 && s.UnreadCount == 0 && total == 0
	})
	// The phone also sent an ack, the laptop a read: bob's ticks say read.
	bob.waitFor("blue ticks", func() bool { return bob.client.Ticks(dm).ReadSeq == 3 })
}

// Session operations made on one device show on the other.
func TestSessionOpsReachTheOtherDevice(t *testing.T) {
	env := servertest.Start(t)
	dm := conv(t, "alice", "bob")
	other := conv(t, "alice", "carol")
	laptop := newProfile(t, env.URL, "alice", "").start()
	phone := newProfile(t, env.URL, "alice", "").start()
	env.Dial(t, "bob", "b").Send(dm, "b1", "from bob")
	env.Dial(t, "carol", "c").Send(other, "c1", "from carol")
	for _, p := range []*profile{laptop, phone} {
		p.waitFor("both sessions", func() bool {
			list, _, _ := p.client.Sessions("")
			return len(list) == 2
		})
	}

	steps := []struct {
		op    string
		until int64
		check func(protocol.Session) bool
	}{
		{"pin", 0, func(s protocol.Session) bool { return s.Priority == 1 }},
		{"mute", time.Now().Add(time.Hour).UnixMilli(), func(s protocol.Session) bool { return s.Muted && s.MuteUntil > 0 }},
		{"mark_unread", 0, func(s protocol.Session) bool { return s.MarkedUnread }},
		{"delete", 0, func(s protocol.Session) bool { return s.Deleted }},
	}
	for _, step := range steps {
		laptop.client.SessionOp(dm, step.op, step.until, "")
		for _, p := range []*profile{laptop, phone} {
			p.waitFor(step.op, func() bool {
				s, ok := p.session(dm)
				return ok && step.check(s)
			})
		}
	}
	// Pinned first, then gone from the list once deleted; the muted unread
	// no longer counts.
	list, total, _ := phone.client.Sessions("")
	if len(list) != 1 || list[0].Conv != other || total != 1 {
		t.Fatalf("phone's list %v, total %d", list, total)
	}
	// A new message brings the deleted chat back, on both devices.
	env.Dial(t, "bob", "b2").Send(dm, "b2", "again")
	for _, p := range []*profile{laptop, phone} {
		p.waitFor("the chat back", func() bool {
			list, _, _ := p.client.Sessions("")
			return len(list) == 2 && list[0].Conv == dm
		})
	}
}

// A refused session operation is reported as an ErrorEvent.
func TestRefusedSessionOpIsReported(t *testing.T) {
	env := servertest.Start(t)
	alice := newProfile(t, env.URL, "alice", "").start()
	alice.client.SessionOp(conv(t, "alice", "bob"), "polish", 0, "")
	e := alice.waitEvent("the refusal", func(e Event) bool { _, ok := e.(ErrorEvent); return ok }).(ErrorEvent)
	if e.Op != "session_op polish" {
		t.Fatalf("error event %+v", e)
	}
}
