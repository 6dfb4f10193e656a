package servertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// JSONClient is a bare WebSocket client, to see the JSON as it is on the
// wire. Its methods are for one goroutine.
type JSONClient struct {
	T  testing.TB
	WS *websocket.Conn
	n  int
}

// DialJSON connects user/device on a JSONClient, says hello and makes one
// round trip, so that the device is registered for pushes when it returns.
func (e *Env) DialJSON(t testing.TB, user, device string) *JSONClient {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(e.URL, nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { ws.Close() })
	r := &JSONClient{T: t, WS: ws}
	if w := r.Request(map[string]any{"type": "hello", "protocol": 1, "user": user, "device": device}); w["type"] != "welcome" {
		t.Fatalf("raw hello: got %v", w)
	}
	r.Request(map[string]any{"type": "history", "conv": "-"}) // registered for pushes
	return r
}

// Request writes frame with a fresh id and returns the answer echoing it,
// decoded with numbers kept as json.Number. Frames passed over are dropped.
func (r *JSONClient) Request(frame map[string]any) map[string]any {
	r.T.Helper()
	r.n++
	id := fmt.Sprintf("raw-%d", r.n)
	frame["id"] = id
	data, err := json.Marshal(frame)
	if err != nil {
		r.T.Fatal(err)
	}
	if err := r.WS.WriteMessage(websocket.TextMessage, data); err != nil {
		r.T.Fatalf("raw write: %v", err)
	}
	r.WS.SetReadDeadline(time.Now().Add(Timeout))
	for {
		_, data, err := r.WS.ReadMessage()
		if err != nil {
			r.T.Fatalf("raw read waiting for %s: %v", id, err)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			r.T.Fatalf("raw frame %q: %v", data, err)
		}
		if m["id"] == id {
			return m
		}
	}
}
