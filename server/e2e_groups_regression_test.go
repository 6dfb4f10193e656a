package server_test

// Regression tests for group bugs found in review: each failed before its
// fix.

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/time/rate"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server"
	"github.com/imcore/im/server/servertest"
)

// TestGroupRemovedMemberUnreadIsCleared: read and every session_op on a
// group are forbidden once removed, so the unread a member had when removed
// is cleared then; it must not stay in total_unread for good.
func TestGroupRemovedMemberUnreadIsCleared(t *testing.T) {
	env := servertest.Start(t)
	alice := env.Dial(t, "alice", "a")
	bob := env.Dial(t, "bob", "b")
	g := alice.CreateGroup(protocol.CreateGroup{Title: "team", Members: []string{"bob", "carol"}})
	alice.Send(g.Conv, "m1", "one")
	alice.Send(g.Conv, "m2", "two")
	if page := bob.Sync(protocol.Sync{Since: 0, Limit: 1000}); page.TotalUnread != 2 {
		t.Fatalf("bob's total_unread before removal = %d, want 2 (the creation is an event)", page.TotalUnread)
	}
	alice.GroupOp(protocol.GroupOp{Conv: g.Conv, Op: protocol.GroupRemove, Users: []string{"bob"}})

	// Everything bob could do to clear it:
	readAns := bob.Request(&protocol.Read{Marks: []protocol.Mark{{Conv: g.Conv, Seq: 4}}})
	delAns := bob.Request(&protocol.SessionOp{Conv: g.Conv, Op: "delete"})
	page := bob.Sync(protocol.Sync{Since: 0, Limit: 1000})
	if page.TotalUnread != 0 {
		s, _ := servertest.FindSession(page, g.Conv)
		t.Errorf("removed bob's total_unread = %d forever (group session unread %d); read answered %s, delete answered %s",
			page.TotalUnread, s.UnreadCount, servertest.Describe(readAns), servertest.Describe(delAns))
	}
}

// TestGroupCreateRetryAfterLeavingIsForbidden: a create_group repeated
// with its key after the creator left must not tell it the group's current
// title and members.
func TestGroupCreateRetryAfterLeavingIsForbidden(t *testing.T) {
	env := servertest.Start(t)
	alice := env.Dial(t, "alice", "a")
	bob := env.Dial(t, "bob", "b")
	g := alice.CreateGroup(protocol.CreateGroup{Title: "team", Members: []string{"bob"}, Key: "k1"})
	alice.GroupOp(protocol.GroupOp{Conv: g.Conv, Op: protocol.GroupLeave})
	bob.GroupOp(protocol.GroupOp{Conv: g.Conv, Op: protocol.GroupRename, Title: "secret plans"})
	bob.GroupOp(protocol.GroupOp{Conv: g.Conv, Op: protocol.GroupAdd, Users: []string{"carol"}})

	ans := alice.Request(&protocol.CreateGroup{Title: "team", Members: []string{"bob"}, Key: "k1"})
	if got, ok := ans.(*protocol.Group); ok && got.Conv == g.Conv {
		t.Errorf("alice, who left %s, retried her create and was told its current state: %s", g.Conv, servertest.Describe(ans))
	}
	// And every other frame about it is forbidden for her.
	alice.RequestError(&protocol.ReceiptsRequest{Conv: g.Conv}, protocol.CodeForbidden)
}

