package server_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server"
	"github.com/imcore/im/server/servertest"
)

func TestMalformedFramesGetBadFrameAndKeepTheConnection(t *testing.T) {
	env := servertest.Start(t)
	alice := env.Dial(t, "alice", "laptop")
	cases := []struct {
		name, frame, wantID string
	}{
		{"not JSON", `hello there`, ""},
		{"truncated JSON", `{"type":"send","id":"a1"`, ""},
		{"an array", `[1,2]`, ""},
		{"null", `null`, ""},
		{"missing type", `{"id":"a2","conv":"d:alice:bob"}`, "a2"},
		{"type not a string", `{"type":7,"id":"a3"}`, "a3"},
		{"unknown type", `{"type":"launch","id":"a4"}`, "a4"},
		{"server-only type", `{"type":"welcome","id":"a5"}`, "a5"},
		{"seq of the wrong type", `{"type":"history","id":"a6","conv":"d:alice:bob","before_seq":"x"}`, "a6"},
		{"marks of the wrong type", `{"type":"read","id":"a7","marks":{}}`, "a7"},
		{"body of the wrong type", `{"type":"send","id":"a8","conv":"d:alice:bob","msg_id":"m","body":5}`, "a8"},
		{"id of the wrong type", `{"type":"send","id":9}`, ""},
	}
	for _, tc := range cases {
		alice.WriteRaw([]byte(tc.frame))
		f := alice.Expect("error for "+tc.name, servertest.OfType("error"))
		e := f.(*protocol.ErrorFrame)
		if e.Code != protocol.CodeBadFrame || e.ID != tc.wantID || e.Message == "" {
			t.Errorf("%s: got %+v, want bad_frame with id %q and a message", tc.name, e, tc.wantID)
		}
	}
	// Binary messages are not frames.
	if err := alice.WS.WriteMessage(websocket.BinaryMessage, []byte(`{"type":"send"}`)); err != nil {
		t.Fatal(err)
	}
	if e := alice.ExpectType("error").(*protocol.ErrorFrame); e.Code != protocol.CodeBadFrame {
		t.Errorf("binary message: got %+v, want bad_frame", e)
	}
	// Unknown fields are ignored, and the connection still serves requests.
	alice.WriteRaw([]byte(`{"type":"send","id":"ok1","conv":"d:alice:bob","msg_id":"m1","body":"hi","client_ts":1,"extra":{"x":[1]}}`))
	if s, ok := alice.Expect("sent", func(f protocol.Frame) bool { return servertest.RequestID(f) == "ok1" }).(*protocol.Sent); !ok || s.Seq != 1 {
		t.Fatalf("after bad frames: want sent seq 1, got %v", s)
	}
}

func TestBadFramesChangeNothing(t *testing.T) {
	env := servertest.Start(t)
	alice := env.Dial(t, "alice", "laptop")
	alice.WriteRaw([]byte(`{"type":"send","id":"x","conv":"d:alice:bob","msg_id":"m1","body":"hi","client_ts":"soon"}`))
	alice.RequestError(&protocol.Send{Conv: "d:alice:bob", MsgID: "m2", Body: ""}, protocol.CodeInvalid)
	alice.RequestError(&protocol.Send{Conv: "d:alice:bob", MsgID: "m3", Body: strings.Repeat("x", 4097)}, protocol.CodeTooLarge)
	page := alice.RequestOK(&protocol.History{Conv: "d:alice:bob"}).(*protocol.Messages)
	if len(page.Messages) != 0 {
		t.Fatalf("rejected sends stored %d messages", len(page.Messages))
	}
	if s := alice.Send("d:alice:bob", "m4", "first real"); s.Seq != 1 {
		t.Fatalf("rejected sends consumed seqs: first real message got seq %d", s.Seq)
	}
}

func TestOversizeFrameClosesWith1009(t *testing.T) {
	env := servertest.Start(t)
	alice := env.Dial(t, "alice", "laptop")
	big := `{"type":"send","id":"big","conv":"d:alice:bob","msg_id":"m","body":"` + strings.Repeat("x", protocol.DefaultMaxFrame) + `"}`
	alice.WriteRaw([]byte(big))
	err := alice.ExpectClosed()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.CloseMessageTooBig {
		t.Fatalf("want close 1009, got %v", err)
	}
	// Others are still served.
	bob := env.Dial(t, "bob", "laptop")
	bob.Send("d:alice:bob", "after", "still here")
}

