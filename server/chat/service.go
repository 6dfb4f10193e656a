// Package chat is the messaging domain, written once against narrow
// interfaces: sending with per-conversation sequencing, history, delivered
// and read receipts with their tick boundaries, pending deliveries and
// typing. It knows nothing of WebSockets or of the storage engine.
package chat

import (
	"context"
	"log/slog"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/hub"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/server/userlock"
)

// Pusher reaches the online devices of users. *hub.Hub is the in-process
// implementation. A push is a hint: what a push fails to deliver stays
// pending in the store and is pushed again on the user's next hello.
type Pusher interface {
	// Push delivers p to every device of user but skip, without blocking,
	// and returns how many devices took it.
	Push(user string, p hub.Push, skip hub.Device) int
}

var _ Pusher = (*hub.Hub)(nil)

// Caller is the authenticated user and device a request comes from.
type Caller struct {
	User   string
	Device hub.Device
}

// Service implements the requests of the protocol's messaging and session
// sections.
type Service struct {
	store  store.Store
	push   Pusher
	locks  userlock.Locker
	limits protocol.Limits
	log    *slog.Logger
}

// New returns a Service storing in st, pushing through p, and holding a
// user's lock from locks around every write to that user's sessions.
func New(st store.Store, p Pusher, locks userlock.Locker, limits protocol.Limits, log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	return &Service{store: st, push: p, locks: locks, limits: limits, log: log}
}

// members returns the members of conv after checking that user is one of
// them: forbidden otherwise, not_found for a group that does not exist.
func (s *Service) members(conv protocol.Conv, user string) ([]string, *protocol.Error) {
	switch conv.Kind {
	case protocol.ConvDirect:
		if !conv.HasMember(user) {
			return nil, protocol.Errorf(protocol.CodeForbidden, "not a member of %s", conv)
		}
		return []string{conv.A, conv.B}, nil
	case protocol.ConvGroup:
		return nil, protocol.Errorf(protocol.CodeNotFound, "no group %s", conv)
	}
	return nil, protocol.Errorf(protocol.CodeInvalid, "%s holds no messages", conv)
}

// internal logs a storage failure and turns it into the error a client gets.
func (s *Service) internal(op string, err error, attrs ...any) *protocol.Error {
	s.log.Error(op+" failed", append(attrs, "err", err)...)
	return protocol.Errorf(protocol.CodeInternal, "%s failed; nothing was changed, try again", op)
}

// pushStatus sends a conversation's new tick boundaries to every online
// device of every member.
func (s *Service) pushStatus(conv string, members []string, t protocol.Ticks) {
	frame := protocol.MustEncode(&protocol.Status{Conv: conv, DeliveredSeq: t.DeliveredSeq, ReadSeq: t.ReadSeq})
	for _, m := range members {
		s.push.Push(m, hub.Push{Frame: frame}, nil)
	}
}

// Receipts answers message info: every member's boundaries.
func (s *Service) Receipts(ctx context.Context, c Caller, f *protocol.ReceiptsRequest) (*protocol.ReceiptsReply, *protocol.Error) {
	conv, perr := protocol.ParseMessageConv(f.Conv)
	if perr != nil {
		return nil, perr
	}
	members, perr := s.members(conv, c.User)
	if perr != nil {
		return nil, perr
	}
	rows, err := s.store.Receipts(ctx, f.Conv)
	if err != nil {
		return nil, s.internal("receipts", err, "conv", f.Conv)
	}
	// A conversation with no message yet has no rows: every member is at 0.
	byUser := make(map[string]protocol.MemberReceipt, len(rows))
	for _, r := range rows {
		byUser[r.User] = r
	}
	out := make([]protocol.MemberReceipt, 0, len(members))
	for _, m := range members {
		r, ok := byUser[m]
		if !ok {
			r = protocol.MemberReceipt{User: m}
		}
		out = append(out, r)
	}
	return &protocol.ReceiptsReply{Ref: f.Ref, Conv: f.Conv, Members: out}, nil
}

// Typing forwards a typing indicator to the other members' online devices.
func (s *Service) Typing(c Caller, f *protocol.Typing) *protocol.Error {
	conv, perr := protocol.ParseMessageConv(f.Conv)
	if perr != nil {
		return perr
	}
	members, perr := s.members(conv, c.User)
	if perr != nil {
		return perr
	}
	frame := protocol.MustEncode(&protocol.Typing{Conv: f.Conv, User: c.User})
	for _, m := range members {
		if m != c.User {
			s.push.Push(m, hub.Push{Frame: frame}, nil)
		}
	}
	return nil
}