// TestGroupRemovedMemberSessionStaysAsItWas: a removed member's session
// does not follow the group: a later rename, a tick rise over a message it
// sent before its removal, change neither its title, nor its ticks, nor
// its active_ts.
func TestGroupRemovedMemberSessionStaysAsItWas(t *testing.T) {
	env := servertest.Start(t)
	alice := env.Dial(t, "alice", "a")
	bob := env.Dial(t, "bob", "b")
	carol := env.Dial(t, "carol", "c")
	g := alice.CreateGroup(protocol.CreateGroup{Title: "team", Members: []string{"bob", "carol"}})
	bob.Send(g.Conv, "b1", "from bob")                                                              // seq 2
	alice.GroupOp(protocol.GroupOp{Conv: g.Conv, Op: protocol.GroupRemove, Users: []string{"bob"}}) // seq 3
	after := bob.Sync(protocol.Sync{Since: 0, Limit: 1000})
	before, _ := servertest.FindSession(after, g.Conv)

	alice.GroupOp(protocol.GroupOp{Conv: g.Conv, Op: protocol.GroupRename, Title: "without bob"}) // seq 4
	carol.RequestOK(&protocol.Read{Ref: protocol.Ref{ID: "rd"}, Marks: []protocol.Mark{{Conv: g.Conv, Seq: 4}}})

	if inc := bob.Sync(protocol.Sync{Since: after.Cursor, Limit: 1000}); len(inc.Sessions) > 0 {
		t.Errorf("removed bob's session changed after his removal: incremental sync returns %s", servertest.Describe(inc))
	}
	now, _ := servertest.FindSession(bob.Sync(protocol.Sync{Since: 0, Limit: 1000}), g.Conv)
	if now.Title != before.Title {
		t.Errorf("removed bob's session title = %q, want %q as when he was removed (he learns of the rename)", now.Title, before.Title)
	}
	if now.Ticks != before.Ticks {
		t.Errorf("removed bob's session ticks = %+v, were %+v at removal (write_seq %d): he follows the group's reads", now.Ticks, before.Ticks, now.WriteSeq)
	}
}

// TestGroupConcurrentChangersAllSucceed: eight members adding users one at
// a time while another sends. Every op is valid and must succeed, however
// the changes interleave (before the group lock, a write computed from
// members that changed meanwhile was retried a bounded number of times and
// then answered internal).
func TestGroupConcurrentChangersAllSucceed(t *testing.T) {
	env := servertest.Start(t, func(cfg *server.Config) {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	})
	alice := env.Dial(t, "alice", "laptop")
	adders := []string{"alice", "bob", "dave", "erin", "frank", "grace", "heidi", "ivan"}
	g := alice.CreateGroup(protocol.CreateGroup{Title: "busy", Members: append([]string{"carol"}, adders[1:]...)})
	alice.Send(g.Conv, "warm", "warm the read statements") // see TestReviewColdGroupReadsDeadlockReaderPool
	alice.RequestOK(&protocol.ReceiptsRequest{Conv: g.Conv})

	var mu sync.Mutex
	var failures []string
	var wg sync.WaitGroup
	for _, u := range adders {
		wg.Go(func() {
			c := env.Dial(servertest.Async{TB: t}, u, "racer")
			// Each change waits behind the other racers' changes of a
			// group growing to a hundred members, each of which changes
			// every member's session: on a loaded machine that is more
			// than one Timeout. The bound is for a hang.
			c.Patience = 3 * servertest.Timeout
			for i := range 12 {
				f := c.Request(&protocol.GroupOp{Conv: g.Conv, Op: protocol.GroupAdd, Users: []string{fmt.Sprintf("%s-%02d", u, i)}})
				if _, ok := f.(*protocol.Group); !ok {
					mu.Lock()
					failures = append(failures, u+": "+servertest.Describe(f))
					mu.Unlock()
				}
			}
		})
	}
	wg.Go(func() {
		c := env.Dial(servertest.Async{TB: t}, "carol", "racer")
		c.Patience = 3 * servertest.Timeout // her sends wait behind the changes too
		for i := range 24 {
			f := c.Request(&protocol.Send{Conv: g.Conv, MsgID: fmt.Sprintf("c%02d", i), Body: "busy"})
			if _, ok := f.(*protocol.Sent); !ok {
				mu.Lock()
				failures = append(failures, "carol: "+servertest.Describe(f))
				mu.Unlock()
			}
		}
	})
	wg.Wait()
	if len(failures) > 0 {
		t.Errorf("%d valid requests refused under modest contention:\n%v", len(failures), failures)
	}
}

