package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestAwaitFileReturnsOnceTheFileExists(t *testing.T) {
	path := filepath.Join(t.TempDir(), "start")
	done := make(chan error, 1)
	go func() { done <- awaitFile(context.Background(), path, time.Minute) }()
	select {
	case err := <-done:
		t.Fatalf("returned before the file existed: %v", err)
	default:
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("awaitFile: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("awaitFile did not return after the file appeared")
	}
}

func TestAwaitFileGivesUpAfterItsBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "never")
	if err := awaitFile(context.Background(), path, 50*time.Millisecond); err == nil {
		t.Fatal("awaitFile returned nil for a file that never appeared")
	}
}