func TestBodyLimits(t *testing.T) {
	env := servertest.Start(t, func(c *server.Config) { c.Gateway.Limits.MaxBody = 10 })
	alice := env.Dial(t, "alice", "laptop")
	alice.Send("d:alice:bob", "ok", strings.Repeat("é", 5)) // 10 bytes
	e := alice.RequestError(&protocol.Send{Conv: "d:alice:bob", MsgID: "big", Body: strings.Repeat("x", 11)}, protocol.CodeTooLarge)
	if !strings.Contains(e.Message, "10") {
		t.Errorf("too_large message should name the limit: %q", e.Message)
	}
	alice.RequestError(&protocol.Send{Conv: "d:alice:bob", MsgID: "empty", Body: ""}, protocol.CodeInvalid)
}

func TestSendValidation(t *testing.T) {
	env := servertest.Start(t)
	alice := env.Dial(t, "alice", "laptop")
	for name, f := range map[string]*protocol.Send{
		"reversed direct id": {Conv: "d:bob:alice", MsgID: "m", Body: "x"},
		"self chat":          {Conv: "d:alice:alice", MsgID: "m", Body: "x"},
		"garbage conv":       {Conv: "alice", MsgID: "m", Body: "x"},
		"gateway conv":       {Conv: "biz:shop", MsgID: "m", Body: "x"},
		"empty msg_id":       {Conv: "d:alice:bob", MsgID: "", Body: "x"},
		"long msg_id":        {Conv: "d:alice:bob", MsgID: strings.Repeat("m", 65), Body: "x"},
	} {
		if e := alice.Request(f); e.FrameType() != "error" || e.(*protocol.ErrorFrame).Code != protocol.CodeInvalid {
			t.Errorf("%s: want invalid, got %s", name, servertest.Describe(e))
		}
	}
	alice.RequestError(&protocol.Send{Conv: "d:bob:carol", MsgID: "m", Body: "x"}, protocol.CodeForbidden)
	alice.RequestError(&protocol.Send{Conv: "g:nosuch", MsgID: "m", Body: "x"}, protocol.CodeNotFound)
}

func TestFirstFrameMustBeHello(t *testing.T) {
	env := servertest.Start(t)
	c := env.DialRaw(t)
	// A malformed frame before hello is answered; the hello can still come.
	c.WriteRaw([]byte(`nonsense`))
	if e := c.ExpectType("error").(*protocol.ErrorFrame); e.Code != protocol.CodeBadFrame {
		t.Fatalf("got %+v, want bad_frame", e)
	}
	c.Write(&protocol.Send{Ref: protocol.Ref{ID: "s1"}, Conv: "d:alice:bob", MsgID: "m", Body: "x"})
	e := c.ExpectType("error").(*protocol.ErrorFrame)
	if e.Code != protocol.CodeUnauthorized || e.ID != "s1" {
		t.Fatalf("got %+v, want unauthorized echoing s1", e)
	}
	c.ExpectClosed()
}

func TestHelloRules(t *testing.T) {
	env := servertest.Start(t)
	refused := func(name string, h *protocol.Hello, code protocol.Code) {
		t.Helper()
		c := env.DialRaw(t)
		c.Write(h)
		e, ok := c.ExpectType("error").(*protocol.ErrorFrame)
		if !ok || e.Code != code || e.ID != h.ID {
			t.Errorf("%s: got %+v, want %s echoing %q", name, e, code, h.ID)
		}
		c.ExpectClosed()
	}
	refused("protocol 2", &protocol.Hello{Ref: protocol.Ref{ID: "1"}, Protocol: 2, User: "alice", Device: "d"}, protocol.CodeInvalid)
	refused("bad user", &protocol.Hello{Ref: protocol.Ref{ID: "3"}, Protocol: 1, User: "Alice!", Device: "d"}, protocol.CodeUnauthorized)
	refused("no user", &protocol.Hello{Ref: protocol.Ref{ID: "4"}, Protocol: 1, Device: "d"}, protocol.CodeUnauthorized)

	// A hello with a bad device is answered invalid; the client may say a
	// corrected hello on the same connection.
	c := env.DialRaw(t)
	for _, device := range []string{"", "has space", strings.Repeat("d", 65)} {
		e := c.RequestError(&protocol.Hello{Protocol: 1, User: "alice", Device: device}, protocol.CodeInvalid)
		if !strings.Contains(e.Message, "device") {
			t.Errorf("device %q: message %q should name the device", device, e.Message)
		}
	}
	c.Hello(&protocol.Hello{Protocol: 1, User: "alice", Device: "fixed"})

	alice := env.Dial(t, "alice", "laptop")
	if alice.User != "alice" || alice.Device != "laptop" {
		t.Fatalf("welcome named %s/%s", alice.User, alice.Device)
	}
	alice.RequestError(&protocol.Hello{Protocol: 1, User: "bob", Device: "x"}, protocol.CodeInvalid)
	alice.Send("d:alice:bob", "m", "still alice") // the connection stays
}

