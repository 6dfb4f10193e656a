package client

import (
	"context"
	"testing"

	"github.com/imcore/im/server/servertest"
)

// A sub-business's chats live in a nested list behind a gateway session
// of the main list; the client follows both lists, live and by sync.
func TestNestedListIsFollowed(t *testing.T) {
	env := servertest.Start(t)
	if err := env.Server.Store().SetAccount(context.Background(), "shop", "promotions", "shop"); err != nil {
		t.Fatal(err)
	}
	dm := conv(t, "alice", "shop")
	alice := newProfile(t, env.URL, "alice", "").startOnline()
	shop := env.Dial(t, "shop", "till")
	shop.Send(dm, "s1", "sale!")

	alice.waitFor("the gateway and the nested chat", func() bool {
		main, total, _ := alice.client.Sessions("")
		nested, nestedTotal, _ := alice.client.Sessions("shop")
		return len(main) == 1 && main[0].Conv == "biz:shop" && total == 1 &&
			len(nested) == 1 && nested[0].Conv == dm && nested[0].Category == "promotions" && nestedTotal == 1
	})
	if lists, _ := alice.store.SubBizLists(); len(lists) != 1 || lists[0] != "shop" {
		t.Fatalf("lists %v", lists)
	}

	// A second message while offline: the nested list is synced on the
	// next connection too.
	alice.stop()
	shop.Send(dm, "s2", "last chance")
	alice.start()
	alice.waitFor("two unread in the nested list", func() bool {
		nested, total, _ := alice.client.Sessions("shop")
		return len(nested) == 1 && nested[0].UnreadCount == 2 && total == 2 && len(alice.messages(dm)) == 2
	})
	alice.client.MarkRead(dm, 2)
	alice.waitFor("the gateway to clear", func() bool {
		main, total, _ := alice.client.Sessions("")
		return len(main) == 1 && main[0].UnreadCount == 0 && total == 0
	})
}
