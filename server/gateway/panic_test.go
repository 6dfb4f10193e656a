package gateway_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
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

// panickingStore fails every history read with a panic, as a bug would.
type panickingStore struct{ chat.Engine }

func (panickingStore) History(context.Context, string, store.HistoryQuery) ([]protocol.Message, bool, error) {
	panic("bug in the store")
}

func (panickingStore) Pending(context.Context, string) ([]store.PendingDelivery, error) {
	return nil, nil
}

func TestHandlerPanicIsAnsweredInternal(t *testing.T) {
	h := hub.New()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := chat.New(panickingStore{}, h, protocol.DefaultLimits, log)
	srv := httptest.NewServer(gateway.New(gateway.DefaultConfig(), svc, h, auth.Dev{}, log))
	defer srv.Close()
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ask := func(f protocol.Frame, id string) protocol.Frame {
		t.Helper()
		if err := ws.WriteMessage(websocket.TextMessage, protocol.MustEncode(f)); err != nil {
			t.Fatal(err)
		}
		ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				t.Fatalf("waiting for %s: %v", id, err)
			}
			g, gotID, perr := protocol.DecodeServerFrame(data)
			if perr != nil {
				t.Fatalf("undecodable %q", data)
			}
			if gotID == id {
				return g
			}
		}
	}
	ask(&protocol.Hello{Ref: protocol.Ref{ID: "h"}, Protocol: 1, User: "alice", Device: "d"}, "h")
	for _, id := range []string{"p1", "p2"} { // the connection survives the first
		f := ask(&protocol.History{Ref: protocol.Ref{ID: id}, Conv: "d:alice:bob"}, id)
		if e, ok := f.(*protocol.ErrorFrame); !ok || e.Code != protocol.CodeInternal {
			t.Fatalf("%s: got %+v, want internal", id, f)
		}
	}
}
