package server

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestWithNodeNamesTheNodeOnceOnEveryLine(t *testing.T) {
	var buf bytes.Buffer
	base := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	log := WithNode(base, "node-a")

	log.Info("plain", "k", 1)
	log.With("node", "node-a").Warn("component that names its node again")
	log.Debug("record repeats it", "node", "node-a", "user", "alice")
	log.With("node", "node-b").Info("another node named")
	log.WithGroup("g").Info("grouped", "node", "node-a")
	slog.NewLogLogger(log.Handler(), slog.LevelWarn).Print("from the standard logger")

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 6 {
		t.Fatalf("want 6 lines, got %d:\n%s", len(lines), buf.String())
	}
	for _, line := range lines {
		if !strings.Contains(line, " node=node-a") {
			t.Errorf("line does not name its node: %s", line)
		}
	}
	for _, i := range []int{0, 1, 2, 5} {
		if n := strings.Count(lines[i], "node="); n != 1 {
			t.Errorf("node named %d times: %s", n, lines[i])
		}
	}
	if !strings.HasSuffix(lines[0], " node=node-a") || !strings.Contains(lines[0], `msg=plain k=1`) {
		t.Errorf("the node is not last, after the line as it was: %s", lines[0])
	}
	if !strings.Contains(lines[2], "user=alice") {
		t.Errorf("the record's other attributes were lost: %s", lines[2])
	}
	if !strings.Contains(lines[3], "node=node-b") {
		t.Errorf("a node attribute with another value was dropped: %s", lines[3])
	}
	if !strings.Contains(lines[4], "g.node=node-a") {
		t.Errorf("a grouped attribute was dropped: %s", lines[4])
	}
	if WithNode(base, "") != base {
		t.Error("an empty id changed the logger")
	}
}
