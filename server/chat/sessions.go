package chat

import (
	"context"
	"errors"
	"slices"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/hub"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/session"
)

// Sync page sizes.
const (
	DefaultSyncLimit = 200
	MaxSyncLimit     = 1000
)

// Sync answers the sessions of one of the caller's lists changed after a
// cursor.
func (s *Service) Sync(ctx context.Context, c Caller, f *protocol.Sync) (*protocol.Sessions, *protocol.Error) {
	if f.Since < 0 || f.Limit < 0 {
		return nil, protocol.Errorf(protocol.CodeInvalid, "since and limit cannot be negative")
	}
	if f.SubBiz != "" && !protocol.ValidUser(f.SubBiz) {
		return nil, protocol.Errorf(protocol.CodeInvalid, "sub_biz must be 1-32 characters of [a-z0-9_.-]")
	}
	limit := f.Limit
	switch {
	case limit == 0:
		limit = DefaultSyncLimit
	case limit > MaxSyncLimit:
		limit = MaxSyncLimit
	}
	var page store.SyncPage
	// Sync may turn expired mutes off: a write to the caller's sessions.
	err := s.withUserLock(ctx, c.User, func() error {
		var err error
		page, err = s.store.Sync(ctx, c.User, store.SyncQuery{Since: f.Since, Limit: limit, SubBiz: f.SubBiz})
		return err
	})
	if err != nil {
		return nil, s.internal("sync", err, "user", c.User)
	}
	return &protocol.Sessions{Ref: f.Ref, Sessions: page.Sessions, Cursor: page.Cursor, HasMore: page.HasMore, TotalUnread: page.TotalUnread}, nil
}

// SessionOp applies a session operation and, when it changed something,
// nudges every device of the caller to sync.
func (s *Service) SessionOp(ctx context.Context, c Caller, f *protocol.SessionOp) (*protocol.OK, *protocol.Error) {
	conv, ok := protocol.ParseConv(f.Conv)
	if !ok {
		return nil, protocol.Errorf(protocol.CodeInvalid, "%q is not a conversation id", f.Conv)
	}
	if conv.Kind != protocol.ConvBiz {
		if _, perr := s.checkMember(ctx, conv, c.User); perr != nil {
			return nil, perr
		}
	}
	op, args := session.Op(f.Op), session.OpArgs{Until: f.Until, Category: f.Category}
	if perr := session.Validate(op, args); perr != nil {
		return nil, perr
	}
	var res store.SessionResult
	err := s.withUserLock(ctx, c.User, func() error {
		var err error
		res, err = s.store.SessionOp(ctx, c.User, f.Conv, op, args)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, protocol.Errorf(protocol.CodeNotFound, "no session %s", f.Conv)
	}
	if err != nil {
		return nil, s.internal("session op", err, "user", c.User, "conv", f.Conv, "op", f.Op)
	}
	if res.Changed {
		s.nudge(c.User, res.Cursor)
	}
	return &protocol.OK{Ref: f.Ref, Session: &res.Session}, nil
}

// nudge tells every device of user that its sessions changed.
func (s *Service) nudge(user string, cursor int64) {
	s.push.Push(user, hub.Push{Frame: protocol.MustEncode(&protocol.SessionSync{Cursor: cursor})}, nil)
}

// withUserLocks runs fn holding the locks of every user, taken in sorted
// order.
func (s *Service) withUserLocks(ctx context.Context, users []string, fn func() error) error {
	sorted := slices.Clone(users)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	for _, u := range sorted {
		unlock, err := s.locks.Lock(ctx, u)
		if err != nil {
			return err
		}
		defer unlock()
	}
	return fn()
}

// withUserLock runs fn holding user's lock.
func (s *Service) withUserLock(ctx context.Context, user string, fn func() error) error {
	unlock, err := s.locks.Lock(ctx, user)
	if err != nil {
		return err
	}
	defer unlock()
	return fn()
}
