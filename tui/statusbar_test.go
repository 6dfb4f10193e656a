package tui

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/imcore/im/client"
)

// dialRefused is the error a client reports when nothing listens: the
// client's wrapping around a refused TCP connect.
var dialRefused = fmt.Errorf("dial ws://127.0.0.1:7070/ws: %w",
	&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)})

// TestStatusBarAt80Columns checks that an 80-column status bar keeps what
// the user needs when offline: the state with the countdown, why, the key
// that retries now and "? help"; the device id is shortened, the server
// gives way.
func TestStatusBarAt80Columns(t *testing.T) {
	f := statusFake()
	f.SetConn(client.Conn{State: client.Offline, RetryAt: testNow.Add(12 * time.Second), Err: dialRefused})
	h := newHarness(t, f, 80, 24)
	h.checkGeometry()
	bar := h.lineWith("offline")
	for _, want := range []string{"○ offline — retrying in 12s", "connection refused", "ctrl+l", "? help"} {
		if !strings.Contains(bar, want) {
			t.Errorf("the status bar lacks %q: %q", want, bar)
		}
	}
	// Wide, everything: the identity with the whole device id, the server.
	h.send(windowSize(200, 24))
	bar = h.lineWith("offline")
	for _, want := range []string{"alice@dev-081d355fd788d23cf3dce226", "ws://127.0.0.1:7070/ws", "? help"} {
		if !strings.Contains(bar, want) {
			t.Errorf("200 columns: the status bar lacks %q: %q", want, bar)
		}
	}
	// Online at 80 columns: who and where, and help.
	h.send(windowSize(80, 24))
	h.event(client.ConnChanged{Conn: client.Conn{State: client.Online}})
	bar = h.lineWith("● online")
	for _, want := range []string{"alice@dev-081d35", "? help"} {
		if !strings.Contains(bar, want) {
			t.Errorf("online: the status bar lacks %q: %q", want, bar)
		}
	}
	h.checkGeometry()
}

// TestReconnectKey checks that ctrl+l asks the client to connect now when
// offline, and says so; online it says there is nothing to do.
func TestReconnectKey(t *testing.T) {
	f := newFixture()
	f.SetConn(client.Conn{State: client.Offline, RetryAt: testNow.Add(25 * time.Second), Err: errors.New("connection refused")})
	h := newHarness(t, f, 100, 24)
	openBob(h) // the key works while typing too
	h.press("ctrl+l")
	if c := f.CallsOf("Reconnect"); len(c) != 1 {
		t.Fatalf("Reconnect calls %v", c)
	}
	h.contains("reconnecting now…")
	if v := h.m.chat.input.Value(); v != "" {
		t.Fatalf("the key was typed: %q", v)
	}
	h.event(client.ConnChanged{Conn: client.Conn{State: client.Online}})
	h.press("ctrl+l")
	if c := f.CallsOf("Reconnect"); len(c) != 1 {
		t.Fatalf("Reconnect called while online: %v", c)
	}
	h.contains("already online")
}
