package client

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server"
	"github.com/imcore/im/server/chat"
	"github.com/imcore/im/server/servertest"
)

func ptr[T any](v T) *T { return &v }

// isSettings matches a SettingsChanged answering op ("" for a push).
func isSettings(op string) func(Event) bool {
	return func(e Event) bool {
		s, ok := e.(SettingsChanged)
		return ok && s.Op == op
	}
}

// isError matches an ErrorEvent of op.
func isError(op string) func(Event) bool {
	return func(e Event) bool {
		err, ok := e.(ErrorEvent)
		return ok && err.Op == op
	}
}

// A change of settings on one device is answered there and pushed to the
// user's other device; both keep it across a restart.
func TestSettingsRoundTripAndPushToTheOtherDevice(t *testing.T) {
	env := servertest.Start(t)
	laptop := newProfile(t, env.URL, "alice", "").startOnline()
	phone := newProfile(t, env.URL, "alice", "").startOnline()
	phone.waitEvent("the settings read at connect", isSettings(""))
	if got := laptop.client.Settings(); !reflect.DeepEqual(got, protocol.DefaultSettings()) {
		t.Fatalf("a new user's settings %+v, want the defaults", got)
	}

	laptop.client.ChangeSettings(protocol.SettingsChange{
		Name: ptr("Alice Liddell"), LastSeen: ptr(protocol.LastSeenNobody), ReadReceipts: ptr(false),
	})
	want := protocol.UserSettings{Name: "Alice Liddell", LastSeen: protocol.LastSeenNobody, ReadReceipts: false, Blocked: []string{}}
	answered := laptop.waitEvent("the answer", isSettings("settings")).(SettingsChanged)
	if !reflect.DeepEqual(answered.Settings, want) || !reflect.DeepEqual(laptop.client.Settings(), want) {
		t.Fatalf("answered %+v, kept %+v; want %+v", answered.Settings, laptop.client.Settings(), want)
	}
	pushed := phone.waitEvent("the push", isSettings("")).(SettingsChanged)
	if !reflect.DeepEqual(pushed.Settings, want) || !reflect.DeepEqual(phone.client.Settings(), want) {
		t.Fatalf("the phone got %+v, keeps %+v; want %+v", pushed.Settings, phone.client.Settings(), want)
	}

	// Only the keys given change.
	laptop.client.ChangeSettings(protocol.SettingsChange{ReadReceipts: ptr(true)})
	want.ReadReceipts = true
	laptop.waitFor("read receipts on", func() bool { return reflect.DeepEqual(laptop.client.Settings(), want) })

	// Kept across a restart, offline.
	path := phone.path
	phone.close()
	again := newProfile(t, env.URL, "alice", path)
	if got := again.client.Settings(); got.Name != "Alice Liddell" || got.LastSeen != protocol.LastSeenNobody {
		t.Fatalf("after a restart, offline: %+v", got)
	}
	// Online, the phone learns the change it missed.
	again.startOnline()
	again.waitFor("the change made while away", func() bool { return reflect.DeepEqual(again.client.Settings(), want) })
}

// A name the client knows the server refuses is refused at once; one the
// server refuses comes back as an ErrorEvent, changing nothing.
func TestRefusedSettingsAreReported(t *testing.T) {
	env := servertest.Start(t, func(c *server.Config) {
		c.People = chat.DefaultPeopleLimits
		c.People.MaxName = 5
	})
	alice := newProfile(t, env.URL, "alice", "").startOnline()
	alice.client.ChangeSettings(protocol.SettingsChange{Name: ptr("a\x07b")})
	alice.waitEvent("the refusal of a control character", isError("settings"))
	alice.client.ChangeSettings(protocol.SettingsChange{Name: ptr("Alexandra")})
	e := alice.waitEvent("the server's refusal", isError("settings")).(ErrorEvent)
	var perr *protocol.Error
	if !errors.As(e.Err, &perr) || perr.Code != protocol.CodeInvalid {
		t.Fatalf("refusal %v, want invalid", e.Err)
	}
	if got := alice.client.Settings().Name; got != "" {
		t.Fatalf("the refused name was kept: %q", got)
	}
	alice.client.Block("alice")
	alice.waitEvent("the refusal to block oneself", isError("block"))
}

// A blocked user's sends into the direct chat are refused; the blocker's
// other device learns of the block; an unblock lifts it.
func TestBlockRefusesTheOthersSend(t *testing.T) {
	env := servertest.Start(t)
	dm := conv(t, "alice", "mallory")
	alice := newProfile(t, env.URL, "alice", "").startOnline()
	phone := newProfile(t, env.URL, "alice", "").startOnline()
	mallory := newProfile(t, env.URL, "mallory", "").startOnline()
	if _, err := mallory.client.Send(dm, "hello alice"); err != nil {
		t.Fatal(err)
	}
	alice.waitFor("mallory's message", func() bool { return len(alice.messages(dm)) == 1 })

	alice.client.Block("mallory")
	e := alice.waitEvent("the block answered", isSettings("block")).(SettingsChanged)
	if e.User != "mallory" || !slices.Equal(alice.client.Blocked(), []string{"mallory"}) {
		t.Fatalf("after the block: event %+v, blocked %v", e, alice.client.Blocked())
	}
	phone.waitFor("the block on the phone", func() bool { return slices.Equal(phone.client.Blocked(), []string{"mallory"}) })

	if _, err := mallory.client.Send(dm, "are you there?"); err != nil {
		t.Fatal(err)
	}
	refused := mallory.waitEvent("the send refused", func(e Event) bool { _, ok := e.(SendRefused); return ok }).(SendRefused)
	if refused.Conv != dm || refused.Body != "are you there?" {
		t.Fatalf("refused %+v", refused)
	}
	if n := len(serverHistory(t, env, dm)); n != 1 {
		t.Fatalf("the server stores %d messages, want the one before the block", n)
	}

	alice.client.Unblock("mallory")
	alice.waitEvent("the unblock answered", isSettings("unblock"))
	if got := alice.client.Blocked(); len(got) != 0 {
		t.Fatalf("blocked after the unblock: %v", got)
	}
	if _, err := mallory.client.Send(dm, "friends again"); err != nil {
		t.Fatal(err)
	}
	alice.waitFor("mallory's message after the unblock", func() bool { return len(alice.messages(dm)) == 2 })
}

