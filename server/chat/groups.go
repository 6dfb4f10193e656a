package chat

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// CreateGroup creates a group with the caller and the listed users as
// members, and the system message that tells of it. A repeat with the same
// key returns the first group and changes nothing.
func (s *Service) CreateGroup(ctx context.Context, c Caller, f *protocol.CreateGroup) (*protocol.Group, *protocol.Error) {
	if perr := f.Validate(c.User, s.limits); perr != nil {
		return nil, perr
	}
	members := protocol.GroupMembers(c.User, f.Members)
	change := store.GroupChange{
		Conv:    protocol.GroupConv(newID()),
		Create:  true,
		Creator: c.User,
		Key:     f.Key,
		Title:   f.Title,
		Add:     members,
		Msg:     s.systemMessage(c.User, fmt.Sprintf("%s created the group %q", c.User, f.Title)),
	}
	res, perr := s.changeGroup(ctx, members, change)
	if perr != nil {
		return nil, perr
	}
	return groupFrame(f.Ref, res.Group), nil
}

// GroupOp adds, removes, lets the caller leave or renames. A change that
// changes nothing (adding a member, removing a non-member, the same title)
// is answered with the group's state and writes nothing.
func (s *Service) GroupOp(ctx context.Context, c Caller, f *protocol.GroupOp) (*protocol.Group, *protocol.Error) {
	if perr := f.Validate(s.limits); perr != nil {
		return nil, perr
	}
	conv, _ := protocol.ParseConv(f.Conv)
	for attempt := 0; ; attempt++ {
		members, perr := s.members(ctx, conv, c.User)
		if perr != nil {
			return nil, perr
		}
		state := store.GroupState{Conv: f.Conv, Title: members.title, Members: members.users, Version: members.version}
		change, perr := s.planGroupOp(c.User, f, state)
		if perr != nil {
			return nil, perr
		}
		if change == nil {
			return groupFrame(f.Ref, state), nil
		}
		res, perr := s.changeGroup(ctx, append(slices.Clone(members.users), change.Add...), *change)
		if perr == errStale && attempt < maxMembershipRetries {
			continue // the members changed meanwhile: plan again
		}
		if perr != nil {
			return nil, perr
		}
		return groupFrame(f.Ref, res.Group), nil
	}
}

// errStale is the changeGroup answer for a membership that moved on.
var errStale = protocol.Errorf(protocol.CodeInternal, "the group kept changing; try again")

// planGroupOp turns an op into the change it makes to state, nil for none.
func (s *Service) planGroupOp(actor string, f *protocol.GroupOp, state store.GroupState) (*store.GroupChange, *protocol.Error) {
	change := &store.GroupChange{Conv: f.Conv, Version: state.Version}
	var words string
	switch f.Op {
	case protocol.GroupAdd:
		for _, u := range protocol.SortedUnique(f.Users) {
			if !state.HasMember(u) {
				change.Add = append(change.Add, u)
			}
		}
		if len(change.Add) == 0 {
			return nil, nil
		}
		if n := len(state.Members) + len(change.Add); n > s.limits.MaxGroupSize {
			return nil, protocol.Errorf(protocol.CodeInvalid, "a group holds at most %d members; this one would have %d", s.limits.MaxGroupSize, n)
		}
		words = actor + " added " + nameList(change.Add)
	case protocol.GroupRemove:
		if slices.Contains(f.Users, actor) {
			return nil, protocol.Errorf(protocol.CodeInvalid, "to leave a group use the op leave")
		}
		for _, u := range protocol.SortedUnique(f.Users) {
			if state.HasMember(u) {
				change.Remove = append(change.Remove, u)
			}
		}
		if len(change.Remove) == 0 {
			return nil, nil
		}
		words = actor + " removed " + nameList(change.Remove)
	case protocol.GroupLeave:
		change.Remove = []string{actor}
		words = actor + " left"
	case protocol.GroupRename:
		if f.Title == state.Title {
			return nil, nil
		}
		change.Title = f.Title
		words = fmt.Sprintf("%s renamed the group to %q", actor, f.Title)
	}
	change.Msg = s.systemMessage(actor, words)
	return change, nil
}

// changeGroup writes a group change holding the locks of everyone whose
// sessions it writes, then pushes the system message to the members'
// devices, the new ticks if they rose, and a session_sync to every user
// whose sessions changed (removed ones included).
func (s *Service) changeGroup(ctx context.Context, lockUsers []string, change store.GroupChange) (store.GroupResult, *protocol.Error) {
	var res store.GroupResult
	err := s.withUserLocks(ctx, lockUsers, func() error {
		var err error
		res, err = s.store.ChangeGroup(ctx, change)
		return err
	})
	switch {
	case errors.Is(err, store.ErrStaleMembers):
		return res, errStale
	case errors.Is(err, store.ErrNotFound):
		return res, protocol.Errorf(protocol.CodeNotFound, "no group %s", change.Conv)
	case err != nil:
		return res, s.internal("group change", err, "conv", change.Conv)
	}
	if res.Existing {
		return res, nil
	}
	// The acting device gets the system message too: the group answer
	// does not carry it.
	s.fanOut(Caller{}, res.Msg, res.Group.Members)
	if res.Ticks != nil {
		s.pushStatus(res.Group.Conv, res.Group.Members, *res.Ticks)
	}
	for user, cursor := range res.Cursors {
		s.nudge(user, cursor)
	}
	return res, nil
}

// systemMessage is a message written by the server about an event, sent in
// the name of the user who caused it.
func (s *Service) systemMessage(actor, words string) protocol.Message {
	return protocol.Message{MsgID: "sys-" + newID(), From: actor, Body: words, Kind: protocol.KindSystem, ClientTS: time.Now().UnixMilli()}
}

// groupFrame is the group frame answering a request.
func groupFrame(ref protocol.Ref, g store.GroupState) *protocol.Group {
	return &protocol.Group{Ref: ref, Conv: g.Conv, Title: g.Title, Members: g.Members}
}

// maxNamesInSystemMessage bounds the names a system message spells out.
const maxNamesInSystemMessage = 10

// nameList joins users in plain words: "bob", "bob and carol", "bob, carol
// and dave", or "bob, carol, … and 40 others" for a long list.
func nameList(users []string) string {
	if len(users) > maxNamesInSystemMessage {
		shown := users[:maxNamesInSystemMessage-1]
		return strings.Join(shown, ", ") + fmt.Sprintf(" and %d others", len(users)-len(shown))
	}
	if len(users) == 1 {
		return users[0]
	}
	return strings.Join(users[:len(users)-1], ", ") + " and " + users[len(users)-1]
}

// idEncoding spells ids in lower-case base32 without padding.
var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// newID returns a random 26-character id: 128 bits, valid in a group id
// and in a msg_id.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return idEncoding.EncodeToString(b[:])
}
