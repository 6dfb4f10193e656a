package server_test

import (
	"strings"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server"
	"github.com/imcore/im/server/servertest"
)

// pageBudget is the small page budget these tests run with.
const pageBudget = 64 << 10

func smallPages(c *server.Config) {
	c.Gateway.Limits.MaxPageBytes = pageBudget
	c.Gateway.RateLimit = 1e9
}

// History pages of large messages are cut to the byte budget, keeping the
// messages nearest the bound asked from; following has_more in either
// direction reads every message once.
func TestHistoryPagesAreCutToTheByteBudget(t *testing.T) {
	env := servertest.Start(t, smallPages)
	alice := env.Dial(t, "alice", "laptop")
	const n = 30
	body := strings.Repeat("<", 4096) // 24 KB once JSON-escaped
	for i := range n {
		alice.Send("d:alice:bob", "m"+itoa(i), body)
	}
	bob := env.Dial(t, "bob", "laptop")

	var forwards []int64
	after := int64(0)
	for pages := 0; ; pages++ {
		page := bob.RequestOK(&protocol.History{Conv: "d:alice:bob", AfterSeq: &after, Limit: 200}).(*protocol.Messages)
		checkPageSize(t, page)
		for _, m := range page.Messages {
			forwards = append(forwards, m.Seq)
			after = m.Seq
		}
		if !page.HasMore {
			break
		}
		if pages > n {
			t.Fatal("has_more never ends")
		}
	}
	var backwards []int64
	before := int64(0)
	for {
		page := bob.RequestOK(&protocol.History{Conv: "d:alice:bob", BeforeSeq: before, Limit: 200}).(*protocol.Messages)
		checkPageSize(t, page)
		if len(page.Messages) == 0 {
			t.Fatal("an empty page with has_more")
		}
		if before > 0 && page.Messages[len(page.Messages)-1].Seq != before-1 {
			t.Fatalf("a page before %d ends at %d: the cut kept the wrong end", before, page.Messages[len(page.Messages)-1].Seq)
		}
		backwards = append(servertest.Seqs(page.Messages), backwards...)
		before = page.Messages[0].Seq
		if !page.HasMore {
			break
		}
	}
	for _, got := range [][]int64{forwards, backwards} {
		if len(got) != n {
			t.Fatalf("read %d messages, want %d: %v", len(got), n, got)
		}
		for i, seq := range got {
			if seq != int64(i+1) {
				t.Fatalf("seqs read %v, want 1..%d", got, n)
			}
		}
	}
	// Small messages are not cut: a page of 20 fits.
	for i := range 20 {
		alice.Send("d:alice:carol", "s"+itoa(i), "hi")
	}
	page := alice.RequestOK(&protocol.History{Conv: "d:alice:carol"}).(*protocol.Messages)
	if len(page.Messages) != 20 || page.HasMore {
		t.Fatalf("a page of 20 small messages: %d, has_more %v", len(page.Messages), page.HasMore)
	}
}

// A sync page is cut to the byte budget too; the cursor goes on from the
// last session returned, so every session comes once.
func TestSyncPagesAreCutToTheByteBudget(t *testing.T) {
	env := servertest.Start(t, smallPages)
	alice := env.Dial(t, "alice", "laptop")
	const peers = 20
	body := strings.Repeat("&", 4096)
	for i := range peers {
		peer := "p" + itoa(100+i)
		conv, _ := protocol.DirectConv("alice", peer)
		env.Dial(t, peer, "d").Send(conv, "m", body)
	}
	seen := map[string]int{}
	var since int64
	pages := 0
	for {
		page := alice.RequestOK(&protocol.Sync{Since: since, Limit: 1000}).(*protocol.Sessions)
		pages++
		size := len(protocol.MustEncode(page))
		if size > pageBudget+1024 {
			t.Fatalf("a sync page of %d bytes, budget %d", size, pageBudget)
		}
		for _, s := range page.Sessions {
			seen[s.Conv]++
		}
		if len(page.Sessions) > 0 && page.Cursor != page.Sessions[len(page.Sessions)-1].ActiveTS {
			t.Fatalf("cursor %d is not the last session's active_ts", page.Cursor)
		}
		since = page.Cursor
		if !page.HasMore {
			break
		}
	}
	if len(seen) != peers || pages < 2 {
		t.Fatalf("%d sessions in %d pages, want %d in several", len(seen), pages, peers)
	}
	for conv, n := range seen {
		if n != 1 {
			t.Fatalf("%s came %d times", conv, n)
		}
	}
}

// The receipts of a large group come in pages: has_more, then after.
func TestReceiptsPages(t *testing.T) {
	env := servertest.Start(t, func(c *server.Config) {
		smallPages(c)
		c.Gateway.Limits.MaxPageBytes = 2 << 10 // ~40 members a page
	})
	var members []string
	for i := range 99 {
		members = append(members, "member"+itoa(100+i))
	}
	alice := env.Dial(t, "alice", "laptop")
	g := alice.RequestOK(&protocol.CreateGroup{Title: "big", Members: members}).(*protocol.Group)
	var users []string
	after := ""
	for pages := 1; ; pages++ {
		r := alice.RequestOK(&protocol.ReceiptsRequest{Conv: g.Conv, After: after}).(*protocol.ReceiptsReply)
		for _, m := range r.Members {
			users = append(users, m.User)
		}
		if !r.HasMore {
			if pages < 2 {
				t.Fatalf("100 members in one page of %d bytes", 2<<10)
			}
			break
		}
		after = r.Members[len(r.Members)-1].User
	}
	if len(users) != 100 {
		t.Fatalf("%d members over the pages, want 100", len(users))
	}
	for i := 1; i < len(users); i++ {
		if users[i] <= users[i-1] {
			t.Fatalf("members out of order or repeated: %s after %s", users[i], users[i-1])
		}
	}
}

// checkPageSize fails when a page's frame is much larger than the budget.
func checkPageSize(t *testing.T, page *protocol.Messages) {
	t.Helper()
	// One message may exceed the budget alone; a page of several may not.
	if size := len(protocol.MustEncode(page)); len(page.Messages) > 1 && size > pageBudget+1024 {
		t.Fatalf("a page of %d messages is %d bytes, budget %d", len(page.Messages), size, pageBudget)
	}
}
