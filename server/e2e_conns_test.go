package server_test

import (
	"net"
	"net/http"
	neturl "net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server"
	"github.com/imcore/im/server/servertest"
)

// A user holds at most MaxConnsPerUser connections; one more is refused
// rate_limited and closed, and a place freed is a place again.
func TestMaxConnsPerUser(t *testing.T) {
	env := servertest.Start(t, func(c *server.Config) { c.Gateway.MaxConnsPerUser = 2 })
	first := env.Dial(t, "alice", "one")
	env.Dial(t, "alice", "two")
	third := env.DialRaw(t)
	third.Write(&protocol.Hello{Ref: protocol.Ref{ID: "h"}, Protocol: 1, User: "alice", Device: "three"})
	e := third.ExpectType("error").(*protocol.ErrorFrame)
	if e.Code != protocol.CodeRateLimited || !strings.Contains(e.Message, "2 connections") {
		t.Fatalf("third connection of alice: %+v", e)
	}
	third.ExpectClosed()
	env.Dial(t, "bob", "one") // others are not affected
	first.Close()
	deadline := time.Now().Add(servertest.Timeout)
	for {
		c := env.DialRaw(t)
		c.Write(&protocol.Hello{Ref: protocol.Ref{ID: "h"}, Protocol: 1, User: "alice", Device: "again"})
		if _, ok := c.Expect("the hello's answer", func(f protocol.Frame) bool { return servertest.RequestID(f) == "h" }).(*protocol.Welcome); ok {
			break
		}
		// The server may not have seen the close yet.
		if time.Now().After(deadline) {
			t.Fatal("alice cannot connect again after closing a connection")
		}
		c.ExpectClosed()
	}
}

// At most MaxHandshakes connections may sit between their upgrade and
// their hello; more are answered 503, and a hello frees a place.
func TestMaxHandshakes(t *testing.T) {
	env := servertest.Start(t, func(c *server.Config) { c.Gateway.MaxHandshakes = 2 })
	a := env.DialRaw(t)
	env.DialRaw(t)
	_, resp, err := websocket.DefaultDialer.Dial(env.URL, nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("third upgrade without a hello: %v %v, want 503", resp, err)
	}
	a.Hello(&protocol.Hello{Protocol: 1, User: "alice", Device: "d"})
	env.DialRaw(t).Hello(&protocol.Hello{Protocol: 1, User: "bob", Device: "d"})
}

// The hello timeout counts from the TCP accept: a client slow to upgrade
// has that much less time for its hello.
func TestHelloTimeoutCoversTheUpgrade(t *testing.T) {
	env := servertest.Start(t, func(c *server.Config) { c.Gateway.HelloTimeout = 1500 * time.Millisecond })
	tcp, err := net.Dial("tcp", env.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	accepted := time.Now()
	// The slow client: a second goes by before the upgrade, and another
	// before the hello — 2 s after the accept, 1 s after the upgrade.
	time.Sleep(time.Second)
	u, _ := neturl.Parse(env.URL)
	ws, _, err := websocket.NewClient(tcp, u, nil, 1024, 1024)
	if err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	time.Sleep(time.Until(accepted.Add(2 * time.Second)))
	ws.WriteMessage(websocket.TextMessage, protocol.MustEncode(&protocol.Hello{Protocol: 1, User: "alice", Device: "d"}))
	ws.SetReadDeadline(time.Now().Add(servertest.Timeout))
	_, data, err := ws.ReadMessage()
	if err == nil {
		t.Fatalf("a hello 2 s after the accept (1.5 s allowed) got %s", data)
	}
}

// A web page of another site cannot open a WebSocket; the server's own
// origin, an allowed origin and a native client (no Origin) can.
func TestOriginCheck(t *testing.T) {
	env := servertest.Start(t, func(c *server.Config) { c.Gateway.AllowedOrigins = []string{"https://chat.example.com"} })
	dial := func(origin string) (*http.Response, error) {
		h := http.Header{}
		if origin != "" {
			h.Set("Origin", origin)
		}
		ws, resp, err := websocket.DefaultDialer.Dial(env.URL, h)
		if err == nil {
			ws.Close()
		}
		return resp, err
	}
	if resp, err := dial("https://evil.example"); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-site origin: %v, %v; want 403", resp, err)
	}
	for _, origin := range []string{"", "http://" + env.Addr, "https://chat.example.com"} {
		if _, err := dial(origin); err != nil {
			t.Errorf("origin %q refused: %v", origin, err)
		}
	}
}

// A client that does not read what is pushed to it is cut off; the frames
// the writer had started on still arrive once it reads, then the close
// frame with code 1008 and its reason, not a bare EOF.
func TestSlowConsumerGetsItsCloseCode(t *testing.T) {
	env := servertest.Start(t, func(c *server.Config) {
		c.Gateway.QueueBytes = 256 << 10
		c.Gateway.RateLimit = 1e9
		c.Gateway.Limits.MaxBody = 60_000 // big messages fill the socket buffers sooner
	})
	dialer := websocket.Dialer{NetDial: func(network, addr string) (net.Conn, error) {
		c, err := net.Dial(network, addr)
		if err == nil {
			c.(*net.TCPConn).SetReadBuffer(16 << 10)
		}
		return c, err
	}}
	ws, _, err := dialer.Dial(env.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if err := ws.WriteMessage(websocket.TextMessage, protocol.MustEncode(&protocol.Hello{Protocol: 1, User: "bob", Device: "slow"})); err != nil {
		t.Fatal(err)
	}
	ws.SetReadDeadline(time.Now().Add(servertest.Timeout))
	if _, _, err := ws.ReadMessage(); err != nil {
		t.Fatalf("bob's welcome: %v", err)
	}
	// Wait for bob's replay to end: until then live pushes are held back
	// (docs/PROTOCOL.md 11.9), and a push held is not a push queued.
	env.Dial(t, "carol", "laptop").Write(&protocol.Typing{Conv: "d:bob:carol"})
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("waiting for carol's typing: %v", err)
		}
		if f, _, _ := protocol.DecodeServerFrame(data); f.FrameType() == "typing" {
			break
		}
	}
	// Bob reads no more. Four senders, each on one connection (nothing is
	// pushed to them but their answers), send to him until he is cut off.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	body := strings.Repeat("x", 50_000)
	for w := range 4 {
		sender := "sender" + itoa(w)
		c := env.Dial(t, sender, "laptop")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				c.Request(&protocol.Send{Conv: "d:bob:" + sender, MsgID: "m" + itoa(i), Body: body})
			}
		}()
	}
	deadline := time.Now().Add(servertest.Timeout)
	for scrape(t, env)[`im_disconnects_total{reason="slow_consumer"}`] < 1 {
		if time.Now().After(deadline) {
			t.Fatal("bob was not cut off")
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	// Now bob reads: what was on its way, then the close frame.
	ws.SetReadDeadline(time.Now().Add(servertest.Timeout))
	for {
		if _, _, err := ws.ReadMessage(); err != nil {
			ce, ok := err.(*websocket.CloseError)
			if !ok || ce.Code != websocket.ClosePolicyViolation || ce.Text != "slow consumer: send queue full" {
				t.Fatalf("the slow reader ended with %v, want close 1008 slow consumer", err)
			}
			return
		}
	}
}
