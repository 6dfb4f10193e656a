// Package userlock is the per-user critical section of the session model:
// every write to one user's sessions runs holding that user's lock. A
// group's conversation id is locked the same way around sends to it and
// changes of its members (no user id contains ':', so the keys never
// collide). The
// in-process implementation serves one server; a scaled-out deployment
// needs a distributed one behind the same interface.
package userlock

import (
	"context"
	"sync"
)

// Locker grants the lock of one user at a time.
type Locker interface {
	// Lock blocks until it holds user's lock or ctx ends; unlock releases
	// it.
	Lock(ctx context.Context, user string) (unlock func(), err error)
}

// Local is a Locker for one process: a mutex per user, kept only while
// someone holds or waits for it.
type Local struct {
	mu    sync.Mutex
	users map[string]*entry
}

var _ Locker = (*Local)(nil)

type entry struct {
	token chan struct{} // holds one value while the lock is free
	refs  int           // holders and waiters
}

// NewLocal returns an in-process Locker.
func NewLocal() *Local { return &Local{users: make(map[string]*entry)} }

// Lock implements Locker.
func (l *Local) Lock(ctx context.Context, user string) (func(), error) {
	l.mu.Lock()
	e := l.users[user]
	if e == nil {
		e = &entry{token: make(chan struct{}, 1)}
		e.token <- struct{}{}
		l.users[user] = e
	}
	e.refs++
	l.mu.Unlock()
	select {
	case <-e.token:
		return func() { l.release(user, e, true) }, nil
	case <-ctx.Done():
		l.release(user, e, false)
		return nil, ctx.Err()
	}
}

func (l *Local) release(user string, e *entry, held bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if held {
		e.token <- struct{}{}
	}
	e.refs--
	if e.refs == 0 {
		delete(l.users, user)
	}
}
