package chat

import (
	"context"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/session"
)

// Engine is the messaging state the service reads and changes: the
// conversations and users of the shards this node owns, held by the
// engine (package engine) over the storage backend. The Router runs each
// of a client's frames on the node that owns what it touches, so the
// service asks the engine about those; what it asks of a conversation or
// user owned elsewhere (a group's membership for a session operation) the
// engine reads from the backend as it stands. Every method is safe for
// concurrent use. A method that returns an error changed nothing.
type Engine interface {
	// Append stores a message, assigning the next seq of its conversation
	// and the server timestamp, unless (conv, msg_id) is already stored, in
	// which case it returns the stored message with Duplicate set and
	// changes nothing — or store.ErrMsgIDTaken when that message is another
	// sender's. A direct chat is created on its first message (a group
	// must exist, see GroupChange). What the message implies — the
	// sender's boundaries move up to the new seq (sending implies reading,
	// so the sender's pending row there goes), a pending-delivery row, if
	// absent, for every other member at its first undelivered seq, every
	// member's session — is applied before Append returns and written
	// behind it. It returns once the message is durable.
	Append(ctx context.Context, req store.AppendRequest) (store.AppendResult, error)

	// StartAppend is Append in two steps: it queues the append and returns
	// a wait for its result. Appends started one after another take their
	// seqs in that order (per conversation), while their writes overlap.
	// The append happens whether or not wait is called.
	StartAppend(ctx context.Context, req store.AppendRequest) (wait func() (store.AppendResult, error))

	// History returns up to q.Limit messages of conv in ascending seq order,
	// and whether more exist further in the direction asked.
	History(ctx context.Context, conv string, q store.HistoryQuery) (msgs []protocol.Message, hasMore bool, err error)

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
	Mark(ctx context.Context, user string, kind store.MarkKind, marks []protocol.Mark) (store.MarkResult, error)

	// SessionOp applies a validated session operation to user's session of
	// conv, creating the session if needed (except a gateway, which exists
	// only once something was filed under it: store.ErrNotFound).
	SessionOp(ctx context.Context, user, conv string, op session.Op, args session.OpArgs) (store.SessionResult, error)

	// Sync returns the sessions of one of user's lists changed after a
	// cursor, in ascending active_ts, deleted ones included.
	Sync(ctx context.Context, user string, q store.SyncQuery) (store.SyncPage, error)

	// SetAccount files every conversation with user, for the other member,
	// under category and sub-business subBiz ("" for none); it applies to
	// sessions created from then on.
	SetAccount(ctx context.Context, user, category, subBiz string) error

	// Pending returns user's pending-delivery rows with what is needed to
	// replay them.
	Pending(ctx context.Context, user string) ([]store.PendingDelivery, error)

	// Receipts returns every member's boundaries in conv, ordered by user.
	Receipts(ctx context.Context, conv string) ([]protocol.MemberReceipt, error)

	// Group returns a group's current state; store.ErrNotFound when it does not
	// exist.
	Group(ctx context.Context, conv string) (store.GroupState, error)

	// Membership returns user's membership of group conv; store.ErrNotFound when
	// user is not a member (never was, was removed or left).
	Membership(ctx context.Context, conv, user string) (store.Membership, error)

	// ChangeGroup creates or changes a group and appends the system message
	// that tells of it, in one atomic step (see store.GroupChange).
	ChangeGroup(ctx context.Context, req store.GroupChange) (store.GroupResult, error)

	// SessionClock returns user's newest session timestamp.
	SessionClock(ctx context.Context, user string) (int64, error)

	// Person returns user's settings and last seen, as they stand on
	// every node once a change of them was answered.
	Person(ctx context.Context, user string) (store.Person, error)

	// People is Person for several users at once.
	People(ctx context.Context, users []string) (map[string]store.Person, error)

	// ChangeSettings applies change to user's settings (the node that
	// owns the user runs it) and returns them as written; an error of
	// change is returned as it is and changes nothing.
	ChangeSettings(ctx context.Context, user string, change func(protocol.UserSettings) (protocol.UserSettings, error)) (protocol.UserSettings, error)

	// SetLastSeen records when user's last device went away.
	SetLastSeen(ctx context.Context, user string, at int64) error

	// HasMessages reports whether conv holds a message.
	HasMessages(ctx context.Context, conv string) (bool, error)

	// CoMembers returns the members of every group user is a member of,
	// as stored; any node may ask it of any user.
	CoMembers(ctx context.Context, user string) (map[string]bool, error)
}
