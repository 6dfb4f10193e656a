package store

import (
	"context"
	"time"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/session"
)

// Backend is what a storage backend provides to the domain engine (package
// engine), which implements chat.Engine on top of it. It holds two kinds of
// state, and promises what every backend can: SQLite in one process, and
// DynamoDB with no transaction spanning two items.
//
//   - The log: messages, sequenced per conversation. Append is the one
//     atomic write of a message — the durable fact the rest derives from —
//     and ChangeGroup the one atomic write of a group's membership with the
//     system message that tells of it. Both touch a single conversation.
//   - Derived per-member state: boundaries, pending rows, sessions, unread
//     totals, former-member views and each conversation's tick minimum and
//     derived watermark. Apply writes them as idempotent updates keyed by
//     (user, conversation): each row on its own, in any number of steps,
//     safe to retry and safe to apply late or twice (see Derived). A crash
//     between an Append and the Apply that follows it loses nothing: the
//     conversation's derived watermark is behind its newest seq, and the
//     engine derives the missing part again from the log (Unrepaired).
//
// Reads serve the engine's cache misses and the requests it does not
// answer from memory (history, sync pages, pending rows). Every method is
// safe for concurrent use; one that returns an error changed nothing —
// except Apply, whose rows may be partly written, which is why they are
// idempotent.
type Backend interface {
	// Append stores msg (conv, msg_id, from, body, client_ts, server_ts and
	// kind set) at its conversation's next seq, creating a direct chat's
	// conversation on its first message (a group must exist: ErrNotFound).
	// When (conv, msg_id) is already stored it returns the stored message
	// with Duplicate set and changes nothing — or ErrMsgIDTaken when that
	// message is another sender's. Durable when it returns. A relation
	// entry (msg.RefSeq set) is applied to its target as ApplyRelation
	// applies it: in the same atomic step where the engine allows (a
	// crash can leave it unapplied only on a backend that says so, and
	// the engine's repair applies it again from the log).
	Append(ctx context.Context, msg protocol.Message) (AppendResult, error)

	// AppendAt stores msg (Append's fields, and Seq) at msg.Seq, which
	// the conversation's owner gave it: the owner gives its
	// conversations' seqs in memory, in the order its sends arrive, and
	// their writes overlap. ErrSeqTaken, changing nothing, when another
	// message holds that seq (the owner gives the message another); a
	// (conv, msg_id) already stored is returned as Append returns it
	// (Duplicate, or ErrMsgIDTaken). The owner checked that a group
	// exists before it gave the seq: AppendAt need not read it again. A
	// seq stays unused only while its append fails, and the owner gives
	// it to the next message. given is the highest seq the owner has
	// given in the conversation so far (msg.Seq or above): a backend that
	// lists the conversation's seqs before their messages are written may
	// list them up to there at once, for the appends in flight behind this
	// one.
	AppendAt(ctx context.Context, msg protocol.Message, given int64) (AppendResult, error)

	// NewestSeq returns the newest seq conv's log holds or has promised
	// (a backend may promise a seq before the message is written there).
	NewestSeq(ctx context.Context, conv string) (int64, error)

	// ApplyRelation applies relation entry rel, stored, to its target
	// (TargetState.Apply), storing the target's new state with it and
	// erasing the bodies the change erases — in the rows, and in cold
	// storage for archived ones. It is idempotent: repair calls it again
	// for relation entries a crash may have left unapplied. A target
	// that does not exist is ErrNotFound.
	ApplyRelation(ctx context.Context, rel protocol.Message) error

	// History reads a page of conv's messages (see HistoryQuery), each
	// as it stands (TargetState.Show), with its kind, reply_to and ref.
	History(ctx context.Context, conv string, q HistoryQuery) (msgs []protocol.Message, hasMore bool, err error)

	// Message returns the message at seq of conv as it stands;
	// ErrNotFound if none.
	Message(ctx context.Context, conv string, seq int64) (protocol.Message, error)

	// MessageSeq returns the seq of the message stored under (conv,
	// msgID); ErrNotFound if none.
	MessageSeq(ctx context.Context, conv, msgID string) (int64, error)

	// Senders returns the distinct senders of conv's messages with a seq in
	// (after, upTo].
	Senders(ctx context.Context, conv string, after, upTo int64) ([]string, error)

	// Conversation returns what the engine keeps of a conversation;
	// ErrNotFound when it does not exist (a direct chat before its first
	// message, a group never created).
	Conversation(ctx context.Context, conv string) (ConvRecord, error)

	// ChangeGroup creates a group or changes its members or title and
	// appends the system message that tells of it, in one atomic step of
	// that one conversation (see GroupChange): it stores the group
	// ApplyGroupChange makes of the one stored, or changes nothing when
	// that refuses the change. Durable when it returns.
	ChangeGroup(ctx context.Context, change GroupChange) (GroupRecordResult, error)

	// GroupChangeAt returns the change a group's system message at seq
	// recorded (for repair); ErrNotFound when seq recorded none.
	GroupChangeAt(ctx context.Context, conv string, seq int64) (GroupChange, error)

	// Apply writes derived state (see Derived).
	Apply(ctx context.Context, d Derived) error

	// Unrepaired returns the conversations whose derived watermark is
	// behind their newest seq: those whose derived state a crash may have
	// cut short.
	Unrepaired(ctx context.Context) ([]string, error)

	// User returns a user's session clock (the last session timestamp
	// given) and unread totals per list ("" for the main list): the sums
	// of its sessions' contributions, stored or summed.
	User(ctx context.Context, user string) (UserRecord, error)

	// Sessions returns the sessions of users in conv that exist (by user).
	Sessions(ctx context.Context, conv string, users []string) (map[string]session.State, error)

	// TimedMutes returns user's conversations muted until a time at or
	// before now.
	TimedMutes(ctx context.Context, user string, now int64) ([]string, error)

	// SessionPage reads user's sessions of one list with active_ts above
	// q.Since, ascending, at most q.Limit+1 of them, each with what it
	// shows of its conversation, and the list's unread total, from one
	// snapshot.
	SessionPage(ctx context.Context, user string, q SyncQuery) ([]SessionRow, int64, error)

	// Pending returns user's pending-delivery rows with the boundary and
	// newest seq needed to replay them.
	Pending(ctx context.Context, user string) ([]PendingDelivery, error)

	// Account returns how user's conversations are filed for the other
	// member ("" and "" when not filed).
	Account(ctx context.Context, user string) (category, subBiz string, err error)

	// SetAccount files user's conversations (see Store.SetAccount).
	SetAccount(ctx context.Context, user, category, subBiz string) error

	// Person returns user's settings (protocol.DefaultSettings when it
	// never changed them) and when its last device went away.
	Person(ctx context.Context, user string) (Person, error)

	// PutSettings replaces user's settings, its blocked users included;
	// it leaves its last seen as it was.
	PutSettings(ctx context.Context, user string, s protocol.UserSettings) error

	// PutLastSeen records when user's last device went away (server time,
	// ms); it leaves its settings as they were.
	PutLastSeen(ctx context.Context, user string, at int64) error

	// Close releases the backend after the writes in flight.
	Close() error
}

