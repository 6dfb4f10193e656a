// Package chat is the messaging domain, written once against narrow
// interfaces: sending with per-conversation sequencing, history, delivered
// and read receipts with their tick boundaries, pending deliveries and
// typing. It knows nothing of WebSockets or of the storage engine.
package chat

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/hub"
	"github.com/imcore/im/server/store"
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
	// Repeat says the request repeats one whose answer never came back
	// from the node that served it: a send found stored is pushed as new,
	// since nobody may have pushed it.
	Repeat bool
}

// Service implements the requests of the protocol's messaging and session
// sections.
type Service struct {
	store  Engine
	push   Pusher
	limits protocol.Limits
	people PeopleLimits
	quotas quotaSets
	log    *slog.Logger
	// gapWait bounds a replay pass's waits for seqs missing in the log
	// (see the const gapWait).
	gapWait time.Duration
}

// New returns a Service on the engine st, pushing through p.
func New(st Engine, p Pusher, limits protocol.Limits, log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	if limits.MaxPageBytes <= 0 {
		limits.MaxPageBytes = protocol.DefaultMaxPageBytes
	}
	return &Service{store: st, push: p, limits: limits, people: DefaultPeopleLimits, quotas: newQuotaSets(DefaultQuotas), log: log, gapWait: gapWait}
}

// members returns the members of conv after checking that user is one of
// them: forbidden otherwise, not_found for a group that does not exist. A
// group's members come with the version they were read at.
func (s *Service) members(ctx context.Context, conv protocol.Conv, user string) (memberList, *protocol.Error) {
	switch conv.Kind {
	case protocol.ConvDirect:
		if !conv.HasMember(user) {
			return memberList{}, notMember(conv)
		}
		return memberList{users: []string{conv.A, conv.B}}, nil
	case protocol.ConvGroup:
		g, err := s.store.Group(ctx, conv.String())
		if errors.Is(err, store.ErrNotFound) {
			return memberList{}, protocol.Errorf(protocol.CodeNotFound, "no group %s", conv)
		}
		if err != nil {
			return memberList{}, s.internal("group lookup", err, "conv", conv.String())
		}
		if !g.HasMember(user) {
			return memberList{}, notMember(conv)
		}
		return memberList{users: g.Members, version: g.Version, title: g.Title}, nil
	}
	return memberList{}, protocol.Errorf(protocol.CodeInvalid, "%s holds no messages", conv)
}

// memberList is a conversation's members as read for one request.
type memberList struct {
	users   []string
	version int64  // a group's membership version
	title   string // a group's title
}

// checkMember checks that user is a member of conv without reading every
// member, and returns the first seq the user may read (1 in a direct chat).
func (s *Service) checkMember(ctx context.Context, conv protocol.Conv, user string) (joinedSeq int64, perr *protocol.Error) {
	switch conv.Kind {
	case protocol.ConvDirect:
		if !conv.HasMember(user) {
			return 0, notMember(conv)
		}
		return 1, nil
	case protocol.ConvGroup:
		m, err := s.store.Membership(ctx, conv.String(), user)
		if err == nil {
			return m.JoinedSeq, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return 0, s.internal("membership lookup", err, "conv", conv.String())
		}
		// Not a member: say not_found when there is no such group at all.
		if _, err := s.store.Group(ctx, conv.String()); errors.Is(err, store.ErrNotFound) {
			return 0, protocol.Errorf(protocol.CodeNotFound, "no group %s", conv)
		}
		return 0, notMember(conv)
	}
	return 0, protocol.Errorf(protocol.CodeInvalid, "%s holds no messages", conv)
}

func notMember(conv protocol.Conv) *protocol.Error {
	return protocol.Errorf(protocol.CodeForbidden, "not a member of %s", conv)
}

// Moved answers an operation whose conversation was handed over to another
// node before it was done: the Router runs it again at the new owner, so
// no client sees it (the error is internal should one ever reach one).
var Moved = protocol.Errorf(protocol.CodeInternal, "the conversation moved to another node; try again")

// internal logs a storage failure and turns it into the error a client gets.
func (s *Service) internal(op string, err error, attrs ...any) *protocol.Error {
	if errors.Is(err, store.ErrMoved) {
		return Moved
	}
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
	if _, perr := s.checkMember(ctx, conv, c.User); perr != nil {
		return nil, perr
	}
	rows, err := s.store.Receipts(ctx, f.Conv)
	if err != nil {
		return nil, s.internal("receipts", err, "conv", f.Conv)
	}
	if conv.Kind == protocol.ConvGroup {
		// A group's boundary rows are its members, ordered by user.
		page, hasMore := receiptsPage(rows, f.After, s.limits.MaxPageBytes)
		return &protocol.ReceiptsReply{Ref: f.Ref, Conv: f.Conv, Members: page, HasMore: hasMore}, nil
	}
	// A direct chat with no message yet has no rows: both members are at 0.
	byUser := make(map[string]protocol.MemberReceipt, len(rows))
	for _, r := range rows {
		byUser[r.User] = r
	}
	out := make([]protocol.MemberReceipt, 0, 2)
	for _, m := range []string{conv.A, conv.B} {
		r, ok := byUser[m]
		if !ok {
			r = protocol.MemberReceipt{User: m}
		}
		out = append(out, r)
	}
	return &protocol.ReceiptsReply{Ref: f.Ref, Conv: f.Conv, Members: out}, nil
}

// Typing forwards a typing indicator to the other members' online devices.
func (s *Service) Typing(ctx context.Context, c Caller, f *protocol.Typing) *protocol.Error {
	conv, perr := protocol.ParseMessageConv(f.Conv)
	if perr != nil {
		return perr
	}
	members, perr := s.members(ctx, conv, c.User)
	if perr != nil {
		return perr
	}
	if perr := s.checkNotBlocked(ctx, conv, c.User); perr != nil {
		return perr
	}
	// At most one indicator per user and conversation per TypingInterval
	// goes out; the others say nothing new to the members.
	if !s.quotas.typing.Allow(c.User + " " + f.Conv) {
		return nil
	}
	frame := protocol.MustEncode(&protocol.Typing{Conv: f.Conv, User: c.User})
	for _, m := range members.users {
		if m != c.User {
			s.push.Push(m, hub.Push{Frame: frame}, nil)
		}
	}
	return nil
}
