package userlock

import (
	"context"
	"sync"
	"testing"
	"time"
)

func TestLocalExcludesPerUser(t *testing.T) {
	l := NewLocal()
	var wg sync.WaitGroup
	counts := map[string]*int{"alice": new(int), "bob": new(int)} // read-only map
	var inside sync.Map
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			user := []string{"alice", "bob"}[i%2]
			unlock, err := l.Lock(context.Background(), user)
			if err != nil {
				t.Error(err)
				return
			}
			if _, busy := inside.LoadOrStore(user, true); busy {
				t.Errorf("two holders of %s at once", user)
			}
			*counts[user]++ // safe only under the user's lock: -race checks it
			inside.Delete(user)
			unlock()
		}()
	}
	wg.Wait()
	if *counts["alice"] != 100 || *counts["bob"] != 100 {
		t.Fatalf("counts = %d, %d", *counts["alice"], *counts["bob"])
	}
	if len(l.users) != 0 {
		t.Fatalf("%d entries left after every lock was released", len(l.users))
	}
}

func TestLocalIndependentUsers(t *testing.T) {
	l := NewLocal()
	unlockA, _ := l.Lock(context.Background(), "alice")
	defer unlockA()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	unlockB, err := l.Lock(ctx, "bob") // not blocked by alice's holder
	if err != nil {
		t.Fatalf("bob's lock: %v", err)
	}
	unlockB()
}

func TestLocalLockGivesUpWithContext(t *testing.T) {
	l := NewLocal()
	unlock, _ := l.Lock(context.Background(), "alice")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Lock(ctx, "alice"); err == nil {
		t.Fatal("got a held lock with a cancelled context")
	}
	unlock()
	again, err := l.Lock(context.Background(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	again()
}
