package chat

import (
	"context"
	"slices"

	"github.com/imcore/im/protocol"
)

// PresenceState is what a node knows of a user's devices: whether one is
// connected, and when the last went away (0: never seen, or online).
type PresenceState func(user string) (online bool, lastSeen int64)

// Contacts are the users a watcher may see the presence of, as read when
// it asked: those it shares a conversation with (a direct chat that holds
// a message, or a group both are members of). Blocks and settings are
// applied at each view (View), so that a change of them shows at once.
type Contacts map[string]bool

// Contacts returns which of users watcher shares a conversation with.
func (s *Service) Contacts(ctx context.Context, watcher string, users []string) (Contacts, *protocol.Error) {
	out := Contacts{}
	var missing []string
	for _, u := range users {
		if u == watcher {
			out[u] = true
			continue
		}
		conv, ok := protocol.DirectConv(watcher, u)
		if !ok {
			continue
		}
		has, err := s.store.HasMessages(ctx, conv)
		if err != nil {
			return nil, s.internal("presence", err, "conv", conv)
		}
		if has {
			out[u] = true
		} else {
			missing = append(missing, u)
		}
	}
	// The settings the views will read, read together now.
	if _, err := s.store.People(ctx, append(slices.Clone(users), watcher)); err != nil {
		return nil, s.internal("presence", err, "user", watcher)
	}
	if len(missing) == 0 {
		return out, nil
	}
	// The groups the watcher is in, from its session list.
	comembers, perr := s.groupMembersOf(ctx, watcher)
	if perr != nil {
		return nil, perr
	}
	for _, u := range missing {
		if comembers[u] {
			out[u] = true
		}
	}
	return out, nil
}

// groupMembersOf returns the members of every group user is in.
func (s *Service) groupMembersOf(ctx context.Context, user string) (map[string]bool, *protocol.Error) {
	out, err := s.store.CoMembers(ctx, user)
	if err != nil {
		return nil, s.internal("presence", err, "user", user)
	}
	return out, nil
}

// View is user's presence as watcher may see it (PROTOCOL.md, "Presence"):
// the stranger's answer unless they share a conversation (contacts) and
// neither blocked the other — a watcher that blocked user still gets its
// name; a user that hides its last seen shows offline and never seen, and
// a watcher that hides its own sees every last seen as 0.
func (s *Service) View(ctx context.Context, watcher, user string, contacts Contacts, state PresenceState) (protocol.Presence, *protocol.Error) {
	if !contacts[user] {
		return protocol.Stranger(user), nil
	}
	pu, err := s.store.Person(ctx, user)
	if err != nil {
		return protocol.Presence{}, s.internal("presence", err, "user", user)
	}
	if user == watcher {
		online, lastSeen := state(user)
		return protocol.Presence{User: user, Online: online, LastSeen: lastSeen, Name: pu.Settings.Name}, nil
	}
	pw, err := s.store.Person(ctx, watcher)
	if err != nil {
		return protocol.Presence{}, s.internal("presence", err, "user", watcher)
	}
	if _, blocked := slices.BinarySearch(pu.Settings.Blocked, watcher); blocked {
		return protocol.Stranger(user), nil
	}
	if _, blocked := slices.BinarySearch(pw.Settings.Blocked, user); blocked {
		p := protocol.Stranger(user)
		p.Name = pu.Settings.Name
		return p, nil
	}
	p := protocol.Presence{User: user, Name: pu.Settings.Name}
	if pu.Settings.HidesLastSeen() {
		return p, nil
	}
	online, lastSeen := state(user)
	if lastSeen == 0 && !online {
		lastSeen = pu.LastSeen
	}
	p.Online = online
	if !online && !pw.Settings.HidesLastSeen() {
		p.LastSeen = lastSeen
	}
	return p, nil
}
