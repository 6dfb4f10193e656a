// Package store says what the messaging domain needs from durable storage:
// appends with per-conversation sequencing and idempotency, ordered history
// reads, monotonic tick boundaries and pending deliveries. Backends live in
// sub-packages; storetest holds the conformance suite every backend passes.
package store

import (
	"context"
	"errors"
	"slices"

	"github.com/imcore/im/protocol"
)

// ErrClosed is returned by every method of a store that has been closed.
var ErrClosed = errors.New("store closed")

// ErrNotFound is returned for a session that does not exist and cannot be
// created (a sub-business gateway nobody filed a conversation under), for a
// group that does not exist, and for a user who is not a group's member.
var ErrNotFound = errors.New("not found")

// ErrMsgIDTaken is returned, changing nothing, by an Append whose
// (conv, msg_id) is already stored from another sender: the key belongs to
// the user who used it first.
var ErrMsgIDTaken = errors.New("msg_id already used by another sender")

// ErrMoved refuses an operation whose conversation this node stopped
// serving before the operation was written (it was handed over to another
// node meanwhile): the caller runs it again at the new owner.
var ErrMoved = errors.New("the conversation moved to another owner before the operation was written")

// ErrSeqTaken is returned, changing nothing, by an append at a seq another
// message holds (store.Backend.AppendAt).
var ErrSeqTaken = errors.New("seq taken by another message")

// ErrStaleMembers is returned, changing nothing, by a group write made
// against a membership version that is no longer current: the caller read
// the members, someone changed them, and the caller must read them again.
var ErrStaleMembers = errors.New("group membership changed")

// AppendRequest is one message to store.
type AppendRequest struct {
	// Msg holds conv, msg_id, from, body, client_ts and kind; seq and
	// server_ts are assigned by the store.
	Msg protocol.Message
	// Members are the conversation's members: a direct chat is created
	// with them on its first message; a group's must be the members of
	// MembersVersion.
	Members []string
	// MembersVersion is, for a group, the version of the membership that
	// Members were read at: ErrStaleMembers when it is no longer current,
	// ErrNotFound when the group does not exist.
	MembersVersion int64
}

// GroupState is a group's title and members.
type GroupState struct {
	Conv    string
	Title   string
	Members []string // sorted
	// Version counts membership changes: a write computed from this state
	// passes it back to detect a change in between.
	Version int64
}

// HasMember reports whether user is a member.
func (g GroupState) HasMember(user string) bool {
	_, found := slices.BinarySearch(g.Members, user)
	return found
}

// Membership is one member's place in a group.
type Membership struct {
	// JoinedSeq is the seq of the system message that announced the
	// member's (latest) joining: the first message it may read.
	JoinedSeq int64
}

// GroupChange creates a group or changes one, with the system message that
// tells of it. The message's sender is the acting user; it is appended like
// any message, to the members after the change. Added members start with
// both boundaries at the seq before the message, and their sessions with
// nothing unread before it. Removed members lose their boundary and pending
// rows; their sessions stay as they were (only active_ts moves, so their
// devices learn of the change on sync).
type GroupChange struct {
	Conv string
	// Create makes a new group; Creator and Key (optional) make a retried
	// create return the first one's group (GroupResult.Existing).
	Create       bool
	Creator, Key string
	// Version is, without Create, the membership version the change was
	// computed from (ErrStaleMembers when it moved on).
	Version int64
	Title   string   // with Create the title; otherwise "" keeps it
	Add     []string // users who are not members
	Remove  []string // users who are members
	// Msg is the system message (msg_id, from, body, client_ts set by the
	// chat service; conv, server_ts and kind by the engine). Its Seq is
	// the one the conversation's owner gave it when the backend records
	// it (ErrSeqTaken, changing nothing, when another message holds it),
	// or 0 for the backend's next.
	Msg protocol.Message
}

// GroupResult is a group after a change.
type GroupResult struct {
	Group GroupState
	// Existing is true when a create's key named a group created before:
	// nothing changed and Msg is empty.
	Existing bool
	Msg      protocol.Message
	// Ticks is set when the change raised the tick minimum (a removed
	// member was holding it back, or the actor's implicit read).
	Ticks *protocol.Ticks
	// Cursors holds, for every user whose sessions changed (members and
	// removed users), its newest session timestamp.
	Cursors map[string]int64
}

