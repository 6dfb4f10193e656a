package chat

import (
	"context"
	"errors"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// maxStaleRetries bounds how often a write is computed again because the
// group's members changed in between.
const maxStaleRetries = 100

// writtenMembers is what withMembers read and what its write returned.
type writtenMembers struct {
	memberList
	err error // the write's error
}

// withMembers reads conv's members (the caller among them, else
// forbidden), then runs write with them. A group write made with a
// membership version that moved on meanwhile (store.ErrStaleMembers) is
// computed again with the members as they now are: the store checks the
// version under the group's gate, so a write never applies to members it
// was not computed for. write's error is returned in the result; a
// membership or lookup failure as a protocol error.
func (s *Service) withMembers(ctx context.Context, conv protocol.Conv, user string, write func(memberList) error) (writtenMembers, *protocol.Error) {
	for attempt := 0; ; attempt++ {
		members, perr := s.members(ctx, conv, user)
		if perr != nil {
			return writtenMembers{}, perr
		}
		err := write(members)
		if errors.Is(err, store.ErrStaleMembers) && attempt < maxStaleRetries {
			continue
		}
		return writtenMembers{memberList: members, err: err}, nil
	}
}
