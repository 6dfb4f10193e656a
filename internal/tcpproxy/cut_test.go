package tcpproxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// wsServer is a WebSocket server that writes msgs to every connection
// (with a ping between each two) and then echoes what it reads.
func wsServer(t *testing.T, msgs []string) string {
	t.Helper()
	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		for _, m := range msgs {
			if err := ws.WriteMessage(websocket.TextMessage, []byte(m)); err != nil {
				return
			}
			ws.WriteControl(websocket.PingMessage, []byte("p"), time.Now().Add(testWait))
		}
		for {
			typ, data, err := ws.ReadMessage()
			if err != nil {
				return
			}
			if ws.WriteMessage(typ, data) != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// testProxy starts a proxy to target whose connections all follow plan.
func testProxy(t *testing.T, target string, plan cutPlan, tap func([]byte)) *Proxy {
	t.Helper()
	p, err := Start(Config{Target: target, Tap: tap, plans: func() cutPlan { return plan }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// dialWS opens a WebSocket connection through p, closed when the test
// ends, its reads bounded by testWait.
func dialWS(t *testing.T, p *Proxy) *websocket.Conn {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+p.Addr()+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	ws.SetReadDeadline(time.Now().Add(testWait))
	return ws
}

// waitStats waits until the proxy's counts satisfy ok.
func waitStats(t *testing.T, p *Proxy, what string, ok func(Stats) bool) Stats {
	t.Helper()
	deadline := time.Now().Add(testWait)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		s := p.Stats()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v: %+v", what, testWait, s)
		}
		<-tick.C
	}
}

// Without chaos the proxy forwards everything, however small the plan's
// budget, and its tap sees every text message the server wrote, large
// (fragmented) ones included.
func TestProxyForwardsAndTapsWithoutChaos(t *testing.T) {
	msgs := []string{`{"type":"sent","conv":"d:a:b","msg_id":"m","seq":1,"server_ts":2}`, strings.Repeat("z", 300), strings.Repeat("w", 200000)}
	var mu sync.Mutex
	var tapped []string
	p := testProxy(t, wsServer(t, msgs), cutPlan{dir: 1, budget: 10, fromUpgrade: true, life: time.Millisecond}, func(b []byte) {
		mu.Lock()
		tapped = append(tapped, string(b))
		mu.Unlock()
	})
	ws := dialWS(t, p)
	for i, want := range msgs {
		_, got, err := ws.ReadMessage()
		if err != nil || string(got) != want {
			t.Fatalf("message %d: %d bytes, err %v", i, len(got), err)
		}
	}
	ws.WriteMessage(websocket.TextMessage, []byte("echo"))
	if _, got, err := ws.ReadMessage(); err != nil || string(got) != "echo" {
		t.Fatalf("echo: %q %v", got, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(tapped, append(msgs, "echo")) {
		t.Fatalf("tapped %d messages, want %d", len(tapped), len(msgs)+1)
	}
	if s := p.Stats(); s.Cuts != 0 || s.Conns != 1 {
		t.Fatalf("stats %+v, want one connection and no cut", s)
	}
}

// A budget that runs out inside a frame forwards exactly the budget, then
// cuts: the client reads a partial frame and the end of the stream, and
// the cut counts as mid-frame. Through a delay line too: the budget's
// bytes go out late, then the cut.
func TestProxyBudgetCutsMidFrame(t *testing.T) {
	for _, delay := range []time.Duration{0, 5 * time.Millisecond} {
		t.Run(fmt.Sprint("delay ", delay), func(t *testing.T) {
			const budget = 40
			var mu sync.Mutex
			var tapped int
			p := testProxy(t, wsServer(t, []string{strings.Repeat("a", 30), strings.Repeat("b", 100)}), cutPlan{dir: 1, budget: budget, fromUpgrade: true, life: time.Hour},
				func([]byte) { mu.Lock(); tapped++; mu.Unlock() })
			p.SetChaos(true)
			p.Delay(delay)
			ws := dialWS(t, p)
			// 32 bytes of the first frame, 3 of the ping, 5 of the second one.
			if _, got, err := ws.ReadMessage(); err != nil || len(got) != 30 {
				t.Fatalf("first message: %d bytes, %v", len(got), err)
			}
			if _, got, err := ws.ReadMessage(); err == nil {
				t.Fatalf("second message read whole (%d bytes) through a budget of %d", len(got), budget)
			}
			s := waitStats(t, p, "cut", func(s Stats) bool { return s.Cuts == 1 })
			if s.BudgetCuts != 1 || s.MidFrame != 1 || s.Handshake != 0 || s.TimedCuts != 0 {
				t.Fatalf("stats %+v: want one budget cut, mid-frame", s)
			}
			if delayed := s.Delayed > 0; delayed != (delay > 0) {
				t.Fatalf("stats %+v: %d chunks delayed with a delay of %v", s, s.Delayed, delay)
			}
			mu.Lock()
			defer mu.Unlock()
			// The tap sees what was read from the server, the cut second
			// message too if it was read whole before the cut.
			if tapped < 1 || s.Withheld != int64(tapped-1) {
				t.Fatalf("tapped %d messages, %d withheld: want the first one forwarded whole", tapped, s.Withheld)
			}
		})
	}
}

// A budget counted from the first byte can end inside the upgrade: the
// dial fails and the cut counts as one inside the upgrade, not mid-frame.
func TestProxyCutsInsideTheUpgrade(t *testing.T) {
	p := testProxy(t, wsServer(t, nil), cutPlan{dir: 0, budget: 20, life: time.Hour}, nil)
	p.SetChaos(true)
	if ws, _, err := websocket.DefaultDialer.Dial("ws://"+p.Addr()+"/ws", nil); err == nil {
		ws.Close()
		t.Fatal("dial succeeded through a cut upgrade")
	}
	s := waitStats(t, p, "cut", func(s Stats) bool { return s.Cuts == 1 })
	if s.Handshake != 1 || s.MidFrame != 0 || s.BudgetCuts != 1 {
		t.Fatalf("stats %+v: want one budget cut inside the upgrade", s)
	}
}

// A connection's lifetime ends it abruptly, with a reset when its plan
// says so; a reset cut is never counted mid-frame.
func TestProxyTimedCutWithReset(t *testing.T) {
	p := testProxy(t, wsServer(t, nil), cutPlan{dir: 0, budget: -1, life: 50 * time.Millisecond, reset: true}, nil)
	p.SetChaos(true)
	ws := dialWS(t, p)
	if _, _, err := ws.ReadMessage(); err == nil {
		t.Fatal("read a message from a server that writes none")
	}
	s := waitStats(t, p, "cut", func(s Stats) bool { return s.Cuts == 1 })
	if s.TimedCuts != 1 || s.Resets != 1 || s.MidFrame != 0 {
		t.Fatalf("stats %+v: want one timed cut with a reset", s)
	}
}

// A target that cannot be reached is an unreachable connection, not a
// cut.
func TestProxyCountsUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := testProxy(t, addr, cutPlan{budget: -1, life: time.Hour}, nil)
	p.SetChaos(true)
	if ws, _, err := websocket.DefaultDialer.Dial("ws://"+p.Addr()+"/ws", nil); err == nil {
		ws.Close()
		t.Fatal("dial succeeded with no server")
	}
	s := waitStats(t, p, "unreachable target", func(s Stats) bool { return s.Unreachable == 1 })
	if s.Cuts != 0 || s.Refused != 0 {
		t.Fatalf("stats %+v: an unreachable target counted as a cut or a refusal", s)
	}
}

// A refusal resets the live connections of a cutting proxy too, and is
// not counted as a cut.
func TestProxyRefusalIsNoCut(t *testing.T) {
	p := testProxy(t, wsServer(t, nil), noCut, nil)
	p.SetChaos(true)
	ws := dialWS(t, p)
	p.Refuse()
	if _, _, err := ws.ReadMessage(); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a live connection read %v during a refusal, want it reset", err)
	}
	s := waitStats(t, p, "the connection's end", func(s Stats) bool { return s.ResetLive == 1 })
	if s.Cuts != 0 || s.Conns != 1 {
		t.Fatalf("stats %+v: want one live connection reset, no cut", s)
	}
}

// With several targets each new connection goes to the next one up,
// round-robin; with none up it is closed and counted unreachable.
func TestProxyBalancesOverTheTargetsUp(t *testing.T) {
	named := func(name string) string { // a server that writes its name
		return tcpServer(t, func(conn net.Conn) {
			conn.Write([]byte(name))
			conn.Close()
		})
	}
	var mu sync.Mutex
	up := []string{named("a"), named("b")}
	p, err := Start(Config{Targets: func() []string {
		mu.Lock()
		defer mu.Unlock()
		return up
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	var got string
	for range 4 {
		conn := dialOrFail(t, p.Addr())
		conn.SetReadDeadline(time.Now().Add(testWait))
		b, err := io.ReadAll(conn)
		if err != nil {
			t.Fatal(err)
		}
		got += string(b)
	}
	if got != "abab" {
		t.Fatalf("four connections reached %q, want abab", got)
	}
	mu.Lock()
	up = nil
	mu.Unlock()
	conn := dialOrFail(t, p.Addr())
	conn.SetReadDeadline(time.Now().Add(testWait))
	if b, err := io.ReadAll(conn); len(b) != 0 || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("with no target up a connection read %q, %v; want it closed", b, err)
	}
	if s := waitStats(t, p, "unreachable", func(s Stats) bool { return s.Unreachable == 1 }); s.Conns != 5 {
		t.Fatalf("stats %+v, want 5 connections", s)
	}
}