// TestGroupReplayStopsAtRemoval: a member removed while its replay is
// under way (a backlog, a slow device) is not pushed what was sent after
// its removal: the replay stops at each conversation's newest seq when the
// pending rows were read. It is pushed the removal's own message, once,
// live (held back until its replay is done), and nothing stored after it.
func TestGroupReplayStopsAtRemoval(t *testing.T) {
	env := servertest.Start(t, func(cfg *server.Config) {
		cfg.Gateway.QueueLen = 2
		cfg.Gateway.Limits.MaxBody = 60000
		cfg.Gateway.RateLimit = rate.Inf
	})
	alice := env.Dial(t, "alice", "a")
	g := alice.CreateGroup(protocol.CreateGroup{Title: "team", Members: []string{"bob", "carol"}})
	big := strings.Repeat("x", 60000)
	for i := range 450 { // bob is offline: a backlog of ~27 MB
		alice.Write(&protocol.Send{Ref: protocol.Ref{ID: fmt.Sprintf("s%d", i)}, Conv: g.Conv, MsgID: fmt.Sprintf("m%03d", i), Body: big})
	}
	alice.Send(g.Conv, "last-before", "last before the removal")

	// bob's device says hello and then reads nothing for a while: its
	// replay fills the socket buffers and waits.
	ws, _, err := websocket.DefaultDialer.Dial(env.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if err := ws.WriteMessage(websocket.TextMessage, protocol.MustEncode(&protocol.Hello{Ref: protocol.Ref{ID: "h"}, Protocol: protocol.Version, User: "bob", Device: "slow"})); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ws.ReadMessage(); err != nil { // welcome
		t.Fatal(err)
	}
	time.Sleep(time.Second)

	alice.GroupOp(protocol.GroupOp{Conv: g.Conv, Op: protocol.GroupRemove, Users: []string{"bob"}})
	removal := alice.Expect("the removal message", func(f protocol.Frame) bool {
		m, ok := f.(*protocol.MsgPush)
		return ok && m.Msg.Conv == g.Conv && m.Msg.Kind == protocol.KindSystem && m.Msg.Body == "alice removed bob"
	}).(*protocol.MsgPush).Msg
	if removal.From != "alice" {
		t.Fatalf("removal message %s", servertest.JSON(removal))
	}
	secret := alice.Send(g.Conv, "secret", "sent after bob was removed")
	if secret.Seq != removal.Seq+1 {
		t.Fatalf("secret at seq %d, the removal at %d", secret.Seq, removal.Seq)
	}

	// bob reads on: until the message of his removal comes (his replay of
	// the backlog may stall for seconds on a busy machine), then until
	// nothing more comes for 3 s.
	var leaked, told []string
	for {
		quiet := 3 * time.Second
		if len(told) == 0 {
			quiet = 60 * time.Second
		}
		ws.SetReadDeadline(time.Now().Add(quiet))
		_, data, err := ws.ReadMessage()
		if err != nil {
			break
		}
		f, _, perr := protocol.DecodeServerFrame(data)
		if perr != nil {
			continue
		}
		m, ok := f.(*protocol.MsgPush)
		switch {
		case !ok || m.Msg.Conv != g.Conv || m.Msg.Seq < removal.Seq:
		case m.Msg == removal:
			told = append(told, fmt.Sprintf("seq %d %q", m.Msg.Seq, m.Msg.Body))
		default:
			leaked = append(leaked, fmt.Sprintf("seq %d %q %q", m.Msg.Seq, m.Msg.MsgID, truncateBody(m.Msg.Body)))
		}
	}
	if len(leaked) > 0 {
		t.Errorf("removed bob was pushed, by his replay or live, messages stored after his removal: %v", leaked)
	}
	if len(told) != 1 {
		t.Errorf("removed bob was pushed the message of his removal %d times (%v), want once", len(told), told)
	}
}

func truncateBody(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
