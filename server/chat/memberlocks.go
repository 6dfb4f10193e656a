package chat

import (
	"context"
	"errors"
	"slices"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// maxMembershipRetries bounds how often a group write starts again because
// the members changed between reading them and holding their locks. Each
// retry means another change of the group went through.
const maxMembershipRetries = 64

// errMembersMoved says that the members changed before their locks were
// all held.
var errMembersMoved = errors.New("members changed while locking")

// lockedMembers is what withMemberLocks read and what its write returned.
type lockedMembers struct {
	memberList
	err error // the write's error
}

// withMemberLocks runs write holding the locks of conv's members (the
// caller among them, else forbidden) and of the users extra names for that
// membership. A group's members are read again once the locks are held: a
// change of the group needs the locks of all its members, so if the
// version is unchanged then it cannot change until write returns, and the
// store's version check passes. If it changed, everything starts again
// with the new members. write's error is returned in the result; a
// membership or lookup failure as a protocol error.
func (s *Service) withMemberLocks(ctx context.Context, conv protocol.Conv, user string, extra func(memberList) ([]string, *protocol.Error), write func(memberList) error) (lockedMembers, *protocol.Error) {
	for attempt := 0; ; attempt++ {
		members, perr := s.members(ctx, conv, user)
		if perr != nil {
			return lockedMembers{}, perr
		}
		lockSet := members.users
		if extra != nil {
			more, perr := extra(members)
			if perr != nil {
				return lockedMembers{}, perr
			}
			lockSet = append(slices.Clone(members.users), more...)
		}
		var lockPerr *protocol.Error
		err := s.withUserLocks(ctx, lockSet, func() error {
			if conv.Kind == protocol.ConvGroup {
				now, perr := s.members(ctx, conv, user)
				if perr != nil {
					lockPerr = perr
					return nil
				}
				if now.version != members.version {
					return errMembersMoved
				}
			}
			return write(members)
		})
		if lockPerr != nil {
			return lockedMembers{}, lockPerr
		}
		if (errors.Is(err, errMembersMoved) || errors.Is(err, store.ErrStaleMembers)) && attempt < maxMembershipRetries {
			continue
		}
		return lockedMembers{memberList: members, err: err}, nil
	}
}