// The presence of a watched peer: online with its name, then offline
// with the time it went; asked again on every connection, and unknown
// while there is none.
func TestPresenceOfAPeerGoingOffline(t *testing.T) {
	env := servertest.Start(t)
	dm := conv(t, "alice", "bob")
	alice := newProfile(t, env.URL, "alice", "").startOnline()
	bob := newProfile(t, env.URL, "bob", "").startOnline()
	bob.client.ChangeSettings(protocol.SettingsChange{Name: ptr("Bob")})
	bob.waitEvent("bob's name", isSettings("settings"))
	if _, err := bob.client.Send(dm, "hi"); err != nil {
		t.Fatal(err)
	}
	bob.waitOutboxEmpty()

	alice.client.WatchPresence([]string{"bob", "alice", "bob", "Not An Id"})
	alice.waitFor("bob online", func() bool {
		p, live := alice.client.Presence("bob")
		return live && p.Online && p.Name == "Bob"
	})
	if n := alice.client.sentCount("presence"); n != 1 {
		t.Fatalf("%d presence requests, want 1", n)
	}
	alice.client.WatchPresence([]string{"bob"}) // the same list: nothing to ask
	before := time.Now().UnixMilli()
	bob.stop()
	alice.waitFor("bob gone", func() bool {
		p, live := alice.client.Presence("bob")
		return live && !p.Online && p.LastSeen >= before-1000 && p.Name == "Bob"
	})

	// A new connection asks again; without one, nothing is known live.
	alice.net.refuse.Store(true)
	alice.net.cut()
	alice.waitFor("offline", func() bool { return alice.client.Conn().State != Online })
	if p, live := alice.client.Presence("bob"); live || p.Name != "Bob" {
		t.Fatalf("offline: presence %+v live %v, want the name only", p, live)
	}
	alice.net.refuse.Store(false)
	alice.client.Reconnect()
	alice.waitFor("bob's presence again", func() bool {
		_, live := alice.client.Presence("bob")
		return live && alice.client.sentCount("presence") == 2
	})
	// The name is kept across a restart.
	path := alice.path
	alice.close()
	if got := newProfile(t, env.URL, "alice", path).client.Name("bob"); got != "Bob" {
		t.Fatalf("after a restart, bob's name is %q", got)
	}
}

// A peer one shares no conversation with is a stranger until the first
// message: then its presence is asked again, and shows.
func TestPresenceAfterTheFirstMessage(t *testing.T) {
	env := servertest.Start(t)
	alice := newProfile(t, env.URL, "alice", "").startOnline()
	newProfile(t, env.URL, "bob", "").startOnline()
	alice.client.WatchPresence([]string{"bob"})
	alice.waitFor("the stranger's answer", func() bool {
		p, live := alice.client.Presence("bob")
		return live && p == protocol.Stranger("bob")
	})
	if _, err := alice.client.Send(conv(t, "alice", "bob"), "hi bob"); err != nil {
		t.Fatal(err)
	}
	alice.waitFor("bob online", func() bool {
		p, live := alice.client.Presence("bob")
		return live && p.Online
	})
	if n := alice.client.sentCount("presence"); n != 2 {
		t.Fatalf("%d presence requests, want 2: the watch list and once again after the first message", n)
	}
}

// A first message from someone the user never wrote to is a request,
// kept by the device; the user's reply ends it.
func TestRequestFlagIsStored(t *testing.T) {
	env := servertest.Start(t)
	dm := conv(t, "alice", "mallory")
	alice := newProfile(t, env.URL, "alice", "").startOnline()
	env.Dial(t, "mallory", "m").Send(dm, "m1", "buy my stuff")
	alice.waitFor("the request", func() bool {
		s, ok := alice.session(dm)
		return ok && s.Request
	})
	list, _, err := alice.client.Sessions("")
	if err != nil || len(list) != 1 || !list[0].Request {
		t.Fatalf("the list: %+v, %v; want the request", list, err)
	}
	if _, err := alice.client.Send(dm, "no thanks"); err != nil {
		t.Fatal(err)
	}
	alice.waitFor("the reply to end the request", func() bool {
		s, _ := alice.session(dm)
		return !s.Request && s.WriteSeq == 2
	})
	// The server agrees, on a fresh device.
	fresh := newProfile(t, env.URL, "alice", "").startOnline()
	fresh.waitFor("the chat without request", func() bool {
		s, ok := fresh.session(dm)
		return ok && !s.Request && s.WriteSeq == 2
	})
}
