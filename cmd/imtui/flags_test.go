package main

import (
	"errors"
	"io"
	"testing"
)

// TestNotifyFlag checks that notifications are on by default and that
// -notify=false turns them off.
func TestNotifyFlag(t *testing.T) {
	o, err := parseOptions([]string{"-user", "alice"}, io.Discard)
	if err != nil || !o.notify {
		t.Fatalf("default: notify %v, %v", o.notify, err)
	}
	o, err = parseOptions([]string{"-user", "alice", "-notify=false"}, io.Discard)
	if err != nil || o.notify {
		t.Fatalf("-notify=false: notify %v, %v", o.notify, err)
	}
}

// TestThemeFlag checks -theme: auto by default, dark or light, nothing else.
func TestThemeFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
		bad  bool
	}{
		{nil, "auto", false},
		{[]string{"-theme", "light"}, "light", false},
		{[]string{"-theme", "dark"}, "dark", false},
		{[]string{"-theme", "solarized"}, "", true},
	} {
		o, err := parseOptions(append([]string{"-user", "alice"}, tc.args...), io.Discard)
		if tc.bad {
			var u usageError
			if !errors.As(err, &u) {
				t.Errorf("%v: err %v, want a usage error", tc.args, err)
			}
			continue
		}
		if err != nil || o.theme != tc.want {
			t.Errorf("%v: theme %q, %v; want %q", tc.args, o.theme, err, tc.want)
		}
	}
}

// TestSeveralServers checks that -server takes several comma-separated
// WebSocket URLs (the nodes of one deployment), each checked.
func TestSeveralServers(t *testing.T) {
	o, err := parseOptions([]string{"-user", "alice", "-server", "ws://10.0.0.1:7070/ws, wss://im.example/ws"}, io.Discard)
	if err != nil {
		t.Fatalf("two URLs refused: %v", err)
	}
	if o.server != "ws://10.0.0.1:7070/ws, wss://im.example/ws" {
		t.Fatalf("server %q", o.server)
	}
	for _, bad := range []string{"ws://10.0.0.1:7070/ws,http://im.example/ws", ",", "ws://a/ws,,"} {
		_, err := parseOptions([]string{"-user", "alice", "-server", bad}, io.Discard)
		var u usageError
		if !errors.As(err, &u) {
			t.Errorf("-server %q: err %v, want a usage error", bad, err)
		}
	}
}
