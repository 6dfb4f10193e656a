package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/imcore/im/server"
	"github.com/imcore/im/server/servertest"
)

// startServer starts an in-process server with the limits a benchmark
// needs out of the way.
func startServer(t testing.TB) *servertest.Env {
	return servertest.Start(t, func(c *server.Config) {
		gw := &c.Gateway
		gw.RateLimit, gw.RateBurst = 1e6, 1_000_000
		gw.MaxConnsPerUser, gw.MaxHandshakes, gw.MaxHandshakesPerIP = 0, 0, 0
	})
}

// bench runs a workload against env and requires it to finish without
// error. Runs are bounded by their count: the durations are only upper
// bounds, so the outcome does not depend on the machine's speed.
func bench(t *testing.T, env *servertest.Env, args ...string) *Report {
	t.Helper()
	args = append(args, "-server", env.URL, "-q", "-echo", servertest.Timeout.String(), "-echo-count", "200",
		"-warmup", "0", "-drain", servertest.Timeout.String(), "-setup-timeout", servertest.Timeout.String())
	if !strings.Contains(strings.Join(args, " "), "-duration") {
		args = append(args, "-duration", servertest.Timeout.String())
	}
	cfg, err := parseConfig(args, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	r, err := run(context.Background(), cfg, func(string, ...any) {})
	if err != nil {
		t.Fatalf("%s: %v", args[0], err)
	}
	var out bytes.Buffer
	if err := output(cfg, r, &out); err != nil {
		t.Fatal(err)
	}
	if r.Errors.Total != 0 {
		t.Fatalf("%s: %d errors:\n%s", args[0], r.Errors.Total, out.String())
	}
	if r.Echo == nil || r.Echo.RoundTrips != 200 || r.Echo.RTT.N != 50 {
		t.Fatalf("%s: echo %+v", args[0], r.Echo)
	}
	if _, ok := r.EchoRatio.get(r.Rates.keys[0]); !ok {
		t.Fatalf("%s: no echo ratio for %s:\n%s", args[0], r.Rates.keys[0], out.String())
	}
	t.Logf("%s", out.String())
	return r
}

// wantCounts checks a report's counts.
func wantCounts(t *testing.T, r *Report, want map[string]int64) {
	t.Helper()
	for k, v := range want {
		if got, _ := r.Counts.get(k); got != v {
			t.Errorf("%s %s: got %d, want %d", r.Workload, k, got, v)
		}
	}
}

func TestWorkloads(t *testing.T) {
	env := startServer(t)
	pid := strconv.Itoa(os.Getpid()) // the server runs in this process

	t.Run("dm closed", func(t *testing.T) {
		r := bench(t, env, "dm", "-pairs", "3", "-window", "2", "-count", "30", "-pid", pid)
		wantCounts(t, r, map[string]int64{"messages": 30, "sent": 30, "read": 30, "reads_missing": 0, "recipient_msgs": 30, "recipient_msgs_missing": 0})
		if s, _ := r.Latency.get("send_read"); s.N != 30 || s.Missing != 0 {
			t.Errorf("send_read over %d messages, %d missing; want 30, none", s.N, s.Missing)
		}
		if r.ServerProc == nil || r.ServerProc.RSSMaxKiB <= 0 {
			t.Errorf("server process not sampled: %+v", r.ServerProc)
		}
	})
	t.Run("dm closed, marks without id", func(t *testing.T) {
		r := bench(t, env, "dm", "-pairs", "3", "-window", "2", "-count", "30", "-mark-ids=false")
		wantCounts(t, r, map[string]int64{"messages": 30, "sent": 30, "read": 30, "reads_missing": 0, "recipient_msgs": 30, "recipient_msgs_missing": 0})
	})
	t.Run("dm open", func(t *testing.T) {
		r := bench(t, env, "dm", "-pairs", "3", "-rate", "3000", "-count", "30", "-ack", "batch")
		wantCounts(t, r, map[string]int64{"messages": 30, "sent": 30, "read": 30, "reads_missing": 0})
	})
	t.Run("group", func(t *testing.T) {
		r := bench(t, env, "group", "-groups", "2", "-group-size", "4", "-window", "3", "-count", "10")
		wantCounts(t, r, map[string]int64{"messages": 10, "sent": 10, "read": 10, "recipient_msgs": 30, "recipient_msgs_missing": 0})
		if s, _ := r.Latency.get("send_recipient"); s.N != 30 {
			t.Errorf("send_recipient over %d deliveries, want 30", s.N)
		}
	})
	t.Run("catchup direct", func(t *testing.T) {
		r := bench(t, env, "catchup", "-users", "4", "-messages", "6", "-convs", "3", "-feeders", "6")
		wantCounts(t, r, map[string]int64{"users": 4, "users_done": 4, "messages_expected": 24, "messages_received": 24})
	})
	t.Run("catchup group", func(t *testing.T) {
		r := bench(t, env, "catchup", "-catchup-conv", "group", "-users", "4", "-messages", "6", "-convs", "3", "-catchup-sync=false")
		// Each group's creation is a system message, replayed too.
		wantCounts(t, r, map[string]int64{"users": 4, "users_done": 4, "messages_expected": 36, "messages_received": 36})
	})
	t.Run("idle", func(t *testing.T) {
		r := bench(t, env, "idle", "-conns", "5", "-duration", "1ms", "-pid", pid)
		wantCounts(t, r, map[string]int64{"conns": 5, "alive": 5})
		if _, ok := r.Values.get("server_rss_per_conn_kib"); !ok {
			t.Error("no RSS per connection")
		}
	})
	t.Run("sync", func(t *testing.T) {
		r := bench(t, env, "sync", "-sessions", "30", "-changes", "3", "-full-syncs", "2", "-count", "4")
		wantCounts(t, r, map[string]int64{"rounds": 4})
		if s, _ := r.Latency.get("full_sync"); s.N != 2 {
			t.Errorf("full syncs: %d", s.N)
		}
		if len(r.Notes) != 0 {
			t.Errorf("notes: %q", r.Notes)
		}
	})
	t.Run("echo", func(t *testing.T) {
		r := bench(t, env, "echo")
		if got, _ := r.Rates.get("round_trips_per_s"); got <= 0 {
			t.Errorf("round trips/s %v", got)
		}
	})
}

// TestExitStatus checks that a run that cannot reach its server fails.
func TestExitStatus(t *testing.T) {
	env := startServer(t)
	addr := env.Addr
	env.Stop() // nothing listens there any more
	var out bytes.Buffer
	code := realMain([]string{"dm", "-q", "-echo", "0", "-pairs", "1", "-server", "ws://" + addr + "/ws"}, &out, &out)
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), `"dial":1`) {
		t.Fatalf("the dial failure is not counted:\n%s", out.String())
	}
}
