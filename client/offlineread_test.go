package client

import (
	"context"
	"fmt"
	"testing"

	"github.com/imcore/im/server/servertest"
)

// A read made while the server cannot be reached is kept in the profile
// and sent on the next connection, also after the app was restarted.
func TestReadMadeOfflineIsSentAfterRestart(t *testing.T) {
	env := servertest.Start(t)
	dm := conv(t, "alice", "bob")
	bob := env.Dial(t, "bob", "phone")
	for i := range 3 {
		bob.Send(dm, fmt.Sprintf("b%d", i), "hello")
	}
	alice := newProfile(t, env.URL, "alice", "").start()
	alice.waitFor("three unread", func() bool {
		s, ok := alice.session(dm)
		return ok && s.UnreadCount == 3 && len(alice.messages(dm)) == 3
	})
	alice.net.refuse.Store(true)
	alice.net.cut()
	alice.waitFor("offline", func() bool { return alice.client.Conn().State == Offline })
	alice.client.MarkRead(dm, 3) // the user reads the chat in the underground
	if s, _ := alice.session(dm); s.UnreadCount != 0 {
		t.Fatalf("the local session shows %d unread after the read", s.UnreadCount)
	}
	path := alice.path
	alice.close() // the user quits the app

	alice = newProfile(t, env.URL, "alice", path).startOnline()
	// Receipts goes out after what the client sends on connecting (the
	// outbox, the queue, the read marks), and the server answers in order.
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	members, err := alice.client.Receipts(ctx, dm)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range members {
		if m.User == "alice" && m.ReadSeq != 3 {
			local, _ := alice.session(dm)
			t.Fatalf("the server has alice's read at %d, want 3 (the local session shows read_seq %d, %d unread)", m.ReadSeq, local.ReadSeq, local.UnreadCount)
		}
	}
}
