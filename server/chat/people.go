package chat

import (
	"context"
	"errors"
	"slices"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/hub"
)

// PeopleLimits bound the people frames (PROTOCOL.md, "People").
type PeopleLimits struct {
	MaxPresenceUsers int // users of one presence request
	MaxBlocked       int // users one user may block
	MaxName          int // characters of a display name
}

// DefaultPeopleLimits are the contract's limits.
var DefaultPeopleLimits = PeopleLimits{
	MaxPresenceUsers: protocol.DefaultMaxPresenceUsers,
	MaxBlocked:       protocol.DefaultMaxBlocked,
	MaxName:          protocol.DefaultMaxName,
}

// SetPeopleLimits sets the limits of the people frames.
func (s *Service) SetPeopleLimits(l PeopleLimits) { s.people = l }

// PeopleLimits returns the limits of the people frames.
func (s *Service) PeopleLimits() PeopleLimits { return s.people }

// limitError carries a refusal out of a settings change.
type limitError struct{ perr *protocol.Error }

func (e limitError) Error() string { return e.perr.Message }

// Settings reads the caller's settings (a frame without settings) or
// changes the keys it carries, answering with the whole set; after a
// change the user's other devices get the set pushed.
func (s *Service) Settings(ctx context.Context, c Caller, f *protocol.SettingsRequest) (*protocol.SettingsReply, *protocol.Error) {
	change, perr := f.Change(s.people.MaxName)
	if perr != nil {
		return nil, perr
	}
	if change.Empty() {
		p, err := s.store.Person(ctx, c.User)
		if err != nil {
			return nil, s.internal("settings", err, "user", c.User)
		}
		return &protocol.SettingsReply{Ref: f.Ref, Settings: p.Settings}, nil
	}
	var changed bool
	next, err := s.store.ChangeSettings(ctx, c.User, func(cur protocol.UserSettings) (protocol.UserSettings, error) {
		next := change.Apply(cur)
		changed = next.LastSeen != cur.LastSeen || next.ReadReceipts != cur.ReadReceipts || next.Name != cur.Name
		return next, nil
	})
	if err != nil {
		return nil, s.internal("settings", err, "user", c.User)
	}
	if changed {
		s.pushSettings(c, next)
	}
	return &protocol.SettingsReply{Ref: f.Ref, Settings: next}, nil
}

// Block blocks a user for the caller.
func (s *Service) Block(ctx context.Context, c Caller, f *protocol.Block) (*protocol.OK, *protocol.Error) {
	if perr := f.Validate(c.User); perr != nil {
		return nil, perr
	}
	return s.setBlocked(ctx, c, f.User, true, f.Ref)
}

// Unblock lifts the caller's block of a user.
func (s *Service) Unblock(ctx context.Context, c Caller, f *protocol.Unblock) (*protocol.OK, *protocol.Error) {
	if perr := f.Validate(c.User); perr != nil {
		return nil, perr
	}
	return s.setBlocked(ctx, c, f.User, false, f.Ref)
}

// setBlocked blocks (block true) or unblocks target for the caller.
// Blocking a blocked user, or unblocking one not blocked, changes nothing.
func (s *Service) setBlocked(ctx context.Context, c Caller, target string, block bool, ref protocol.Ref) (*protocol.OK, *protocol.Error) {
	var changed bool
	next, err := s.store.ChangeSettings(ctx, c.User, func(cur protocol.UserSettings) (protocol.UserSettings, error) {
		i, found := slices.BinarySearch(cur.Blocked, target)
		switch {
		case block && !found:
			if len(cur.Blocked) >= s.people.MaxBlocked {
				return cur, limitError{protocol.Errorf(protocol.CodeTooLarge, "a user may block at most %d users", s.people.MaxBlocked)}
			}
			cur.Blocked = slices.Insert(cur.Blocked, i, target)
			changed = true
		case !block && found:
			cur.Blocked = slices.Delete(cur.Blocked, i, i+1)
			changed = true
		}
		return cur, nil
	})
	var limit limitError
	if errors.As(err, &limit) {
		return nil, limit.perr
	}
	if err != nil {
		return nil, s.internal("block", err, "user", c.User)
	}
	if changed {
		s.pushSettings(c, next)
	}
	return &protocol.OK{Ref: ref}, nil
}

// pushSettings sends user's settings to its devices but the caller's.
func (s *Service) pushSettings(c Caller, set protocol.UserSettings) {
	s.push.Push(c.User, hub.Push{Frame: protocol.MustEncode(&protocol.SettingsReply{Settings: set})}, c.Device)
}

// blocks reports whether user blocked other.
func (s *Service) blocks(ctx context.Context, user, other string) (bool, *protocol.Error) {
	p, err := s.store.Person(ctx, user)
	if err != nil {
		return false, s.internal("settings", err, "user", user)
	}
	_, found := slices.BinarySearch(p.Settings.Blocked, other)
	return found, nil
}

// checkNotBlocked refuses what the caller does in direct chat conv when
// the other member blocked it: a send (relation entries included) or
// typing.
func (s *Service) checkNotBlocked(ctx context.Context, conv protocol.Conv, user string) *protocol.Error {
	if conv.Kind != protocol.ConvDirect || !conv.HasMember(user) {
		return nil
	}
	other := conv.Peer(user)
	blocked, perr := s.blocks(ctx, other, user)
	if perr != nil {
		return perr
	}
	if blocked {
		return protocol.Errorf(protocol.CodeForbidden, "%s does not accept your messages", other)
	}
	return nil
}

// checkMayAdd refuses a group creation or an add by actor naming a user
// who blocked actor.
func (s *Service) checkMayAdd(ctx context.Context, actor string, users []string) *protocol.Error {
	people, err := s.store.People(ctx, users)
	if err != nil {
		return s.internal("settings", err, "user", actor)
	}
	for _, u := range users {
		if u == actor {
			continue
		}
		if _, blocked := slices.BinarySearch(people[u].Settings.Blocked, actor); blocked {
			return protocol.Errorf(protocol.CodeForbidden, "%s cannot be added by you", u)
		}
	}
	return nil
}
