package nodelink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

var secret = []byte("the deployment's secret")

// owner starts a link endpoint serving with h and returns its address.
func owner(t *testing.T, h Handler) string {
	t.Helper()
	srv := httptest.NewServer(NewServer(h, secret, slog.New(slog.DiscardHandler)))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func pool(t *testing.T) *Pool {
	p := NewPool(secret, "/", 0)
	t.Cleanup(p.Close)
	return p
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// echo answers each request with who it was served for and its frame.
var echo = HandlerFunc(func(_ context.Context, r Request) (json.RawMessage, error) {
	return json.Marshal(map[string]any{"user": r.User, "device": r.Device, "frame": r.Frame})
})

func TestForwardRelaysTheAnswer(t *testing.T) {
	addr := owner(t, echo)
	p := pool(t)
	answer, err := p.Forward(ctxT(t), addr, Request{Stream: "c1", User: "alice", Device: "phone", Frame: json.RawMessage(`{"type":"sync","id":"1"}`)})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"device":"phone","frame":{"type":"sync","id":"1"},"user":"alice"}`
	if string(answer) != want {
		t.Fatalf("answer = %s, want %s", answer, want)
	}
}

// TestStreamsKeepTheirOrder: one stream's requests are served one at a
// time in the order they were forwarded, while other streams go on.
func TestStreamsKeepTheirOrder(t *testing.T) {
	var mu sync.Mutex
	served := map[string][]int{}
	busy := map[string]bool{}
	var overlap bool
	h := HandlerFunc(func(_ context.Context, r Request) (json.RawMessage, error) {
		var n int
		if err := json.Unmarshal(r.Frame, &n); err != nil {
			return nil, err
		}
		mu.Lock()
		if busy[r.Stream] {
			overlap = true
		}
		busy[r.Stream] = true
		served[r.Stream] = append(served[r.Stream], n)
		mu.Unlock()
		runtime.Gosched() // let another request of the stream in, were it served at once
		mu.Lock()
		busy[r.Stream] = false
		mu.Unlock()
		return r.Frame, nil
	})
	addr := owner(t, h)
	p := pool(t)
	ctx := ctxT(t)
	const streams, perStream = 8, 50
	var wg sync.WaitGroup
	errs := make(chan error, streams)
	for s := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// One client connection: its frames go out one after another
			// without waiting for answers, as a pipelining client's do.
			var inner sync.WaitGroup
			results := make([]error, perStream)
			for i := range perStream {
				l, err := p.link(ctx, addr)
				if err != nil {
					errs <- err
					return
				}
				reply := make(chan envelope, 1)
				l.mu.Lock()
				l.nextID++
				id := l.nextID
				l.waiting[id] = reply
				l.mu.Unlock()
				l.writeMu.Lock()
				err = l.ws.WriteJSON(envelope{ID: id, Request: &Request{Stream: fmt.Sprint("s", s), Frame: json.RawMessage(fmt.Sprint(i))}})
				l.writeMu.Unlock()
				if err != nil {
					errs <- err
					return
				}
				inner.Add(1)
				go func() {
					defer inner.Done()
					if env, ok := <-reply; !ok || env.Error != "" {
						results[i] = fmt.Errorf("request %d: %v %q", i, ok, env.Error)
					}
				}()
			}
			inner.Wait()
			for _, err := range results {
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if overlap {
		t.Fatal("two requests of one stream were served at once")
	}
	for s := range streams {
		got := served[fmt.Sprint("s", s)]
		if len(got) != perStream {
			t.Fatalf("stream %d: %d requests served, want %d", s, len(got), perStream)
		}
		for i, n := range got {
			if n != i {
				t.Fatalf("stream %d served %v: out of order", s, got)
			}
		}
	}
}

func TestALinkWithoutTheSecretIsRefused(t *testing.T) {
	addr := owner(t, echo)
	p := NewPool([]byte("not the secret"), "/", 0)
	defer p.Close()
	_, err := p.Forward(ctxT(t), addr, Request{Frame: json.RawMessage(`{}`)})
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("Forward with a wrong secret = %v, want refused (401)", err)
	}
}

func TestTheOwnersRefusalReachesTheCaller(t *testing.T) {
	addr := owner(t, HandlerFunc(func(context.Context, Request) (json.RawMessage, error) {
		return nil, errors.New("not the owner of shard 7")
	}))
	_, err := pool(t).Forward(ctxT(t), addr, Request{Frame: json.RawMessage(`{}`)})
	var re *RemoteError
	if !errors.As(err, &re) || re.Reason != "not the owner of shard 7" {
		t.Fatalf("Forward = %v, want the owner's reason", err)
	}
}

// TestADroppedLinkFailsWhatIsInFlightAndReopens: requests in flight when
// the link drops fail with ErrLinkDown; the next request opens a new link.
func TestADroppedLinkFailsWhatIsInFlightAndReopens(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	h := HandlerFunc(func(_ context.Context, r Request) (json.RawMessage, error) {
		if string(r.Frame) == `"hold"` {
			close(entered)
			<-release
		}
		return r.Frame, nil
	})
	addr := owner(t, h)
	p := pool(t)
	ctx := ctxT(t)
	failed := make(chan error, 1)
	go func() {
		_, err := p.Forward(ctx, addr, Request{Stream: "a", Frame: json.RawMessage(`"hold"`)})
		failed <- err
	}()
	<-entered
	p.mu.Lock()
	l := p.links[addr]
	p.mu.Unlock()
	l.drop()
	if err := <-failed; !errors.Is(err, ErrLinkDown) {
		t.Fatalf("a request in flight on a dropped link: %v, want ErrLinkDown", err)
	}
	close(release)
	answer, err := p.Forward(ctx, addr, Request{Stream: "a", Frame: json.RawMessage(`"again"`)})
	if err != nil || string(answer) != `"again"` {
		t.Fatalf("after the drop: %s, %v", answer, err)
	}
}

func TestForwardGivesUpWithItsContext(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{})
	t.Cleanup(func() { close(release) })
	addr := owner(t, HandlerFunc(func(context.Context, Request) (json.RawMessage, error) {
		close(entered)
		<-release
		return nil, nil
	}))
	ctx, cancel := context.WithCancel(ctxT(t))
	p := pool(t)
	done := make(chan error, 1)
	go func() {
		_, err := p.Forward(ctx, addr, Request{Frame: json.RawMessage(`{}`)})
		done <- err
	}()
	<-entered
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Forward after its context ended = %v", err)
	}
}

// TestASilentOwnersLinkIsDropped: a node that accepted the link and then
// answers nothing, not even pings (a process stopped by SIGSTOP), fails
// the requests in flight with ErrLinkDown once the silence bound passed,
// so that the caller can ask whoever owns the shard by then.
func TestASilentOwnersLinkIsDropped(t *testing.T) {
	frozen := make(chan struct{})
	t.Cleanup(func() { close(frozen) })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		<-frozen // reads nothing: no answer, no pong
	}))
	t.Cleanup(srv.Close)
	p := NewPool(secret, "/", 200*time.Millisecond)
	t.Cleanup(p.Close)
	_, err := p.Forward(ctxT(t), strings.TrimPrefix(srv.URL, "http://"), Request{Frame: json.RawMessage(`{}`)})
	if !errors.Is(err, ErrLinkDown) {
		t.Fatalf("Forward to a silent node = %v, want ErrLinkDown", err)
	}
}

// TestASlowButLiveOwnerKeepsItsLink: an owner that takes longer than the
// silence bound to answer, but answers pings meanwhile, is waited for.
func TestASlowButLiveOwnerKeepsItsLink(t *testing.T) {
	const silence = 100 * time.Millisecond
	addr := owner(t, HandlerFunc(func(_ context.Context, r Request) (json.RawMessage, error) {
		time.Sleep(5 * silence) // the scenario: an answer five bounds late
		return r.Frame, nil
	}))
	p := NewPool(secret, "/", silence)
	t.Cleanup(p.Close)
	answer, err := p.Forward(ctxT(t), addr, Request{Frame: json.RawMessage(`"late"`)})
	if err != nil || string(answer) != `"late"` {
		t.Fatalf("Forward to a slow, live node = %s, %v; want its answer", answer, err)
	}
}
