package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Run returns promptly when its context ends while it waits for the
// welcome of a server slow to answer the hello.
func TestRunEndsPromptlyDuringHello(t *testing.T) {
	helloRead := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		ws.ReadMessage() // the hello, never answered
		select {
		case helloRead <- struct{}{}:
		default:
		}
		ws.ReadMessage() // until the client goes
	}))
	t.Cleanup(srv.Close)
	p := newProfile(t, "ws"+strings.TrimPrefix(srv.URL, "http")+"/ws", "alice", "")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.client.Run(ctx) }()
	returned := make(chan struct{})
	t.Cleanup(func() { <-returned }) // before the profile's store closes
	go func() { <-done; close(returned) }()
	select {
	case <-helloRead:
	case <-time.After(waitTimeout):
		t.Fatal("no hello")
	}
	cancel()
	select {
	case <-returned:
	case <-time.After(3 * time.Second):
		t.Fatal("Run still running 3s after its context ended")
	}
}
