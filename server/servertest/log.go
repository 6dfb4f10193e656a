package servertest

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// keptLogLines is how many of a server's last log lines a failed test
// prints.
const keptLogLines = 200

// failureLog returns a logger whose lines are kept in memory and printed
// only if the test fails: a passing test stays quiet, and a failing one
// (often in a loaded CI run no one can watch again) shows what its server
// said last. Registered before the server's stop, it prints after it, so
// the lines of the shutdown are in.
func failureLog(t testing.TB) *slog.Logger {
	kept := &lineRing{max: keptLogLines}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		lines, dropped := kept.snapshot()
		if dropped > 0 {
			t.Logf("server log: %d earlier lines left out", dropped)
		}
		t.Logf("server log, last %d lines:\n%s", len(lines), strings.Join(lines, ""))
	})
	return slog.New(slog.NewTextHandler(kept, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// lineRing is an io.Writer keeping the last max lines written to it (one
// slog record per Write).
type lineRing struct {
	mu      sync.Mutex
	max     int
	lines   []string
	dropped int
}

func (r *lineRing) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, line := range bytes.SplitAfter(p, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		if len(r.lines) == r.max {
			r.lines = r.lines[1:]
			r.dropped++
		}
		r.lines = append(r.lines, string(line))
	}
	return len(p), nil
}

func (r *lineRing) snapshot() ([]string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lines...), r.dropped
}