func TestHelloTimeout(t *testing.T) {
	env := servertest.Start(t, func(c *server.Config) { c.Gateway.HelloTimeout = 200 * time.Millisecond })
	c := env.DialRaw(t)
	c.ExpectClosed() // no hello: the server hangs up
}

func TestWelcomeCarriesServerTime(t *testing.T) {
	env := servertest.Start(t)
	c := env.DialRaw(t)
	before := time.Now().UnixMilli()
	w := c.Request(&protocol.Hello{Protocol: 1, User: "alice", Device: "laptop"}).(*protocol.Welcome)
	after := time.Now().UnixMilli()
	if w.ServerTime < before || w.ServerTime > after {
		t.Fatalf("server_time %d outside [%d, %d]", w.ServerTime, before, after)
	}
}

func TestUnresponsiveConnectionIsDropped(t *testing.T) {
	env := servertest.Start(t, func(c *server.Config) {
		c.Gateway.PingInterval = 50 * time.Millisecond
		c.Gateway.PongWait = 300 * time.Millisecond
	})
	ws, _, err := websocket.DefaultDialer.Dial(env.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	// A client that reads but never answers pings.
	ws.SetPingHandler(func(string) error { return nil })
	if err := ws.WriteMessage(websocket.TextMessage, protocol.MustEncode(&protocol.Hello{Protocol: 1, User: "alice", Device: "d"})); err != nil {
		t.Fatal(err)
	}
	ws.SetReadDeadline(time.Now().Add(servertest.Timeout))
	for {
		if _, _, err := ws.ReadMessage(); err != nil {
			var ne interface{ Timeout() bool }
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("the server kept a silent connection for %v", servertest.Timeout)
			}
			return // dropped by the server
		}
	}
}

func TestRateLimit(t *testing.T) {
	env := servertest.Start(t, func(c *server.Config) {
		c.Gateway.RateLimit = 0.001 // effectively no refill during the test
		c.Gateway.RateBurst = 5
	})
	alice := env.Dial(t, "alice", "laptop") // hello is not counted
	for i := range 5 {
		alice.RequestOK(&protocol.History{Conv: "d:alice:bob"})
		_ = i
	}
	e := alice.RequestError(&protocol.Send{Conv: "d:alice:bob", MsgID: "m", Body: "x"}, protocol.CodeRateLimited)
	if e.Message == "" {
		t.Error("rate_limited without a message")
	}
	// The limited send changed nothing: bob sees no message.
	bob := env.Dial(t, "bob", "laptop")
	page := bob.RequestOK(&protocol.History{Conv: "d:alice:bob"}).(*protocol.Messages)
	if len(page.Messages) != 0 {
		t.Fatalf("a rate-limited send was stored: %+v", page.Messages)
	}
}

func TestHealthz(t *testing.T) {
	env := servertest.Start(t)
	if code := httpStatus(t, "http://"+env.Addr+"/healthz"); code != 200 {
		t.Fatalf("healthz = %d", code)
	}
}

func TestGracefulShutdownSaysGoingAway(t *testing.T) {
	env := servertest.Start(t)
	alice := env.Dial(t, "alice", "laptop")
	sent := alice.Send("d:alice:bob", "m1", "before shutdown")
	env.Stop()
	err := alice.ExpectClosed()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.CloseGoingAway {
		t.Fatalf("want close 1001, got %v", err)
	}
	// Restart on the same data: the acknowledged message is there.
	env2 := env.Restart(t)
	bob := env2.Dial(t, "bob", "laptop")
	page := bob.RequestOK(&protocol.History{Conv: "d:alice:bob"}).(*protocol.Messages)
	if len(page.Messages) != 1 || page.Messages[0].Seq != sent.Seq {
		t.Fatalf("after restart history = %+v", page.Messages)
	}
}
