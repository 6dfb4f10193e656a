package faultrun

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// testWait bounds every wait of these tests.
const testWait = 10 * time.Second

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
	p, err := newProxy(func() []string { return []string{target} }, DefaultCutPolicy, 1, tap, func() cutPlan { return plan })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// waitStats waits until the proxy's counts satisfy ok.
func waitStats(t *testing.T, p *Proxy, what string, ok func(ProxyStats) bool) ProxyStats {
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
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+p.Addr()+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.SetReadDeadline(time.Now().Add(testWait))
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
// the cut counts as mid-frame.
func TestProxyBudgetCutsMidFrame(t *testing.T) {
	const budget = 40
	var mu sync.Mutex
	var tapped int
	p := testProxy(t, wsServer(t, []string{strings.Repeat("a", 30), strings.Repeat("b", 100)}), cutPlan{dir: 1, budget: budget, fromUpgrade: true, life: time.Hour},
		func([]byte) { mu.Lock(); tapped++; mu.Unlock() })
	p.SetChaos(true)
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+p.Addr()+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.SetReadDeadline(time.Now().Add(testWait))
	// 32 bytes of the first frame, 3 of the ping, 5 of the second one.
	if _, got, err := ws.ReadMessage(); err != nil || len(got) != 30 {
		t.Fatalf("first message: %d bytes, %v", len(got), err)
	}
	if _, got, err := ws.ReadMessage(); err == nil {
		t.Fatalf("second message read whole (%d bytes) through a budget of %d", len(got), budget)
	}
	s := waitStats(t, p, "cut", func(s ProxyStats) bool { return s.Cuts == 1 })
	if s.BudgetCuts != 1 || s.MidFrame != 1 || s.Handshake != 0 || s.TimedCuts != 0 {
		t.Fatalf("stats %+v: want one budget cut, mid-frame", s)
	}
	mu.Lock()
	defer mu.Unlock()
	// The tap sees what was read from the server, the cut second message
	// too if it was read whole before the cut.
	if tapped < 1 || s.Withheld != int64(tapped-1) {
		t.Fatalf("tapped %d messages, %d withheld: want the first one forwarded whole", tapped, s.Withheld)
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
	s := waitStats(t, p, "cut", func(s ProxyStats) bool { return s.Cuts == 1 })
	if s.Handshake != 1 || s.MidFrame != 0 || s.BudgetCuts != 1 {
		t.Fatalf("stats %+v: want one budget cut inside the upgrade", s)
	}
}

// A connection's lifetime ends it abruptly, with a reset when its plan
// says so; a reset cut is never counted mid-frame.
func TestProxyTimedCutWithReset(t *testing.T) {
	p := testProxy(t, wsServer(t, nil), cutPlan{dir: 0, budget: -1, life: 50 * time.Millisecond, reset: true}, nil)
	p.SetChaos(true)
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+p.Addr()+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.SetReadDeadline(time.Now().Add(testWait))
	if _, _, err := ws.ReadMessage(); err == nil {
		t.Fatal("read a message from a server that writes none")
	}
	s := waitStats(t, p, "cut", func(s ProxyStats) bool { return s.Cuts == 1 })
	if s.TimedCuts != 1 || s.Resets != 1 || s.MidFrame != 0 {
		t.Fatalf("stats %+v: want one timed cut with a reset", s)
	}
}

// A server that cannot be reached is a refused connection, not a cut.
func TestProxyCountsRefused(t *testing.T) {
	addr, err := FreeLoopbackAddr()
	if err != nil {
		t.Fatal(err)
	}
	p := testProxy(t, addr, cutPlan{budget: -1, life: time.Hour}, nil)
	p.SetChaos(true)
	if ws, _, err := websocket.DefaultDialer.Dial("ws://"+p.Addr()+"/ws", nil); err == nil {
		ws.Close()
		t.Fatal("dial succeeded with no server")
	}
	s := waitStats(t, p, "refusal", func(s ProxyStats) bool { return s.Refused == 1 })
	if s.Cuts != 0 {
		t.Fatalf("stats %+v: a refusal counted as a cut", s)
	}
}