// ConvRecord is what the engine keeps of a conversation.
type ConvRecord struct {
	Conv  string
	Kind  protocol.ConvKind
	Title string // a group's
	// Version counts a group's membership changes.
	Version int64
	// MaxSeq is the newest seq; DerivedSeq the derived watermark: every
	// message up to it has its derived state applied.
	MaxSeq, DerivedSeq int64
	// Ticks is the tick minimum as last derived.
	Ticks protocol.Ticks
	// Members are the current members (a direct chat's two users), sorted
	// by user, each with its boundaries (zero when none are stored yet).
	Members []MemberRecord
}

// MemberRecord is one member of a conversation.
type MemberRecord struct {
	User string
	// JoinedSeq is the seq of the system message that announced its
	// (latest) joining of a group: the first message it may read. 1 in a
	// direct chat.
	JoinedSeq                int64
	DeliveredSeq, ReadSeq    int64
	HasBoundaries, IsPending bool // a boundary row is stored; a pending row is stored
	FirstUndelivered         int64
}

// UserRecord is what the engine keeps of a user across its sessions.
type UserRecord struct {
	Clock  int64
	Totals map[string]int64 // by list: "" the main list, else a sub-business
}

// SessionRow is one session of a sync page with what it shows of its
// conversation.
type SessionRow struct {
	State   session.State
	LastMsg *protocol.Message // nil before any message
	Title   string            // a group's, or as the user left it
	Members []string          // a group's current members, sorted; nil for a user who left
	Left    bool              // the user left (or was removed from) the group
}

// GroupRecordResult is a group after a recorded change.
type GroupRecordResult struct {
	Group    GroupState
	Existing bool             // a create's key named a group made before
	Msg      protocol.Message // the stored system message
}

// AppendWriters is a Backend that says how many appends its owner should
// write at once: a backend that commits many writes together (SQLite's
// group commit) wants all it can get, one whose derived rows queue behind
// appends on the same service (DynamoDB) few.
type AppendWriters interface {
	AppendWriters() int
}

