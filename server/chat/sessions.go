package chat

import (
	"context"
	"errors"

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
	page, err := s.store.Sync(ctx, c.User, store.SyncQuery{Since: f.Since, Limit: limit, SubBiz: f.SubBiz})
	if err != nil {
		return nil, s.internal("sync", err, "user", c.User)
	}
	if sessions, cut := cutSessions(page.Sessions, s.limits.MaxPageBytes); cut {
		page.Sessions, page.HasMore = sessions, true
		page.Cursor = sessions[len(sessions)-1].ActiveTS
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
	res, err := s.store.SessionOp(ctx, c.User, f.Conv, op, args)
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

// Resync nudges every device of users to sync from its cursor, with each
// user's newest session timestamp: pushes to them may have been lost (a
// node's presence lost in Redis), and a sync shows whatever they missed
// (a session's write_seq beyond what a device holds makes it fetch the
// messages).
func (s *Service) Resync(ctx context.Context, users []string) {
	for _, user := range users {
		cursor, err := s.store.SessionClock(ctx, user)
		if err != nil {
			s.log.Warn("resync: the session clock is unreadable; the devices sync at their next nudge", "user", user, "err", err)
			continue
		}
		s.nudge(user, cursor)
	}
}
