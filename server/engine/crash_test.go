package engine_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/engine"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/server/store/memstore"
	"github.com/imcore/im/server/store/sqlitestore"
	"github.com/imcore/im/session"
)

// errCrashed is what the failing backend answers every derived write with.
var errCrashed = errors.New("injected: the process died before the derived rows were written")

// crashingBackend is a backend whose derived writes (Apply) fail from the
// moment crash is set, as if the process died right after each append:
// the log keeps every message, the derived rows never land.
type crashingBackend struct {
	store.Backend
	crashed atomic.Bool
	dropped atomic.Int64 // Apply calls refused
}

func (b *crashingBackend) Apply(ctx context.Context, d store.Derived) error {
	if b.crashed.Load() {
		b.dropped.Add(1)
		return errCrashed
	}
	return b.Backend.Apply(ctx, d)
}

// backendKind opens a backend, and another handle on the same data as if
// the process had started again.
type backendKind struct {
	name string
	open func(t *testing.T) (first store.Backend, reopen func() store.Backend)
}

var backendKinds = []backendKind{
	{"memory", func(t *testing.T) (store.Backend, func() store.Backend) {
		m := memstore.New()
		return m, func() store.Backend { return m.Reopen() }
	}},
	{"sqlite", func(t *testing.T) (store.Backend, func() store.Backend) {
		path := filepath.Join(t.TempDir(), "im.db")
		open := func() store.Backend {
			s, err := sqlitestore.Open(path, sqlitestore.Options{})
			if err != nil {
				t.Fatalf("open %s: %v", path, err)
			}
			return s
		}
		return open(), open
	}},
}

// The scenario's users and conversations.
const (
	alice, bob, carol, dave = "alice", "bob", "carol", "dave"
	dAB, dAC, dBD           = "d:alice:bob", "d:alice:carol", "d:bob:dave"
	gTeam                   = "g:team"
)

var everyone = []string{alice, bob, carol, dave}

// TestCrashBetweenAppendAndDerivedIsRepaired runs one scenario twice on
// each backend: once without a fault, once with the process "dying" after
// every append of a stretch of sends and group changes (their derived
// rows never written), then starting again on the same data. After the
// restart's repair, and after more traffic on top, the pending rows, the
// boundaries, the sessions and the unread totals of every user equal those
// of the run without the fault, and no user's session clock went back.
func TestCrashBetweenAppendAndDerivedIsRepaired(t *testing.T) {
	for _, kind := range backendKinds {
		t.Run(kind.name, func(t *testing.T) {
			clean := runScenario(t, kind, false)
			crashed := runScenario(t, kind, true)
			compareStates(t, clean, crashed)
		})
	}
}

// state is what a run leaves that a user can observe, timestamps aside.
type state struct {
	sessions map[string][]protocol.Session // by user, sorted by conv
	totals   map[string]int64              // by user
	pending  map[string][]store.PendingDelivery
	receipts map[string][]protocol.MemberReceipt // by conv
	groups   map[string]store.GroupState
}

