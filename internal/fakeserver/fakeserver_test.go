package fakeserver

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/imcore/im/protocol"
)

// dial opens a connection to url, closed when the test ends, its reads
// bounded.
func dial(t *testing.T, url string) *websocket.Conn {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	return ws
}

// roundTrip writes f and returns the next frame the server writes.
func roundTrip(t *testing.T, ws *websocket.Conn, f protocol.Frame) protocol.Frame {
	t.Helper()
	if err := ws.WriteMessage(websocket.TextMessage, protocol.MustEncode(f)); err != nil {
		t.Fatal(err)
	}
	_, data, err := ws.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	got, _, perr := protocol.DecodeServerFrame(data)
	if perr != nil {
		t.Fatalf("undecodable answer %q: %v", data, perr)
	}
	return got
}

// The default server welcomes, stores a send once per msg_id with the
// next seq of its conversation, answers a sync with an empty list, and
// records every frame.
func TestDefaultAnswers(t *testing.T) {
	srv := Start(t, Options{})
	ws := dial(t, srv.URL)
	if w, ok := roundTrip(t, ws, &protocol.Hello{Ref: protocol.Ref{ID: "h"}, Protocol: protocol.Version, User: "alice", Device: "d"}).(*protocol.Welcome); !ok || w.User != "alice" {
		t.Fatalf("hello answered %+v", w)
	}
	send := func(id string) int64 {
		t.Helper()
		sent, ok := roundTrip(t, ws, &protocol.Send{Ref: protocol.Ref{ID: id}, Conv: "d:alice:bob", MsgID: id, Body: "hi"}).(*protocol.Sent)
		if !ok || sent.MsgID != id {
			t.Fatalf("send %s answered %+v", id, sent)
		}
		return sent.Seq
	}
	if a, b, again := send("a"), send("b"), send("a"); a != 1 || b != 2 || again != 1 {
		t.Fatalf("seqs %d, %d, and %d for a again; want 1, 2, 1", a, b, again)
	}
	if s, ok := roundTrip(t, ws, &protocol.Sync{Ref: protocol.Ref{ID: "s"}, Since: 7}).(*protocol.Sessions); !ok || len(s.Sessions) != 0 || s.Cursor != 7 {
		t.Fatalf("sync answered %+v", s)
	}
	if s, ok := roundTrip(t, ws, &protocol.SettingsRequest{Ref: protocol.Ref{ID: "st"}}).(*protocol.SettingsReply); !ok || s.ID != "st" || s.Settings.LastSeen != protocol.LastSeenEveryone {
		t.Fatalf("settings answered %+v", s)
	}
	if _, ok := roundTrip(t, ws, &protocol.Block{Ref: protocol.Ref{ID: "b"}, User: "bob"}).(*protocol.OK); !ok {
		t.Fatal("block not answered ok")
	}
	if p, ok := roundTrip(t, ws, &protocol.PresenceRequest{Ref: protocol.Ref{ID: "p"}, Users: []string{"bob"}}).(*protocol.PresenceReply); !ok || len(p.Users) != 1 || p.Users[0] != protocol.Stranger("bob") {
		t.Fatalf("presence answered %+v", p)
	}
	if n, hellos := len(srv.Frames("send")), len(srv.Frames("hello")); n != 3 || hellos != 1 {
		t.Fatalf("recorded %d sends and %d hellos, want 3 and 1", n, hellos)
	}
}

// A path other than /ws is not found, and Status answers every upgrade.
func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		path string
		want int
	}{
		{Options{}, "/wrong", http.StatusNotFound},
		{Options{Status: http.StatusServiceUnavailable}, "/ws", http.StatusServiceUnavailable},
	} {
		srv := Start(t, tc.opts)
		url := strings.TrimSuffix(srv.URL, "/ws") + tc.path
		_, resp, err := websocket.DefaultDialer.Dial(url, nil)
		if err == nil || resp == nil || resp.StatusCode != tc.want {
			t.Fatalf("dial %s: %v, %+v; want HTTP %d", tc.path, err, resp, tc.want)
		}
	}
}

// A relay carries the client's frames to its upstream and the answers
// back, recording the client's.
func TestRelay(t *testing.T) {
	upstream := Start(t, Options{})
	relay := Start(t, Options{Upstream: upstream.URL})
	ws := dial(t, relay.URL)
	roundTrip(t, ws, &protocol.Hello{Ref: protocol.Ref{ID: "h"}, Protocol: protocol.Version, User: "alice", Device: "d"})
	if sent, ok := roundTrip(t, ws, &protocol.Send{Ref: protocol.Ref{ID: "1"}, Conv: "d:alice:bob", MsgID: "m", Body: "hi"}).(*protocol.Sent); !ok || sent.Seq != 1 {
		t.Fatalf("send through the relay answered %+v", sent)
	}
	for _, srv := range []*Server{relay, upstream} {
		if sends := srv.Frames("send"); len(sends) != 1 || sends[0].(*protocol.Send).MsgID != "m" {
			t.Fatalf("recorded %+v, want the one send", sends)
		}
	}
}
