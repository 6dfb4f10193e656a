package gateway_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/auth"
	"github.com/imcore/im/server/chat"
	"github.com/imcore/im/server/gateway"
	"github.com/imcore/im/server/hub"
	"github.com/imcore/im/server/store"
)

// markCall is one Mark the store was asked for.
type markCall struct {
	kind  store.MarkKind
	marks []protocol.Mark
}

// markStore records every Mark, raises the boundaries of one member of a
// direct chat as a store would, and holds every mark's durability until the
// test lets it go (close written).
type markStore struct {
	chat.Engine
	calls   chan markCall
	written chan struct{}

	mu     sync.Mutex
	ticks  map[string]protocol.Ticks
	member map[string]bool // "conv user": a member of that group
}

func newMarkStore() *markStore {
	return &markStore{calls: make(chan markCall, 100), written: make(chan struct{}), ticks: map[string]protocol.Ticks{}, member: map[string]bool{}}
}

func (s *markStore) Mark(_ context.Context, _ string, kind store.MarkKind, marks []protocol.Mark) (store.MarkResult, error) {
	s.calls <- markCall{kind, slices.Clone(marks)}
	var res store.MarkResult
	s.mu.Lock()
	for _, m := range marks {
		cur := s.ticks[m.Conv]
		next := cur.Merge(protocol.Ticks{DeliveredSeq: m.Seq})
		if kind == store.MarkRead {
			next = cur.Merge(protocol.Ticks{ReadSeq: m.Seq})
		}
		if next != cur {
			s.ticks[m.Conv] = next
			res.Ticks = append(res.Ticks, store.TickChange{Conv: m.Conv, Ticks: next, Members: s.membersLocked(m.Conv)})
		}
	}
	s.mu.Unlock()
	res.Written = func(ctx context.Context) error {
		select {
		case <-s.written:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return res, nil
}

func (s *markStore) Membership(_ context.Context, conv, user string) (store.Membership, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.member[conv+" "+user] {
		return store.Membership{}, store.ErrNotFound
	}
	return store.Membership{JoinedSeq: 1}, nil
}

func (s *markStore) Group(_ context.Context, conv string) (store.GroupState, error) {
	return store.GroupState{}, nil // every group exists
}

// membersLocked returns conv's members, as an owner reports them with a
// tick rise: a direct chat's two users, or a group's members set by
// setMember.
func (s *markStore) membersLocked(conv string) []string {
	if c, ok := protocol.ParseConv(conv); ok && c.Kind == protocol.ConvDirect {
		return []string{c.A, c.B}
	}
	var members []string
	for key, in := range s.member {
		if c, user, _ := strings.Cut(key, " "); c == conv && in {
			members = append(members, user)
		}
	}
	slices.Sort(members)
	return members
}

func (s *markStore) setMember(conv, user string, member bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.member[conv+" "+user] = member
}

func (s *markStore) Pending(context.Context, string) ([]store.PendingDelivery, error) {
	return nil, nil
}

// next returns the next Mark the store was asked for.
func (s *markStore) next(t *testing.T) markCall {
	t.Helper()
	select {
	case c := <-s.calls:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no Mark came")
		return markCall{}
	}
}

// wantCall checks the next Mark the store was asked for.
func (s *markStore) wantCall(t *testing.T, kind store.MarkKind, marks ...protocol.Mark) {
	t.Helper()
	got := s.next(t)
	if got.kind != kind || !slices.Equal(got.marks, marks) {
		t.Fatalf("Mark(%v, %v), want Mark(%v, %v)", got.kind, got.marks, kind, marks)
	}
}

// wantNoCall checks that no Mark was asked for since the last one seen.
func (s *markStore) wantNoCall(t *testing.T) {
	t.Helper()
	select {
	case c := <-s.calls:
		t.Fatalf("Mark(%v, %v): want none yet", c.kind, c.marks)
	default:
	}
}

// markClient is a connection that said hello, its frames read by a
// goroutine of its own.
type markClient struct {
	ws     *websocket.Conn
	frames chan protocol.Frame
	pongs  chan string
}

func dialMarks(t *testing.T, url, user string) *markClient {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	c := &markClient{ws: ws, frames: make(chan protocol.Frame, 100), pongs: make(chan string, 10)}
	ws.SetPongHandler(func(data string) error { c.pongs <- data; return nil })
	go func() {
		defer close(c.frames)
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				return
			}
			f, _, perr := protocol.DecodeServerFrame(data)
			if perr != nil {
				t.Errorf("undecodable %q", data)
				return
			}
			c.frames <- f
		}
	}()
	c.write(t, &protocol.Hello{Ref: protocol.Ref{ID: "h"}, Protocol: protocol.Version, User: user, Device: "d"})
	if f := c.next(t); f.FrameType() != "welcome" {
		t.Fatalf("hello answered %s", protocol.MustEncode(f))
	}
	return c
}

func (c *markClient) write(t *testing.T, f protocol.Frame) {
	t.Helper()
	if err := c.ws.WriteMessage(websocket.TextMessage, protocol.MustEncode(f)); err != nil {
		t.Fatal(err)
	}
}

func (c *markClient) next(t *testing.T) protocol.Frame {
	t.Helper()
	select {
	case f, ok := <-c.frames:
		if !ok {
			t.Fatal("connection lost")
		}
		return f
	case <-time.After(10 * time.Second):
		t.Fatal("no frame came")
		return nil
	}
}

