package chat

import (
	"context"
	"slices"

	"github.com/imcore/im/protocol"
)

// lockedMembers is what withMemberLocks read and what its write returned.
type lockedMembers struct {
	memberList
	err error // the write's error
}

// withMemberLocks runs write holding the locks of conv's members (the
// caller among them, else forbidden) and of the users extra names for that
// membership: write changes all their sessions.
//
// In a group it first takes the group's own lock (its conversation id,
// which no user id can equal). Every send to the group and every change of
// its members holds it, so the members read under it stay current until
// write returns: the store's version check then always passes, and no
// write has to start again because the members moved. Sends to one group
// were serialised by their members' locks anyway; the group's lock, taken
// before any user's, adds no wait and keeps the lock order acyclic (other
// paths take one user's lock and no group's).
//
// write's error is returned in the result; a membership or lookup failure
// as a protocol error.
func (s *Service) withMemberLocks(ctx context.Context, conv protocol.Conv, user string, extra func(memberList) ([]string, *protocol.Error), write func(memberList) error) (lockedMembers, *protocol.Error) {
	if conv.Kind == protocol.ConvGroup {
		unlock, err := s.locks.Lock(ctx, conv.String())
		if err != nil {
			return lockedMembers{err: err}, nil
		}
		defer unlock()
	}
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
	err := s.withUserLocks(ctx, lockSet, func() error { return write(members) })
	return lockedMembers{memberList: members, err: err}, nil
}
