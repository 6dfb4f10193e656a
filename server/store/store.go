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
	"github.com/imcore/im/session"
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

// ErrSeqTaken is returned, changing nothing, by an append at a seq another
// message holds (store.Backend.AppendAt).
var ErrSeqTaken = errors.New("seq taken by another message")

// ErrStaleMembers is returned, changing nothing, by a group write made
// against a membership version that is no longer current: the caller read
// the members, someone changed them, and the caller must read them again.
var ErrStaleMembers = errors.New("group membership changed")

// Store is the durable state of the messaging domain. Every method is safe
// for concurrent use. A method that returns an error changed nothing.
type Store interface {
	// Append stores a message, assigning the next seq of its conversation
	// and the server timestamp, unless (conv, msg_id) is already stored, in
	// which case it returns the stored message with Duplicate set and
	// changes nothing — or ErrMsgIDTaken when that message is another
	// sender's. A direct chat is created on its first message (a group
	// must exist, see GroupChange). What the message implies — the
	// sender's boundaries move up to the new seq (sending implies reading,
	// so the sender's pending row there goes), a pending-delivery row, if
	// absent, for every other member at its first undelivered seq, every
	// member's session — is applied before Append returns and written
	// behind it. It returns once the message is durable.
	Append(ctx context.Context, req AppendRequest) (AppendResult, error)

	// StartAppend is Append in two steps: it queues the append and returns
	// a wait for its result. Appends started one after another take their
	// seqs in that order (per conversation), while their writes overlap.
	// The append happens whether or not wait is called.
	StartAppend(ctx context.Context, req AppendRequest) (wait func() (AppendResult, error))

	// History returns up to q.Limit messages of conv in ascending seq order,
	// and whether more exist further in the direction asked.
	History(ctx context.Context, conv string, q HistoryQuery) (msgs []protocol.Message, hasMore bool, err error)

	// Mark raises user's boundaries of the given kind to each mark: a
	// max-merge, clamped to the conversation's newest seq, read implying
	// delivered. The user's pending-delivery row goes once its delivered
	// boundary reaches the newest seq: a row exists exactly while the user
	// has messages there that no device of it acknowledged. A read is also
	// the session read (session.State.OnRead). A rise of a conversation's
	// tick minimum (over members) reaches every member's session, and moves
	// the sessions of the members whose own messages it covers.
	//
	// Mark returns once the marks are applied, in the order of the calls;
	// they are durable once the result's Written returns nil. A caller
	// that answers a mark waits for it; one connection's marks can so be
	// applied one after another while their writes overlap.
	Mark(ctx context.Context, user string, kind MarkKind, marks []protocol.Mark) (MarkResult, error)

	// SessionOp applies a validated session operation to user's session of
	// conv, creating the session if needed (except a gateway, which exists
	// only once something was filed under it: ErrNotFound).
	SessionOp(ctx context.Context, user, conv string, op session.Op, args session.OpArgs) (SessionResult, error)

	// Sync returns the sessions of one of user's lists changed after a
	// cursor, in ascending active_ts, deleted ones included.
	Sync(ctx context.Context, user string, q SyncQuery) (SyncPage, error)

	// SetAccount files every conversation with user, for the other member,
	// under category and sub-business subBiz ("" for none); it applies to
	// sessions created from then on.
	SetAccount(ctx context.Context, user, category, subBiz string) error

	// Pending returns user's pending-delivery rows with what is needed to
	// replay them.
	Pending(ctx context.Context, user string) ([]PendingDelivery, error)

	// Receipts returns every member's boundaries in conv, ordered by user.
	Receipts(ctx context.Context, conv string) ([]protocol.MemberReceipt, error)

	// Group returns a group's current state; ErrNotFound when it does not
	// exist.
	Group(ctx context.Context, conv string) (GroupState, error)

	// Membership returns user's membership of group conv; ErrNotFound when
	// user is not a member (never was, was removed or left).
	Membership(ctx context.Context, conv, user string) (Membership, error)

	// ChangeGroup creates or changes a group and appends the system message
	// that tells of it, in one atomic step (see GroupChange).
	ChangeGroup(ctx context.Context, req GroupChange) (GroupResult, error)

	// Close finishes the writes in flight and releases the store.
	Close() error
}

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
	Msg     protocol.Message
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
