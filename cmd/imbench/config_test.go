package main

import (
	"bytes"
	"errors"
	"flag"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseConfig(t *testing.T) {
	var out bytes.Buffer
	cfg, err := parseConfig([]string{"dm", "-pairs", "7", "-rate", "500"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Workload != "dm" || cfg.Pairs != 7 || cfg.Rate != 500 || cfg.Duration != 10*time.Second || cfg.Warmup != 2*time.Second {
		t.Fatalf("got %+v", cfg)
	}
	if !strings.HasPrefix(cfg.RunID, "b") {
		t.Fatalf("run id %q", cfg.RunID)
	}
	cfg, err = parseConfig([]string{"-conns", "5", "idle"}, &out)
	if err != nil || cfg.Workload != "idle" || cfg.Conns != 5 || cfg.Warmup != 0 || cfg.Duration != 3*time.Second {
		t.Fatalf("flags first: %+v, %v", cfg, err)
	}
	for _, bad := range [][]string{{}, {"nosuch"}, {"dm", "-ack", "later"}, {"dm", "-window", "0"}, {"sync", "-changes", "20", "-sessions", "10"},
		{"dm", "-run-id", "Bad"}, {"dm", "extra"}, {"dm", "-ack", "batch", "-mark-ids=false"}} {
		if _, err := parseConfig(bad, &out); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

func TestHelp(t *testing.T) {
	var out bytes.Buffer
	if _, err := parseConfig([]string{"-h"}, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("got %v", err)
	}
	for _, want := range []string{"dm ", "group ", "catchup ", "idle ", "sync ", "echo ", "-max-handshakes-per-ip 0", "-pid", "-mark-ids"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q", want)
		}
	}
	if code := realMain([]string{"-h"}, &out, &out); code != 0 {
		t.Fatalf("-h exits %d", code)
	}
	if code := realMain([]string{"nosuch"}, &out, &out); code != 2 {
		t.Fatalf("a bad command line exits %d", code)
	}
}

func TestServerListSpreadsConnections(t *testing.T) {
	c := &Config{Server: "ws://a/ws, ws://b/ws"}
	got := []string{c.serverFor(0), c.serverFor(1), c.serverFor(2)}
	want := []string{"ws://a/ws", "ws://b/ws", "ws://a/ws"}
	if !slices.Equal(got, want) {
		t.Fatalf("serverFor: %v, want %v", got, want)
	}
	if one := (&Config{Server: "ws://only/ws"}); one.serverFor(5) != "ws://only/ws" {
		t.Fatalf("one server: %q", one.serverFor(5))
	}
}
