package chat

import (
	"context"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// Mark applies a delivered or read frame: max-merges of the caller's
// boundaries. Every conversation whose tick minimum rose gets a status push
// to all its members' devices; a read that changed the caller's sessions
// nudges all the caller's devices to sync. The whole frame is refused, changing nothing,
// if any mark names a conversation the caller is not a member of.
func (s *Service) Mark(ctx context.Context, c Caller, kind store.MarkKind, marks []protocol.Mark) *protocol.Error {
	if perr := protocol.ValidateMarks(marks); perr != nil {
		return perr
	}
	membersOf := make(map[string][]string, len(marks))
	for _, m := range marks {
		if _, seen := membersOf[m.Conv]; seen {
			continue
		}
		conv, _ := protocol.ParseConv(m.Conv)
		members, perr := s.members(conv, c.User)
		if perr != nil {
			return perr
		}
		membersOf[m.Conv] = members
	}
	var res store.MarkResult
	err := s.withUserLock(ctx, c.User, func() error {
		var err error
		res, err = s.store.Mark(ctx, c.User, kind, marks)
		return err
	})
	if err != nil {
		return s.internal("mark", err, "user", c.User)
	}
	for _, ch := range res.Ticks {
		s.pushStatus(ch.Conv, membersOf[ch.Conv], ch.Ticks)
	}
	if res.SessionsChanged {
		s.nudge(c.User, res.Cursor)
	}
	return nil
}