// barrier returns once the server has read every frame written before it:
// a ping is answered in the order frames are read.
func (c *markClient) barrier(t *testing.T) {
	t.Helper()
	if err := c.ws.WriteControl(websocket.PingMessage, []byte("barrier"), time.Now().Add(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.pongs:
	case <-time.After(10 * time.Second):
		t.Fatal("no pong came")
	}
}

// wantStatus reads frames until a status of conv with ticks comes.
func (c *markClient) wantStatus(t *testing.T, conv string, want protocol.Ticks) {
	t.Helper()
	for {
		f := c.next(t)
		if st, ok := f.(*protocol.Status); ok && st.Conv == conv && st.DeliveredSeq == want.DeliveredSeq && st.ReadSeq == want.ReadSeq {
			return
		}
		if e, ok := f.(*protocol.ErrorFrame); ok {
			t.Fatalf("waiting for status %v: error %s", want, protocol.MustEncode(e))
		}
	}
}

// serveMarks runs a gateway over st.
func serveMarks(t *testing.T, st chat.Engine) string {
	t.Helper()
	h := hub.New()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := chat.New(st, h, protocol.DefaultLimits, log)
	srv := httptest.NewServer(gateway.New(gateway.DefaultConfig(), svc, h, auth.Dev{}, log))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

func mark(conv string, seq int64) []protocol.Mark { return []protocol.Mark{{Conv: conv, Seq: seq}} }

// Marks without id that a connection sends while its batch before them is
// still in flight are held and applied as one — the highest read, and the
// delivered mark that read does not cover — once that batch is durable,
// and the sender gets the status of the merged read.
func TestMarksWithoutIDAreCoalesced(t *testing.T) {
	const conv = "d:alice:bob"
	st := newMarkStore()
	url := serveMarks(t, st)
	alice := dialMarks(t, url, "alice")
	bob := dialMarks(t, url, "bob")

	bob.write(t, &protocol.Read{Marks: mark(conv, 1)})
	st.wantCall(t, store.MarkRead, mark(conv, 1)...) // applied at once: nothing was in flight

	for seq := int64(2); seq <= 4; seq++ {
		bob.write(t, &protocol.Delivered{Marks: mark(conv, seq)})
		if seq < 4 {
			bob.write(t, &protocol.Read{Marks: mark(conv, seq)})
		}
	}
	bob.barrier(t)
	st.wantNoCall(t) // held while the first is in flight

	close(st.written)
	st.wantCall(t, store.MarkRead, mark(conv, 3)...)
	st.wantCall(t, store.MarkDelivered, mark(conv, 4)...)
	alice.wantStatus(t, conv, protocol.Ticks{DeliveredSeq: 1, ReadSeq: 1})
	alice.wantStatus(t, conv, protocol.Ticks{DeliveredSeq: 3, ReadSeq: 3})
	alice.wantStatus(t, conv, protocol.Ticks{DeliveredSeq: 4, ReadSeq: 3})
	bob.barrier(t)
	st.wantNoCall(t)
}

// Marks without id held back apply before the connection's next frame of
// another kind, so that frames still apply in the order they came; a mark
// the server refuses is answered at once, on its own, and held marks are
// not lost with it.
func TestHeldMarksApplyBeforeTheNextFrame(t *testing.T) {
	const conv = "d:alice:bob"
	st := newMarkStore()
	url := serveMarks(t, st)
	alice := dialMarks(t, url, "alice")
	bob := dialMarks(t, url, "bob")

	bob.write(t, &protocol.Read{Marks: mark(conv, 1)})
	st.wantCall(t, store.MarkRead, mark(conv, 1)...)
	bob.write(t, &protocol.Read{Marks: mark(conv, 2)})
	bob.write(t, &protocol.Read{Marks: mark("d:alice:carol", 9)})
	if e, ok := bob.next(t).(*protocol.ErrorFrame); !ok || e.Code != protocol.CodeForbidden || e.ID != "" {
		t.Fatalf("a mark of another's chat: %s, want forbidden without id", protocol.MustEncode(e))
	}
	st.wantNoCall(t)

	bob.write(t, &protocol.Delivered{Ref: protocol.Ref{ID: "d"}, Marks: mark(conv, 5)})
	st.wantCall(t, store.MarkRead, mark(conv, 2)...) // the held read first
	st.wantCall(t, store.MarkDelivered, mark(conv, 5)...)

	close(st.written)
	for {
		if ok, isOK := bob.next(t).(*protocol.OK); isOK && ok.ID == "d" {
			break
		}
	}
	alice.wantStatus(t, conv, protocol.Ticks{DeliveredSeq: 5, ReadSeq: 2})
	st.wantNoCall(t)
}

// A held mark whose membership was lost before the merged batch applies
// is refused on its own (forbidden, without id); the other conversations'
// marks of the batch are applied.
func TestHeldMarkRefusedAloneWhenMembershipLost(t *testing.T) {
	const conv, group = "d:alice:bob", "g:team"
	st := newMarkStore()
	st.setMember(group, "bob", true)
	url := serveMarks(t, st)
	bob := dialMarks(t, url, "bob")

	bob.write(t, &protocol.Read{Marks: mark(conv, 1)})
	st.wantCall(t, store.MarkRead, mark(conv, 1)...)
	bob.write(t, &protocol.Read{Marks: []protocol.Mark{{Conv: group, Seq: 5}, {Conv: conv, Seq: 2}}})
	bob.barrier(t) // checked (a member then) and held
	st.wantNoCall(t)

	st.setMember(group, "bob", false)
	close(st.written)
	for {
		f := bob.next(t)
		if e, ok := f.(*protocol.ErrorFrame); ok {
			if e.Code != protocol.CodeForbidden || e.ID != "" {
				t.Fatalf("the mark of a group left: %s, want forbidden without id", protocol.MustEncode(e))
			}
			break
		}
	}
	st.wantCall(t, store.MarkRead, mark(conv, 2)...)
	bob.barrier(t)
	st.wantNoCall(t)
}