// Derived is a set of derived rows to write. Each row is an idempotent
// update keyed by (user, conversation) or by conversation, valid whatever
// order and however often rows are applied:
//
//   - Boundaries: each boundary max-merged into the stored one (read
//     implying delivered); Join (re)sets a joining member's row.
//   - Gone: a boundary row deleted when its member left (a row of a
//     later joining stays).
//   - Pending: a put-if-absent at FirstUndelivered, or, with Clear, a
//     delete of a row whose first undelivered seq is at most Clear (a row
//     put for a later message stays).
//   - Sessions: each written when its active_ts is newer than the stored
//     one's; at the same active_ts (a tick rise written in place) only
//     its ticks are max-merged.
//   - Totals: each written when its At is newer than the stored one's.
//     A total is always the sum of its list's sessions' contributions
//     (session.State.UnreadContribution) as of At: a backend that cannot
//     write a user's sessions and totals in one step may ignore Totals
//     and sum the stored sessions where it reads a total (User,
//     SessionPage), so that a crash between two rows never leaves a total
//     its sessions do not explain.
//   - Convs: the tick minimum max-merged, the derived watermark raised.
//   - Former: a former member's view put (or, with Delete, dropped).
//
// Fences, on a node of a scaled-out deployment, holds for each user of
// Sessions and Totals the epoch of the lease under which its owner wrote
// them: a backend shared by several nodes orders a user's rows by (epoch,
// then active_ts or At), so that a node that lost the user's shard — paused
// past its lease, its write in flight — never overwrites what the
// successor wrote. A user without a fence writes at epoch 0; a backend of
// one process ignores Fences.
type Derived struct {
	Boundaries []BoundaryRow
	Gone       []MemberGone
	Pending    []PendingRow
	Sessions   []session.State
	Totals     []TotalRow
	Convs      []ConvDerived
	Former     []FormerRow
	Fences     map[string]int64
	// Hold, when set (a node of a scaled-out deployment), is asked right
	// before a user's sessions and totals are written: false means they
	// are no longer the writer's to write (the user's shard was handed
	// over since the batch was cut) and the backend skips them, without
	// error; else the backend calls release once they are written. A
	// handover waits for the rows held, not for the whole batch. Each
	// write held is bounded by until, asked right before it (nil, or the
	// zero time: no bound): the moment the writer stops trusting its
	// lease of the user's shard, which moves on as the lease is renewed
	// during a long write of many rows.
	Hold func(user string) (release func(), until func() time.Time, ok bool)
}

// Empty reports whether d holds no row.
func (d *Derived) Empty() bool {
	return len(d.Boundaries)+len(d.Gone)+len(d.Pending)+len(d.Sessions)+len(d.Totals)+len(d.Convs)+len(d.Former) == 0
}

// MemberKey names a user in a conversation.
type MemberKey struct{ User, Conv string }

// MemberGone deletes a member's boundary row if it joined before Before
// (the seq of the message that tells of its leaving).
type MemberGone struct {
	User, Conv string
	Before     int64
}

// BoundaryRow is a member's boundaries in a conversation.
type BoundaryRow struct {
	User, Conv            string
	DeliveredSeq, ReadSeq int64
	// Join makes the row the member's new one (a member added, or added
	// back), with JoinedSeq: its boundaries are set, not merged.
	Join      bool
	JoinedSeq int64
}

// PendingRow puts or clears a pending-delivery row.
type PendingRow struct {
	User, Conv       string
	FirstUndelivered int64 // put: the first undelivered seq
	Clear            int64 // clear: delete the row if its first undelivered seq is at most Clear
}

// TotalRow is a user's unread total of one list as of a session timestamp.
type TotalRow struct {
	User, List string
	Total, At  int64
}

// ConvDerived is a conversation's derived head.
type ConvDerived struct {
	Conv       string
	Ticks      protocol.Ticks
	DerivedSeq int64
}

// FormerRow is what a user who left a group sees of it.
type FormerRow struct {
	User, Conv string
	Title      string
	Delete     bool // the user is a member again
}

// Archiver is a Backend that moves old message bodies to cold storage (a
// blob.Store it was opened with), keeping each message's seq, sender and
// timestamps in its log and recording where the body went (s3_ref). Every
// read of the Backend (History, Message, Pending's replay, a session's
// last message) returns archived bodies as if they had never moved.
type Archiver interface {
	// Archive moves the bodies of the messages whose server timestamp is
	// before cutoff (Unix milliseconds) and returns how many it moved. A
	// body is written to the blob store before the log stops holding it,
	// so a crash between the two loses nothing; a message archived before
	// is not moved again. progress, when not nil, is called now and then
	// with the count so far.
	Archive(ctx context.Context, cutoff int64, progress func(moved int)) (int, error)
}

// Person is what the store keeps of a user as others see it: its settings
// and when its last device went away (0: never seen).
type Person struct {
	Settings protocol.UserSettings
	LastSeen int64
}
