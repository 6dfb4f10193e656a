package chat

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
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
	return s.CreateGroupIn(ctx, c, GroupConvOf(c.User, f.Key), f)
}

// GroupConvOf is the conversation a create_group of creator makes: derived
// from the creator and the key, so that every attempt of one create names
// the same one; a new one for a create without a key.
func GroupConvOf(creator, key string) string {
	return protocol.GroupConv(groupID(creator, key))
}

// CreateGroupIn is CreateGroup in conv, which GroupConvOf chose (the node
// that owns conv runs it).
func (s *Service) CreateGroupIn(ctx context.Context, c Caller, conv string, f *protocol.CreateGroup) (*protocol.Group, *protocol.Error) {
	if perr := f.Validate(c.User, s.limits); perr != nil {
		return nil, perr
	}
	members := protocol.GroupMembers(c.User, f.Members)
	if perr := s.checkMayAdd(ctx, c.User, members); perr != nil {
		return nil, perr
	}
	change := store.GroupChange{
		Conv:    conv,
		Create:  true,
		Creator: c.User,
		Key:     f.Key,
		Title:   f.Title,
		Add:     members,
		Msg:     s.systemMessage(c.User, c.User+` created the group "`+f.Title+`"`),
	}
	undo, perr := s.takeGroupQuota(c.User, 1, len(members)-1)
	if perr != nil {
		return nil, perr
	}
	res, err := s.store.ChangeGroup(ctx, change)
	if err != nil {
		undo()
		return nil, s.groupChangeError(change.Conv, err)
	}
	if res.Existing {
		undo() // a retried create makes nothing new
		// A retried create: the first one's group, if the caller is still
		// in it (a user who left learns nothing of it any more).
		if !res.Group.HasMember(c.User) {
			return nil, protocol.Errorf(protocol.CodeForbidden, "key %q created %s, which you are no longer a member of", f.Key, res.Group.Conv)
		}
		return groupFrame(f.Ref, res.Group), nil
	}
	s.announce(res, nil)
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
	if f.Op == protocol.GroupAdd {
		if perr := s.checkMayAdd(ctx, c.User, f.Users); perr != nil {
			return nil, perr
		}
	}
	var (
		state  store.GroupState
		change *store.GroupChange
		res    store.GroupResult
		refuse *protocol.Error // the plan's own refusal
	)
	// The change is planned from the members as read; should they change
	// before it is written, it is planned again (withMembers).
	written, perr := s.withMembers(ctx, conv, c.User, func(m memberList) error {
		state = store.GroupState{Conv: f.Conv, Title: m.title, Members: m.users, Version: m.version}
		change, refuse = s.planGroupOp(c.User, f, state)
		if refuse != nil || change == nil {
			return nil
		}
		undoQuota, perr := s.takeGroupQuota(c.User, 0, groupChangeCost(f.Op, change))
		if perr != nil {
			refuse, change = perr, nil
			return nil
		}
		var err error
		if res, err = s.store.ChangeGroup(ctx, *change); err != nil {
			undoQuota()
		}
		return err
	})
	switch {
	case perr != nil:
		return nil, perr
	case refuse != nil:
		return nil, refuse
	case written.err != nil:
		return nil, s.groupChangeError(f.Conv, written.err)
	case change == nil:
		return groupFrame(f.Ref, state), nil
	}
	s.announce(res, change.Remove)
	return groupFrame(f.Ref, res.Group), nil
}

// groupChangeCost is what an op's change costs of its actor's quota of
// member changes: one per member added or removed, one for a rename,
// nothing for leaving (one may always leave).
func groupChangeCost(op string, change *store.GroupChange) int {
	switch op {
	case protocol.GroupLeave:
		return 0
	case protocol.GroupRename:
		return 1
	}
	return len(change.Add) + len(change.Remove)
}

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
		words = actor + ` renamed the group to "` + f.Title + `"`
	}
	change.Msg = s.systemMessage(actor, words)
	return change, nil
}

// groupChangeError is the answer to a group change the store refused.
func (s *Service) groupChangeError(conv string, err error) *protocol.Error {
	if errors.Is(err, store.ErrNotFound) {
		return protocol.Errorf(protocol.CodeNotFound, "no group %s", conv)
	}
	return s.internal("group change", err, "conv", conv)
}

// announce pushes a stored group change: the system message to the
// members' devices (the acting device too: the group answer does not carry
// it) and, once, to the online devices of the users it removed (removed
// ones and one who left), so that they can show who removed them; the new
// ticks if they rose, to the members only; and session_sync to every user
// whose sessions changed, removed ones included. The removed get nothing
// more of the group: the message is not pending for them (their pending
// row went with the change), so a device that was offline learns of it by
// its session only.
func (s *Service) announce(res store.GroupResult, removed []string) {
	s.fanOut(Caller{}, res.Msg, res.Group.Members)
	s.fanOut(Caller{}, res.Msg, removed)
	if res.Ticks != nil {
		s.pushStatus(res.Group.Conv, res.Group.Members, *res.Ticks)
	}
	for user, cursor := range res.Cursors {
		s.nudge(user, cursor)
	}
}

// systemMessage is a message written by the server about an event, sent in
// the name of the user who caused it.
func (s *Service) systemMessage(actor, words string) protocol.Message {
	return protocol.Message{MsgID: "sys-" + newID(), From: actor, Body: words, Kind: protocol.KindSystem, ClientTS: time.Now().UnixMilli()}
}

// groupFrame is the group frame answering a request: members is a list,
// empty once the last member left, never null.
func groupFrame(ref protocol.Ref, g store.GroupState) *protocol.Group {
	members := g.Members
	if members == nil {
		members = []string{}
	}
	return &protocol.Group{Ref: ref, Conv: g.Conv, Title: g.Title, Members: members}
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
// groupID is the id of a new group: random, or, for a create with a key,
// derived from its creator and key, so that every attempt of one create
// names the same conversation and is ordered by its one owner (a
// scaled-out deployment serves each conversation on one node).
func groupID(creator, key string) string {
	if key == "" {
		return newID()
	}
	sum := sha256.Sum256([]byte("group-key\x00" + creator + "\x00" + key))
	return idEncoding.EncodeToString(sum[:16])
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return idEncoding.EncodeToString(b[:])
}