// AppendResult is the stored message.
type AppendResult struct {
	Msg protocol.Message
	// Duplicate is true when (conv, msg_id) was already stored; Msg is then
	// the original.
	Duplicate bool
	// Members are the members the message was stored for (Store.Append
	// only): whom it is pushed to.
	Members []string
	// Ticks is set when the implicit read of the sender raised the
	// conversation's tick minimum.
	Ticks *protocol.Ticks
}

// MarkResult is what a Mark changed.
type MarkResult struct {
	// Ticks lists the conversations whose tick minimum rose.
	Ticks []TickChange
	// SessionsChanged is true when a read changed the user's sessions;
	// Cursor is then the user's newest session timestamp.
	SessionsChanged bool
	Cursor          int64
	// Written returns once the marks' rows are written (or their write
	// failed, or ctx ended). It is never nil.
	Written func(ctx context.Context) error
}

// SessionResult is a session after an operation.
type SessionResult struct {
	Session protocol.Session
	// Changed is false for an operation that changed nothing (pinning a
	// pinned session); Cursor is the user's newest session timestamp.
	Changed bool
	Cursor  int64
}

// SyncQuery selects the sessions of one list changed after Since.
type SyncQuery struct {
	Since  int64
	Limit  int    // at least 1
	SubBiz string // "" for the main list
	// Conv, for Backend.SessionPage only, selects that one session,
	// whatever its list and active_ts.
	Conv string
	// SkipTotal, for Backend.SessionPage only, says the caller knows the
	// list's unread total (an owner holds it in memory): a backend that
	// would read it apart (DynamoDB sums the list's sessions) may answer 0.
	SkipTotal bool
}

// SyncPage is one page of a sync.
type SyncPage struct {
	Sessions    []protocol.Session
	Cursor      int64 // the highest active_ts returned, or Since
	HasMore     bool
	TotalUnread int64 // of the whole list, muted and deleted sessions excluded
}

// HistoryQuery selects a page of history: the Limit messages below
// BeforeSeq (0 = the newest), or, when After is true, the Limit messages
// above AfterSeq, never one below MinSeq. Limit must be positive. With
// MaxBytes set, the page also stops before the messages' encoded size
// (protocol.Message.EncodedLen, plus one for each comma) would pass it,
// keeping at least one message and those nearest the bound asked from,
// and hasMore is then true.
type HistoryQuery struct {
	BeforeSeq int64
	After     bool
	AfterSeq  int64
	MinSeq    int64
	Limit     int
	MaxBytes  int
}

// MarkKind says which boundary a mark raises.
type MarkKind int

// The two boundaries.
const (
	MarkDelivered MarkKind = iota + 1
	MarkRead
)

// TickChange reports a conversation whose tick minimum rose.
type TickChange struct {
	Conv  string
	Ticks protocol.Ticks
	// Members are the conversation's members when it rose: whom its
	// status is pushed to.
	Members []string
}

// PendingDelivery is one pending row with the state needed to replay it.
type PendingDelivery struct {
	Conv             string
	FirstUndelivered int64
	LastDeliveredSeq int64 // the user's delivered boundary in Conv
	NewestSeq        int64 // the conversation's newest seq
}

// ReplayFrom returns the first seq to push for this row: the later of the
// row's first undelivered seq and the seq after the delivered boundary.
func (p PendingDelivery) ReplayFrom() int64 {
	return max(p.FirstUndelivered, p.LastDeliveredSeq+1)
}

// WithinBytes returns the first messages of msgs whose encoded sizes (one
// byte more each, for the list's commas) fit in maxBytes — at least one —
// and whether any were cut. maxBytes 0 means no budget. Every backend
// pages history with it.
func WithinBytes(msgs []protocol.Message, maxBytes int) ([]protocol.Message, bool) {
	if maxBytes == 0 {
		return msgs, false
	}
	// A page that fits at its largest is not measured.
	bound := 0
	for i := range msgs {
		bound += msgs[i].MaxEncodedLen() + 1
	}
	if bound <= maxBytes {
		return msgs, false
	}
	bytes := 0
	for i, m := range msgs {
		if bytes += m.EncodedLen() + 1; maxBytes > 0 && bytes > maxBytes && i > 0 {
			return msgs[:i], true
		}
	}
	return msgs, false
}
