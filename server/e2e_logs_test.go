package server_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/imcore/im/server"
	"github.com/imcore/im/server/servertest"
)

// lineLog is a log destination that hands each line to the test.
type lineLog chan string

func (l lineLog) Write(p []byte) (int, error) {
	l <- strings.TrimSuffix(string(p), "\n")
	return len(p), nil
}

// next returns the first line to come that has every one of parts, failing
// the test after servertest.Timeout; every line read on the way must name
// the node.
func (l lineLog) next(t *testing.T, node string, parts ...string) string {
	t.Helper()
	timeout := time.After(servertest.Timeout)
	for {
		select {
		case line := <-l:
			if !strings.Contains(line, " node="+node) {
				t.Errorf("a log line does not name its node %s: %s", node, line)
			}
			found := true
			for _, p := range parts {
				found = found && strings.Contains(line, p)
			}
			if found {
				return line
			}
		case <-timeout:
			t.Fatalf("no log line with %q within %v", parts, servertest.Timeout)
		}
	}
}

// TestConnectionsAreLoggedWithTheirNode: at debug level a node logs every
// WebSocket connection opening and closing, with the user, the device, the
// remote address and why it closed, each line naming the node.
func TestConnectionsAreLoggedWithTheirNode(t *testing.T) {
	lines := make(lineLog, 10000)
	logger := server.WithNode(slog.New(slog.NewTextHandler(lines, &slog.HandlerOptions{Level: slog.LevelDebug})), "node-x")
	env := servertest.Start(t, func(c *server.Config) { c.Logger = logger })

	alice := env.DialOnline(t, "alice", "laptop")
	remote := "remote=" + alice.WS.LocalAddr().String()
	lines.next(t, "node-x", `msg="connection opened"`, remote)
	if err := alice.WS.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye"), time.Now().Add(servertest.Timeout)); err != nil {
		t.Fatal(err)
	}
	line := lines.next(t, "node-x", `msg="connection closed"`, "user=alice")
	for _, want := range []string{"device=laptop", remote, "by=client", "code=1000", `reason="client closed: bye"`, "duration="} {
		if !strings.Contains(line, want) {
			t.Errorf("close of alice's connection without %s: %s", want, line)
		}
	}

	carol := env.DialOnline(t, "carol", "tablet")
	carol.Close() // no close frame: the connection just ends
	line = lines.next(t, "node-x", `msg="connection closed"`, "user=carol")
	for _, want := range []string{"device=tablet", "by=client", "code=1006", `reason="connection lost: `} {
		if !strings.Contains(line, want) {
			t.Errorf("close of carol's connection without %s: %s", want, line)
		}
	}

	bob := env.DialOnline(t, "bob", "phone")
	remote = "remote=" + bob.WS.LocalAddr().String()
	env.Stop()
	line = lines.next(t, "node-x", `msg="connection closed"`, "user=bob")
	for _, want := range []string{"device=phone", remote, "by=server", "code=1001", `reason="server shutting down"`} {
		if !strings.Contains(line, want) {
			t.Errorf("close of bob's connection at shutdown without %s: %s", want, line)
		}
	}
}
