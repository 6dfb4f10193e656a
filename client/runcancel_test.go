package client

import (
	"context"
	"testing"
	"time"

	"github.com/imcore/im/internal/fakeserver"
	"github.com/imcore/im/protocol"
)

// Run returns promptly when its context ends while it waits for the
// welcome of a server slow to answer the hello.
func TestRunEndsPromptlyDuringHello(t *testing.T) {
	helloRead := make(chan struct{}, 1)
	srv := fakeserver.Start(t, fakeserver.Options{OnHello: func(*fakeserver.Conn, *protocol.Hello) bool {
		select {
		case helloRead <- struct{}{}:
		default:
		}
		return false // never answered
	}})
	p := newProfile(t, srv.URL, "alice", "")
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
