package gateway_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
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
)

// racingAuth accepts every hello, and lets a test act between the hello's
// authentication and the device's registration (during would).
type racingAuth struct {
	during  func()
	mu      sync.Mutex
	revoked bool
}

func (a *racingAuth) Authenticate(_ context.Context, h *protocol.Hello) (auth.Identity, *protocol.Error) {
	if a.during != nil {
		a.during()
	}
	return auth.Identity{User: h.User, TokenEpoch: 0}, nil
}

func (a *racingAuth) RevokedSince(context.Context, int64) ([]auth.Revocation, int64, error) {
	return nil, 0, nil
}

func (a *racingAuth) Revalidate(_ context.Context, id auth.Identity) *protocol.Error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.revoked {
		return protocol.Errorf(protocol.CodeUnauthorized, "token revoked")
	}
	return nil
}

// serveGateway runs a gateway over an empty store with a.
func serveGateway(t *testing.T, a auth.Authenticator) (*gateway.Gateway, string) {
	t.Helper()
	h := hub.New()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := chat.New(panickingStore{}, h, protocol.DefaultLimits, log)
	g := gateway.New(gateway.DefaultConfig(), svc, h, a, log)
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return g, "ws" + strings.TrimPrefix(srv.URL, "http")
}

// helloAnswer says hello and returns the answer and how the connection
// then ended (nil if it stayed open).
func helloAnswer(t *testing.T, url string) (protocol.Frame, error) {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.WriteMessage(websocket.TextMessage, protocol.MustEncode(&protocol.Hello{Ref: protocol.Ref{ID: "h"}, Protocol: 1, User: "alice", Device: "d"}))
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, data, err := ws.ReadMessage()
	if err != nil {
		t.Fatalf("no answer to the hello: %v", err)
	}
	f, _, perr := protocol.DecodeServerFrame(data)
	if perr != nil {
		t.Fatalf("undecodable %q", data)
	}
	ws.SetReadDeadline(time.Now().Add(time.Second))
	for {
		if _, _, err := ws.ReadMessage(); err != nil {
			if ne, ok := err.(interface{ Timeout() bool }); ok && ne.Timeout() {
				return f, nil
			}
			return f, err
		}
	}
}

// A revocation that lands between a hello's authentication and the
// device's registration — too late for the hello, too early for the
// revocation watcher, which looks only at registered devices — is caught
// by the check made once the device is registered.
func TestRevocationBeforeRegistrationIsCaught(t *testing.T) {
	a := &racingAuth{}
	a.during = func() { a.mu.Lock(); a.revoked = true; a.mu.Unlock() }
	_, url := serveGateway(t, a)
	f, closed := helloAnswer(t, url)
	e, ok := f.(*protocol.ErrorFrame)
	if !ok || e.Code != protocol.CodeUnauthorized {
		t.Fatalf("hello revoked before registration: %s, want unauthorized", protocol.MustEncode(f))
	}
	if ce, ok := closed.(*websocket.CloseError); !ok || ce.Code != websocket.ClosePolicyViolation {
		t.Fatalf("after the refusal: %v, want close 1008", closed)
	}
}

// A hello that completes while the server shuts down is closed with 1001,
// not welcomed into a server that will not close it.
func TestHelloDuringShutdownIsGoneAway(t *testing.T) {
	a := &racingAuth{}
	var g *gateway.Gateway
	a.during = func() {
		go g.Shutdown(context.Background())
		for !g.Draining() {
			time.Sleep(time.Millisecond)
		}
	}
	g, url := serveGateway(t, a)
	ws, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.WriteMessage(websocket.TextMessage, protocol.MustEncode(&protocol.Hello{Ref: protocol.Ref{ID: "h"}, Protocol: 1, User: "alice", Device: "d"}))
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, data, err := ws.ReadMessage()
	if ce, ok := err.(*websocket.CloseError); !ok || ce.Code != websocket.CloseGoingAway {
		t.Fatalf("a hello during shutdown: %q %v, want close 1001", data, err)
	}
}
