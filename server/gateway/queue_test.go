package gateway

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestQueueBoundsFramesAndBytes(t *testing.T) {
	var gauge int
	q := newOutQueue(3, 100, func(d int) { gauge += d })
	if !q.tryPush(make([]byte, 60)) || !q.tryPush(make([]byte, 40)) {
		t.Fatal("frames within the budget refused")
	}
	if q.tryPush(make([]byte, 1)) {
		t.Fatal("a byte over the budget taken")
	}
	frames, size := q.take(10)
	if len(frames) != 2 || size != 100 {
		t.Fatalf("take: %d frames, %d bytes", len(frames), size)
	}
	// Taken but not written: still counted.
	if q.tryPush(make([]byte, 1)) {
		t.Fatal("bytes being written were not counted")
	}
	q.release(size)
	if gauge != 0 {
		t.Fatalf("gauge %d after release, want 0", gauge)
	}
	for i := range 3 {
		if !q.tryPush([]byte{byte(i)}) {
			t.Fatalf("frame %d of 3 refused", i+1)
		}
	}
	if q.tryPush([]byte{9}) {
		t.Fatal("a fourth frame taken")
	}
}

func TestQueueTakesOneOversizeFrameWhenEmpty(t *testing.T) {
	q := newOutQueue(10, 100, nil)
	if !q.tryPush(make([]byte, 500)) {
		t.Fatal("an oversize frame refused by an empty queue: it could never be sent")
	}
	if q.tryPush(make([]byte, 1)) {
		t.Fatal("more taken after an oversize frame")
	}
}

func TestQueueWaiterWakesOnRelease(t *testing.T) {
	q := newOutQueue(10, 100, nil)
	q.tryPush(make([]byte, 100))
	_, size := q.take(1)
	done := make(chan error, 1)
	go func() { done <- q.pushWait(context.Background(), make([]byte, 50)) }()
	select {
	case err := <-done:
		t.Fatalf("pushWait returned %v while the bytes were still being written", err)
	case <-time.After(50 * time.Millisecond):
	}
	q.release(size)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("pushWait not woken by the release")
	}
}

func TestQueueCloseWakesWaitersAndDiscards(t *testing.T) {
	var gauge int
	q := newOutQueue(10, 100, func(d int) { gauge += d })
	q.tryPush(make([]byte, 30))
	_, taken := q.take(1)
	q.tryPush(make([]byte, 70))
	done := make(chan error, 1)
	go func() { done <- q.pushWait(context.Background(), make([]byte, 50)) }()
	q.close(true)
	select {
	case err := <-done:
		if !errors.Is(err, errClosed) {
			t.Fatalf("pushWait after close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("close did not wake the waiter")
	}
	if n, bytes := q.len(); n != 0 || bytes != taken {
		t.Fatalf("after a discarding close: %d frames, %d bytes; want 0 and the %d being written", n, bytes, taken)
	}
	q.release(taken)
	if gauge != 0 {
		t.Fatalf("gauge %d, want 0", gauge)
	}
	if q.tryPush([]byte{1}) {
		t.Fatal("a closed queue took a frame")
	}
}
