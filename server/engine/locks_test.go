package engine_test

import (
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/engine"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/server/store/memstore"
	"github.com/imcore/im/session"
)

func newMemEngine(t *testing.T) *engine.Engine {
	t.Helper()
	e, err := engine.New(t.Context(), memstore.New(), engine.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// A send to a group of 1,000 members enters each user shard's critical
// section a bounded number of times, not once per member: the members'
// sessions are changed shard by shard.
func TestGroupSendTo1000TakesNoLockPerMember(t *testing.T) {
	const members = 1000
	e := newMemEngine(t)
	ctx := t.Context()
	users := make([]string, members)
	for i := range users {
		users[i] = fmt.Sprintf("u%04d", i)
	}
	const conv = "g:thousand"
	res, err := e.ChangeGroup(ctx, store.GroupChange{Conv: conv, Create: true, Creator: users[0], Title: "all", Add: users,
		Msg: protocol.Message{MsgID: "create", From: users[0], Body: "created", Kind: protocol.KindSystem}})
	if err != nil {
		t.Fatal(err)
	}
	send := func(id string) store.AppendResult {
		t.Helper()
		r, err := e.Append(ctx, store.AppendRequest{Msg: protocol.Message{Conv: conv, MsgID: id, From: users[1], Body: id},
			Members: res.Group.Members, MembersVersion: res.Group.Version})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	send("warm") // every member's state in memory, as in a server that runs

	before := e.UserLocks()
	sent := send("counted")
	taken := e.UserLocks() - before
	t.Logf("a send to %d members took %d user shard locks (%d shards)", members, taken, engine.UserShards)
	if limit := uint64(2 * engine.UserShards); taken > limit {
		t.Errorf("a send to %d members took %d user shard locks, want at most %d (one pass over %d shards to load, one to change, not one per member)",
			members, taken, limit, engine.UserShards)
	}
	if len(sent.Members) != members {
		t.Fatalf("the message was derived for %d members, want %d", len(sent.Members), members)
	}
	// It did its work for every member: each one's session holds it.
	for _, u := range []string{users[0], users[499], users[members-1]} {
		page, err := e.Sync(ctx, u, store.SyncQuery{Conv: conv, Limit: 1})
		if err != nil || len(page.Sessions) != 1 {
			t.Fatalf("sync of %s: %+v, %v", u, page, err)
		}
		if s := page.Sessions[0]; s.WriteSeq != sent.Msg.Seq {
			t.Errorf("%s's session write_seq %d, want %d", u, s.WriteSeq, sent.Msg.Seq)
		}
	}
}

// Sends, marks, session operations and reads of many users interleave;
// under -race this shows that no user's state is written outside its
// critical section (the engine also panics on a session changed without
// its shard's lock held), and at the end every user's unread total is
// the sum its sessions say.
func TestUserStateChangesOnlyUnderItsLock(t *testing.T) {
	const nUsers, workers, opsPerWorker = 24, 8, 150
	e := newMemEngine(t)
	ctx := t.Context()
	users := make([]string, nUsers)
	for i := range users {
		users[i] = fmt.Sprintf("u%02d", i)
	}
	groups := []string{"g:a", "g:b"}
	for i, g := range groups {
		if _, err := e.ChangeGroup(ctx, store.GroupChange{Conv: g, Create: true, Creator: users[i], Title: g, Add: users[i : i+12],
			Msg: protocol.Message{MsgID: "create-" + g, From: users[i], Body: "created", Kind: protocol.KindSystem}}); err != nil {
			t.Fatal(err)
		}
	}
	ops := []session.Op{session.OpPin, session.OpUnpin, session.OpMute, session.OpUnmute, session.OpMarkUnread, session.OpDelete}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := range opsPerWorker {
				me, peer := users[rng.IntN(nUsers)], users[rng.IntN(nUsers)]
				conv, ok := protocol.DirectConv(me, peer)
				if !ok || rng.IntN(4) == 0 {
					g := groups[rng.IntN(len(groups))]
					grp, err := e.Group(ctx, g)
					if err != nil {
						errs <- err
						return
					}
					conv, me = g, grp.Members[rng.IntN(len(grp.Members))]
				}
				var err error
				switch rng.IntN(5) {
				case 0, 1:
					var grp store.GroupState
					if conv[0] == 'g' {
						grp, err = e.Group(ctx, conv)
					}
					if err == nil {
						_, err = e.Append(ctx, store.AppendRequest{Msg: protocol.Message{Conv: conv, MsgID: fmt.Sprintf("w%d-%d", w, i), From: me, Body: "x"},
							Members: grp.Members, MembersVersion: grp.Version})
					}
				case 2:
					kind := store.MarkKind(1 + rng.IntN(2))
					_, err = e.Mark(ctx, me, kind, []protocol.Mark{{Conv: conv, Seq: int64(rng.IntN(50))}})
				case 3:
					_, err = e.SessionOp(ctx, me, conv, ops[rng.IntN(len(ops))], session.OpArgs{})
				case 4:
					_, err = e.Sync(ctx, me, store.SyncQuery{Limit: 50})
				}
				if err != nil && err != store.ErrStaleMembers {
					errs <- fmt.Errorf("worker %d op %d on %s by %s: %w", w, i, conv, me, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, u := range users {
		page, err := e.Sync(ctx, u, store.SyncQuery{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		for _, s := range page.Sessions {
			if !s.Muted && !s.Deleted {
				sum += s.UnreadCount
			}
		}
		if page.TotalUnread != sum {
			t.Errorf("%s: total unread %d, but its sessions sum to %d", u, page.TotalUnread, sum)
		}
	}
}
