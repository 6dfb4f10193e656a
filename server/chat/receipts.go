package chat

import (
	"context"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// Mark applies a delivered or read frame and returns once it is durable:
// StartMark, then its finish.
func (s *Service) Mark(ctx context.Context, c Caller, kind store.MarkKind, marks []protocol.Mark) *protocol.Error {
	finish, perr := s.StartMark(ctx, c, kind, marks)
	if perr != nil {
		return perr
	}
	return finish(ctx)
}

// StartMark applies a delivered or read frame, max-merges of the caller's
// boundaries, and returns what finishes it: finish waits until the marks
// are durable, then pushes a status to all the members' devices of every
// conversation whose tick minimum rose, and nudges all the caller's devices
// to sync when a read changed the caller's sessions. The whole frame is
// refused, changing nothing, if any mark names a conversation the caller
// is not a member of. Frames started one after another apply in that
// order; their finishes may overlap.
func (s *Service) StartMark(ctx context.Context, c Caller, kind store.MarkKind, marks []protocol.Mark) (finish func(context.Context) *protocol.Error, perr *protocol.Error) {
	if perr := s.CheckMarks(ctx, c, marks); perr != nil {
		return nil, perr
	}
	res, err := s.store.Mark(ctx, c.User, kind, marks)
	if err != nil {
		return nil, s.internal("mark", err, "user", c.User)
	}
	return func(ctx context.Context) *protocol.Error {
		// Applied: the pushes are owed to the other members even if the
		// caller has gone meanwhile.
		ctx = context.WithoutCancel(ctx)
		if err := res.Written(ctx); err != nil {
			return s.internal("mark", err, "user", c.User)
		}
		for _, ch := range res.Ticks {
			s.pushStatusToMembers(ch)
		}
		if res.SessionsChanged {
			s.nudge(c.User, res.Cursor)
		}
		return nil
	}, nil
}

// CheckMarks says whether StartMark would refuse a delivered or read
// frame's marks (invalid, or naming a conversation the caller is not a
// member of), changing nothing: a frame checked on its own can then be
// applied merged with others.
func (s *Service) CheckMarks(ctx context.Context, c Caller, marks []protocol.Mark) *protocol.Error {
	if perr := protocol.ValidateMarks(marks); perr != nil {
		return perr
	}
	checked := make(map[string]bool, len(marks))
	for _, m := range marks {
		if checked[m.Conv] {
			continue
		}
		conv, _ := protocol.ParseConv(m.Conv)
		if _, perr := s.checkMember(ctx, conv, c.User); perr != nil {
			return perr
		}
		checked[m.Conv] = true
	}
	return nil
}

// pushStatusToMembers pushes a rise of a conversation's ticks to the
// members it rose for.
func (s *Service) pushStatusToMembers(ch store.TickChange) {
	s.pushStatus(ch.Conv, ch.Members, ch.Ticks)
}
