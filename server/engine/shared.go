package engine

import (
	"context"
	"slices"
	"time"
)

// Locker takes critical sections that span processes. Engines that share
// one backend (the nodes of a scaled-out deployment) each keep their own
// memory, so none may trust what it holds of a conversation or a user that
// another may have changed: with a Locker, every operation that changes a
// conversation or a user takes its lock first, drops what it held of it,
// reads it again from the backend, and writes its rows before letting the
// lock go. Without one (Options.Locker nil: one process) the engine's
// memory is the truth and nothing of this happens.
//
// Keys are taken in the order given: the engine always takes a
// conversation's before users', and users' sorted, so that two operations
// never wait on each other. A Locker keeps the locks it gave for as long
// as their holder lives (a section may wait out a backend's outage); only
// a holder that died leaves them to expire.
type Locker interface {
	// Lock takes the locks of keys, waiting as long as ctx allows, and
	// returns what releases them.
	Lock(ctx context.Context, keys []string) (release func(), err error)
}

// settleWait bounds how long a release waits for the writes behind a
// section while the backend refuses them. The locks are kept alive
// meanwhile (a Locker keeps its locks while their holder lives): the next
// holder must read what this section changed, or it would act on state
// older than its rows, and a clock could go back. Past it the locks go
// and the writer keeps retrying (every row is a merge).
const settleWait = 2 * time.Minute

// shared reports whether the engine shares its backend with others.
func (e *Engine) shared() bool { return e.locker != nil }

// section is a set of locks held across processes: at most one
// conversation's, and users' taken at once (an operation that took users
// releases them before it takes others, so that every engine takes them in
// one order).
type section struct {
	e     *Engine
	conv  func()
	users func()
}

// leave writes what the section changed and releases its locks, users'
// first. It does nothing in one process.
func (s *section) leave(ctx context.Context) {
	if s == nil {
		return
	}
	s.leaveUsers(ctx)
	if s.conv != nil {
		s.conv()
		s.conv = nil
	}
}

// leaveUsers writes what the section changed and releases the users'
// locks it holds.
func (s *section) leaveUsers(ctx context.Context) {
	if s == nil || s.users == nil {
		return
	}
	s.e.settle(ctx)
	s.users()
	s.users = nil
}

// settle waits until the rows put so far are written, for a while when
// the backend refuses them.
func (e *Engine) settle(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleWait)
	defer cancel()
	for {
		err := e.flush.barrier(ctx)
		if err == nil || ctx.Err() != nil {
			if err != nil {
				e.log.Warn("releasing locks before the section's rows are written", "err", err)
			}
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(flushRetry):
		}
	}
}

// enterConv returns conv's state for an operation that changes it. With a
// Locker it first takes the conversation's lock, reads the conversation
// again and repairs what a crash of another engine left underived; the
// returned section then holds the lock until leave.
func (e *Engine) enterConv(ctx context.Context, conv string) (*convState, *section, error) {
	s := &section{e: e}
	if !e.shared() {
		cs, err := e.convs.get(ctx, e.be, conv)
		return cs, s, err
	}
	release, err := e.locker.Lock(ctx, []string{"conv/" + conv})
	if err != nil {
		return nil, nil, err
	}
	s.conv = release
	e.convs.forget(conv)
	cs, err := e.convs.get(ctx, e.be, conv)
	if err == nil {
		err = e.repairShared(ctx, s, cs)
	}
	if err != nil {
		s.leave(ctx)
		return nil, nil, err
	}
	return cs, s, nil
}

// lockUsers adds the locks of users to s and drops what the engine held of
// them, so that the operation reads them again. It does nothing in one
// process. s must hold no user's lock yet.
func (e *Engine) lockUsers(ctx context.Context, s *section, users []string) error {
	if !e.shared() || len(users) == 0 {
		return nil
	}
	if s.users != nil {
		panic("engine: a section takes users' locks twice")
	}
	users = slices.Compact(slices.Sorted(slices.Values(users)))
	keys := make([]string, len(users))
	for i, u := range users {
		keys[i] = "user/" + u
	}
	release, err := e.locker.Lock(ctx, keys)
	if err != nil {
		return err
	}
	s.users = release
	e.users.forget(users)
	return nil
}

// enterUsers is lockUsers for an operation that changes only users.
func (e *Engine) enterUsers(ctx context.Context, users ...string) (*section, error) {
	s := &section{e: e}
	if err := e.lockUsers(ctx, s, users); err != nil {
		return nil, err
	}
	return s, nil
}

// peekConv returns conv's state for an operation that only reads it: with
// a Locker, read afresh from the backend and not kept (another engine may
// have changed it; an operation holding its lock may be changing the one
// in memory).
func (e *Engine) peekConv(ctx context.Context, conv string) (*convState, error) {
	if e.owned() && !e.owners.OwnsConv(conv) {
		// Another node's: as written (session operations read its ticks).
		return e.convs.read(ctx, e.be, conv)
	}
	if !e.shared() {
		return e.convs.get(ctx, e.be, conv)
	}
	return e.convs.read(ctx, e.be, conv)
}

// repairShared derives again, under the conversation's lock, the messages
// another engine stored but did not derive to the end (it crashed, or its
// backend failed it): the next operation on the conversation finishes
// them, whichever engine it runs on.
func (e *Engine) repairShared(ctx context.Context, s *section, cs *convState) error {
	cs.mu.Lock()
	behind := cs.derived < cs.maxSeq
	cs.mu.Unlock()
	if !behind {
		return nil
	}
	err := e.repairConvState(ctx, cs, func(users []string) error {
		return e.lockUsers(ctx, s, users)
	})
	s.leaveUsers(ctx)
	return err
}