// runScenario plays the scenario on a fresh backend of kind, crashing in
// the middle when crash is set, and returns the state it ends in.
func runScenario(t *testing.T, kind backendKind, crash bool) state {
	t.Helper()
	ctx := t.Context()
	first, reopen := kind.open(t)
	faulty := &crashingBackend{Backend: first}
	var clock atomic.Int64
	clock.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
	opts := engine.Options{
		Now:    func() time.Time { return time.UnixMilli(clock.Add(1)) },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	e, err := engine.New(ctx, faulty, opts)
	if err != nil {
		t.Fatal(err)
	}
	s := &scenario{t: t, e: e}

	// Before the fault: chats, a group, marks and session operations,
	// all acknowledged (marks and operations are answered once written).
	s.createTeam()
	s.sendN(dAB, alice, 3)
	s.sendN(dAB, bob, 1)
	s.sendN(dAC, carol, 2)
	s.sendN(gTeam, bob, 2)
	s.mark(bob, store.MarkRead, dAB, 2)
	s.mark(carol, store.MarkDelivered, gTeam, 3)
	s.op(alice, dAC, session.OpPin, session.OpArgs{})
	s.op(bob, gTeam, session.OpMute, session.OpArgs{})
	before := s.cursors()

	// The stretch the fault cuts short: appends and group changes are
	// acknowledged once in the log; what derives from them is not written.
	faulty.crashed.Store(crash)
	s.sendN(dAB, alice, 2)
	s.sendN(dBD, dave, 3)
	s.sendN(gTeam, carol, 2)
	s.changeGroup(alice, []string{dave}, nil)
	s.sendN(gTeam, dave, 1)
	s.changeGroup(alice, nil, []string{carol})
	s.sendN(gTeam, alice, 2)
	s.sendN(dAC, alice, 1)

	if crash {
		if err := e.Close(); err == nil {
			t.Fatal("closing after the crash: want an error saying derived rows were not written")
		}
		if faulty.dropped.Load() == 0 {
			t.Fatal("the fault dropped no derived write: the test crashed nothing")
		}
		if err := checkUnrepaired(ctx, reopen()); err != nil {
			t.Fatal(err)
		}
		// The restart: a new engine on the same data repairs, then serves.
		e, err = engine.New(ctx, reopen(), opts)
		if err == nil {
			err = e.Repair(ctx)
		}
		if err != nil {
			t.Fatalf("restart: %v", err)
		}
		s.e = e
		for user, c := range s.cursors() {
			if c < before[user] {
				t.Errorf("%s's session clock went back from %d to %d", user, before[user], c)
			}
		}
	}

	// After: more traffic over the repaired state.
	s.mark(bob, store.MarkRead, dAB, 100)
	s.mark(dave, store.MarkDelivered, gTeam, 100)
	s.mark(alice, store.MarkRead, dAC, 100)
	s.sendN(dBD, bob, 1)
	s.op(dave, dBD, session.OpMarkUnread, session.OpArgs{})
	s.sendN(gTeam, bob, 1)

	out := s.observe()
	if err := e.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	return out
}

// checkUnrepaired makes sure the fault left work for the repair.
func checkUnrepaired(ctx context.Context, be store.Backend) error {
	defer be.Close()
	convs, err := be.Unrepaired(ctx)
	if err != nil {
		return err
	}
	if len(convs) == 0 {
		return errors.New("after the crash no conversation is behind its log: the fault cut nothing short")
	}
	return nil
}

// scenario drives an engine, failing the test on any error.
type scenario struct {
	t    *testing.T
	e    *engine.Engine
	sent int
}

func (s *scenario) sendN(conv, from string, n int) {
	s.t.Helper()
	for range n {
		s.sent++
		req := store.AppendRequest{Msg: protocol.Message{Conv: conv, MsgID: fmt.Sprintf("m%d", s.sent), From: from,
			Body: fmt.Sprintf("message %d", s.sent), ClientTS: int64(s.sent)}}
		if conv == gTeam {
			g, err := s.e.Group(s.t.Context(), gTeam)
			if err != nil {
				s.t.Fatal(err)
			}
			req.Members, req.MembersVersion = g.Members, g.Version
		}
		if _, err := s.e.Append(s.t.Context(), req); err != nil {
			s.t.Fatalf("append to %s from %s: %v", conv, from, err)
		}
	}
}

func (s *scenario) createTeam() {
	s.t.Helper()
	s.groupChange(store.GroupChange{Conv: gTeam, Create: true, Creator: alice, Title: "team", Add: []string{alice, bob, carol}}, alice)
}

func (s *scenario) changeGroup(by string, add, remove []string) {
	s.t.Helper()
	g, err := s.e.Group(s.t.Context(), gTeam)
	if err != nil {
		s.t.Fatal(err)
	}
	s.groupChange(store.GroupChange{Conv: gTeam, Version: g.Version, Add: add, Remove: remove}, by)
}

func (s *scenario) groupChange(req store.GroupChange, by string) {
	s.t.Helper()
	s.sent++
	req.Msg = protocol.Message{MsgID: fmt.Sprintf("sys%d", s.sent), From: by, Body: "a change", Kind: protocol.KindSystem}
	if _, err := s.e.ChangeGroup(s.t.Context(), req); err != nil {
		s.t.Fatalf("change %s: %v", req.Conv, err)
	}
}

func (s *scenario) mark(user string, kind store.MarkKind, conv string, seq int64) {
	s.t.Helper()
	if _, err := s.e.Mark(s.t.Context(), user, kind, []protocol.Mark{{Conv: conv, Seq: seq}}); err != nil {
		s.t.Fatalf("mark by %s: %v", user, err)
	}
}

func (s *scenario) op(user, conv string, op session.Op, args session.OpArgs) {
	s.t.Helper()
	if _, err := s.e.SessionOp(s.t.Context(), user, conv, op, args); err != nil {
		s.t.Fatalf("%s by %s: %v", op, user, err)
	}
}

// cursors returns each user's newest session timestamp.
func (s *scenario) cursors() map[string]int64 {
	s.t.Helper()
	out := map[string]int64{}
	for _, u := range everyone {
		page, err := s.e.Sync(s.t.Context(), u, store.SyncQuery{Limit: 1000})
		if err != nil {
			s.t.Fatal(err)
		}
		out[u] = page.Cursor
	}
	return out
}

// observe reads everything a user can see, timestamps aside.
func (s *scenario) observe() state {
	s.t.Helper()
	ctx := s.t.Context()
	st := state{sessions: map[string][]protocol.Session{}, totals: map[string]int64{},
		pending: map[string][]store.PendingDelivery{}, receipts: map[string][]protocol.MemberReceipt{},
		groups: map[string]store.GroupState{}}
	for _, u := range everyone {
		page, err := s.e.Sync(ctx, u, store.SyncQuery{Limit: 1000})
		if err != nil {
			s.t.Fatal(err)
		}
		for _, ss := range page.Sessions {
			ss.ActiveTS, ss.WriteTS = 0, 0
			if ss.LastMsg != nil {
				m := *ss.LastMsg
				m.ServerTS = 0
				ss.LastMsg = &m
			}
			st.sessions[u] = append(st.sessions[u], ss)
		}
		slices.SortFunc(st.sessions[u], func(a, b protocol.Session) int { return cmp.Compare(a.Conv, b.Conv) })
		st.totals[u] = page.TotalUnread
		if st.pending[u], err = s.e.Pending(ctx, u); err != nil {
			s.t.Fatal(err)
		}
	}
	for _, conv := range []string{dAB, dAC, dBD, gTeam} {
		r, err := s.e.Receipts(ctx, conv)
		if err != nil {
			s.t.Fatal(err)
		}
		st.receipts[conv] = r
	}
	g, err := s.e.Group(ctx, gTeam)
	if err != nil {
		s.t.Fatal(err)
	}
	st.groups[gTeam] = g
	return st
}

// asJSON renders v for a failure message.
func asJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// compareStates requires the crashed run to end where the clean one did.
func compareStates(t *testing.T, clean, crashed state) {
	t.Helper()
	if len(clean.sessions[alice]) == 0 || len(clean.pending[dave])+len(clean.pending[carol]) == 0 {
		t.Fatalf("the clean run left too little to compare: sessions %v, pending %v", clean.sessions, clean.pending)
	}
	for _, u := range everyone {
		if !reflect.DeepEqual(clean.sessions[u], crashed.sessions[u]) {
			t.Errorf("%s's sessions:\n clean   %s\n crashed %s", u, asJSON(clean.sessions[u]), asJSON(crashed.sessions[u]))
		}
		if clean.totals[u] != crashed.totals[u] {
			t.Errorf("%s's total unread: clean %d, crashed %d", u, clean.totals[u], crashed.totals[u])
		}
		if !reflect.DeepEqual(clean.pending[u], crashed.pending[u]) {
			t.Errorf("%s's pending rows:\n clean   %+v\n crashed %+v", u, clean.pending[u], crashed.pending[u])
		}
	}
	for conv, r := range clean.receipts {
		if !reflect.DeepEqual(r, crashed.receipts[conv]) {
			t.Errorf("%s's boundaries:\n clean   %+v\n crashed %+v", conv, r, crashed.receipts[conv])
		}
	}
	if !reflect.DeepEqual(clean.groups, crashed.groups) {
		t.Errorf("groups:\n clean   %+v\n crashed %+v", clean.groups, crashed.groups)
	}
}
