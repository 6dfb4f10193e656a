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
	"github.com/imcore/im/server/clientaddr"
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

// A connection that upgrades and never says hello is charged to its
// address like a failing frame, and one address may hold only a few
// connections between upgrade and hello: holding upgrades open costs the
// attacker, not everyone else.
func TestHandshakesPerAddress(t *testing.T) {
	env := servertest.Start(t, func(c *server.Config) {
		c.Gateway.MaxHandshakesPerIP = 2
		c.Gateway.HelloTimeout = 300 * time.Millisecond
		c.Gateway.PreHelloRate = 0.001
		c.Gateway.PreHelloBurst = 2
	})
	a, b := env.DialRaw(t), env.DialRaw(t)
	_, resp, err := websocket.DefaultDialer.Dial(env.URL, nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a third upgrade from one address: %v %v, want 503", resp, err)
	}
	// Another address is not held up.
	other := websocket.Dialer{NetDial: func(network, addr string) (net.Conn, error) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
		return d.Dial(network, addr)
	}}
	ws, _, err := other.Dial(env.URL, nil)
	if err != nil {
		t.Fatalf("an upgrade from another address: %v", err)
	}
	ws.Close()
	// Both time out without a hello: the address's two tokens are spent,
	// and its next connection is turned away at accept.
	a.ExpectClosed()
	b.ExpectClosed()
	_, resp, err = websocket.DefaultDialer.Dial(env.URL, nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("after two hello timeouts: %v %v, want 429", resp, err)
	}
}

// Behind a trusted proxy, the limits per address count the client the
// proxy forwards for: one client failing does not shut out the others.
func TestPenaltiesBehindATrustedProxy(t *testing.T) {
	env := servertest.Start(t, func(c *server.Config) {
		c.Gateway.Proxies, _ = clientaddr.ParseProxies([]string{"127.0.0.1"})
		c.Gateway.PreHelloRate = 0.001
		c.Gateway.PreHelloBurst = 1
	})
	forwarded := func(client string) http.Header {
		return http.Header{"X-Forwarded-For": {client}}
	}
	ws, _, err := websocket.DefaultDialer.Dial(env.URL, forwarded("203.0.113.5"))
	if err != nil {
		t.Fatal(err)
	}
	ws.WriteMessage(websocket.TextMessage, []byte("garbage"))
	ws.WriteMessage(websocket.TextMessage, []byte("more garbage"))
	ws.SetReadDeadline(time.Now().Add(servertest.Timeout))
	for { // the second failing frame is over the budget: the connection closes
		if _, _, err := ws.ReadMessage(); err != nil {
			break
		}
	}
	ws.Close()
	if _, resp, err := websocket.DefaultDialer.Dial(env.URL, forwarded("203.0.113.5")); err == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the failing client again: %v %v, want 429", resp, err)
	}
	ws, _, err = websocket.DefaultDialer.Dial(env.URL, forwarded("203.0.113.6"))
	if err != nil {
		t.Fatalf("another client of the same proxy: %v", err)
	}
	ws.Close()
}

// DNS rebinding: a page of evil.example whose name was made to point at
// 127.0.0.1 sends Origin and Host evil.example. Same host — but a dev
// server, which trusts whoever reaches it, accepts a same-host origin only
// for a loopback name; a token server accepts it (tokens, not reach, say
// who one is).
func TestOriginAndDNSRebinding(t *testing.T) {
	for _, mode := range []string{server.AuthDev, server.AuthToken} {
		env := servertest.Start(t, func(c *server.Config) { c.Auth = mode })
		_, port, _ := net.SplitHostPort(env.Addr)
		h := http.Header{"Origin": {"http://evil.example:" + port}, "Host": {"evil.example:" + port}}
		ws, resp, err := websocket.DefaultDialer.Dial(env.URL, h)
		if mode == server.AuthDev {
			if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
				t.Errorf("dev server, rebound name: %v %v, want 403", resp, err)
			}
		} else if err != nil {
			t.Errorf("token server, same-host origin: %v", err)
		}
		if err == nil {
			ws.Close()
		}
		h = http.Header{"Origin": {"http://localhost:" + port}, "Host": {"localhost:" + port}}
		if ws, _, err := websocket.DefaultDialer.Dial(env.URL, h); err != nil {
			t.Errorf("%s server, a page of localhost: %v", mode, err)
		} else {
			ws.Close()
		}
	}
}
