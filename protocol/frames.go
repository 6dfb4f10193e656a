package protocol

// Frame is one JSON object on the wire. FrameType is the value of its
// "type" field.
type Frame interface {
	FrameType() string
}

// Ref carries the client-chosen request id that an answer echoes. It is
// embedded in every frame that can carry an id.
type Ref struct {
	ID string `json:"id,omitempty"`
}

// RequestID returns the request id, "" when none was given.
func (r Ref) RequestID() string { return r.ID }

// SetRequestID sets the request id.
func (r *Ref) SetRequestID(id string) { r.ID = id }

// SetRequestID gives f the request id, if f is a frame that can carry one
// (every frame embedding Ref), and reports whether it could.
func SetRequestID(f Frame, id string) bool {
	r, ok := f.(interface{ SetRequestID(string) })
	if ok {
		r.SetRequestID(id)
	}
	return ok
}

// Message is the message object of the protocol.
type Message struct {
	Conv     string `json:"conv"`
	Seq      int64  `json:"seq"`
	MsgID    string `json:"msg_id"`
	From     string `json:"from"`
	Body     string `json:"body"`
	ClientTS int64  `json:"client_ts"`
	ServerTS int64  `json:"server_ts"`
	// Kind is "system" for events written by the server, a relation kind
	// (KindEdit, KindDelete, KindReaction) for a relation entry, ""
	// otherwise.
	Kind string `json:"kind,omitempty"`
	// ReplyTo is the seq of the message this one replies to, 0 for none.
	ReplyTo int64 `json:"reply_to,omitempty"`
	// RefSeq is, for a relation entry, the seq of its target (the "ref"
	// field).
	RefSeq int64 `json:"ref,omitempty"`
	// EditedTS is the server_ts of the latest edit of the message as it
	// stands, 0 when it was never edited.
	EditedTS int64 `json:"edited_ts,omitempty"`
	// Deleted says the message was deleted for everyone: its body is
	// empty.
	Deleted bool `json:"deleted,omitempty"`
	// Reactions are the reactions standing on the message, nil (absent on
	// the wire) when there are none. It is a pointer so that a Message
	// stays comparable; read it with ReactionList, set it with
	// SetReactions.
	Reactions *[]Reaction `json:"reactions,omitempty"`
}

// ReactionList returns the reactions standing on m, nil when there are
// none.
func (m Message) ReactionList() []Reaction {
	if m.Reactions == nil {
		return nil
	}
	return *m.Reactions
}

// SetReactions sets the reactions standing on m; none leaves the field
// absent.
func (m *Message) SetReactions(rs []Reaction) {
	if len(rs) == 0 {
		m.Reactions = nil
		return
	}
	m.Reactions = &rs
}

// Reaction is one distinct reaction standing on a message and the users
// who gave it, in the order they gave it.
type Reaction struct {
	Body  string   `json:"body"`
	Users []string `json:"users"`
}

// KindSystem marks a message written by the server about an event.
const KindSystem = "system"

// The kinds of relation entries: messages that act on an earlier message
// of their conversation, named by RefSeq.
const (
	KindEdit     = "edit"     // replaces the target's body
	KindDelete   = "delete"   // deletes the target for everyone
	KindReaction = "reaction" // sets (or, empty, removes) the sender's reaction
)

// IsRelationKind reports whether kind is the kind of a relation entry.
func IsRelationKind(kind string) bool {
	return kind == KindEdit || kind == KindDelete || kind == KindReaction
}

// IsRelation reports whether m is a relation entry (an edit, a deletion
// or a reaction), not a message shown in its own right.
func (m Message) IsRelation() bool { return IsRelationKind(m.Kind) }

// Mark is a high-water mark: everything up to Seq in Conv.
type Mark struct {
	Conv string `json:"conv"`
	Seq  int64  `json:"seq"`
}

// MemberReceipt is one member's boundaries in a receipts answer.
type MemberReceipt struct {
	User         string `json:"user"`
	DeliveredSeq int64  `json:"delivered_seq"`
	ReadSeq      int64  `json:"read_seq"`
}

// Session is a user's view of one conversation, as in the session list.
// Every field is always present on the wire.
type Session struct {
	Conv         string   `json:"conv"`
	Kind         string   `json:"kind"`
	Title        string   `json:"title"`
	Members      []string `json:"members"`
	UnreadCount  int64    `json:"unread_count"`
	ReadSeq      int64    `json:"read_seq"`
	WriteSeq     int64    `json:"write_seq"`
	ActiveTS     int64    `json:"active_ts"`
	WriteTS      int64    `json:"write_ts"`
	Muted        bool     `json:"muted"`
	MuteUntil    int64    `json:"mute_until"`
	Priority     int64    `json:"priority"`
	Deleted      bool     `json:"deleted"`
	MarkedUnread bool     `json:"marked_unread"`
	Category     string   `json:"category"`
	SubBiz       string   `json:"sub_biz"`
	LastMsg      *Message `json:"last_msg"`
	Ticks        Ticks    `json:"ticks"`
	// Request marks a direct chat the user never wrote into while the
	// other member did: a first message from someone it never wrote to.
	Request bool `json:"request"`
}

// Frames a client sends.

// Hello opens a session; it must be the first frame.
type Hello struct {
	Ref
	Protocol int    `json:"protocol"`
	User     string `json:"user,omitempty"`
	Device   string `json:"device"`
	Token    string `json:"token,omitempty"`
}

// Send stores a message in a conversation. With ReplyTo it is a reply;
// with Kind and RefSeq it is a relation entry (see ValidateRelation).
type Send struct {
	Ref
	Conv     string `json:"conv"`
	MsgID    string `json:"msg_id"`
	Body     string `json:"body"`
	ClientTS int64  `json:"client_ts"`
	// ReplyTo is the seq of the message replied to, 0 for none.
	ReplyTo int64 `json:"reply_to,omitempty"`
	// Kind is a relation kind (KindEdit, KindDelete, KindReaction), ""
	// for a message.
	Kind string `json:"kind,omitempty"`
	// RefSeq is a relation entry's target (the "ref" field).
	RefSeq int64 `json:"ref,omitempty"`
}

// History asks for a page of a conversation's messages.
type History struct {
	Ref
	Conv      string `json:"conv"`
	BeforeSeq int64  `json:"before_seq,omitempty"`
	AfterSeq  *int64 `json:"after_seq,omitempty"`
	Limit     int    `json:"limit,omitempty"`
}

// Delivered says the device holds everything up to each mark.
type Delivered struct {
	Ref
	Marks []Mark `json:"marks"`
}

// Read says the user has seen everything up to each mark.
type Read struct {
	Ref
	Marks []Mark `json:"marks"`
}

// ReceiptsRequest asks for every member's boundaries in a conversation
// (message info).
type ReceiptsRequest struct {
	Ref
	Conv string `json:"conv"`
	// After continues a cut answer: only members whose user id sorts after
	// it (an addition to the contract; "" for the first page).
	After string `json:"after,omitempty"`
}

// Typing is ephemeral: a client sends it with Conv; the server forwards it
// to the other members with User set.
type Typing struct {
	Conv string `json:"conv"`
	User string `json:"user,omitempty"`
}

// Sync asks for the sessions changed since a cursor.
type Sync struct {
	Ref
	Since  int64  `json:"since"`
	Limit  int    `json:"limit,omitempty"`
	SubBiz string `json:"sub_biz,omitempty"`
}

// SessionOp changes one session: pin, unpin, mute, unmute, mark_unread,
// delete or set_category.
type SessionOp struct {
	Ref
	Conv     string `json:"conv"`
	Op       string `json:"op"`
	Until    int64  `json:"until,omitempty"`
	Category string `json:"category,omitempty"`
}

// CreateGroup creates a group conversation.
type CreateGroup struct {
	Ref
	Title   string   `json:"title"`
	Members []string `json:"members"`
	Key     string   `json:"key,omitempty"`
}

// GroupOp changes a group: add, remove, leave or rename.
type GroupOp struct {
	Ref
	Conv  string   `json:"conv"`
	Op    string   `json:"op"`
	Users []string `json:"users,omitempty"`
	Title string   `json:"title,omitempty"`
}

// Frames the server sends.

// Welcome answers a successful hello.
type Welcome struct {
	Ref
	User       string `json:"user"`
	Device     string `json:"device"`
	ServerTime int64  `json:"server_time"`
}

// Sent answers a send: the message is durable.
type Sent struct {
	Ref
	Conv     string `json:"conv"`
	MsgID    string `json:"msg_id"`
	Seq      int64  `json:"seq"`
	ServerTS int64  `json:"server_ts"`
}

// MsgPush carries one message to a device.
type MsgPush struct {
	Msg Message `json:"msg"`
}

// Messages answers a history request.
type Messages struct {
	Ref
	Conv     string    `json:"conv"`
	Messages []Message `json:"messages"`
	HasMore  bool      `json:"has_more"`
}

// OK answers a request that has no answer of its own. Session is set for
// session operations.
type OK struct {
	Ref
	Session *Session `json:"session,omitempty"`
}

// Status carries a conversation's tick boundaries.
type Status struct {
	Conv         string `json:"conv"`
	DeliveredSeq int64  `json:"delivered_seq"`
	ReadSeq      int64  `json:"read_seq"`
}

// ReceiptsReply answers a receipts request with every member's boundaries.
type ReceiptsReply struct {
	Ref
	Conv    string          `json:"conv"`
	Members []MemberReceipt `json:"members"`
	// HasMore says the answer was cut to the page budget: ask again with
	// After set to the last member's user (an addition to the contract).
	HasMore bool `json:"has_more,omitempty"`
}

// ErrorFrame answers a request that failed, or reports a frame that could
// not be understood.
type ErrorFrame struct {
	Ref
	Code    Code   `json:"code"`
	Message string `json:"message"`
	// RetryAfterMS, on a rate_limited error, is how long to wait before
	// the request can succeed (an addition to the contract; 0 when absent).
	RetryAfterMS int64 `json:"retry_after_ms,omitempty"`
}

// Sessions answers a sync.
type Sessions struct {
	Ref
	Sessions    []Session `json:"sessions"`
	Cursor      int64     `json:"cursor"`
	HasMore     bool      `json:"has_more"`
	TotalUnread int64     `json:"total_unread"`
}

// SessionSync nudges a device to sync its sessions from its cursor.
type SessionSync struct {
	Cursor int64 `json:"cursor"`
}

// Group carries a group's state, answering create_group and group_op.
type Group struct {
	Ref
	Conv    string   `json:"conv"`
	Title   string   `json:"title"`
	Members []string `json:"members"`
}

// FrameType implementations.

func (*Hello) FrameType() string           { return "hello" }
func (*Send) FrameType() string            { return "send" }
func (*History) FrameType() string         { return "history" }
func (*Delivered) FrameType() string       { return "delivered" }
func (*Read) FrameType() string            { return "read" }
func (*ReceiptsRequest) FrameType() string { return "receipts" }
func (*Typing) FrameType() string          { return "typing" }
func (*Sync) FrameType() string            { return "sync" }
func (*SessionOp) FrameType() string       { return "session_op" }
func (*CreateGroup) FrameType() string     { return "create_group" }
func (*GroupOp) FrameType() string         { return "group_op" }
func (*Welcome) FrameType() string         { return "welcome" }
func (*Sent) FrameType() string            { return "sent" }
func (*MsgPush) FrameType() string         { return "msg" }
func (*Messages) FrameType() string        { return "messages" }
func (*OK) FrameType() string              { return "ok" }
func (*Status) FrameType() string          { return "status" }
func (*ReceiptsReply) FrameType() string   { return "receipts" }
func (*ErrorFrame) FrameType() string      { return "error" }
func (*Sessions) FrameType() string        { return "sessions" }
func (*SessionSync) FrameType() string     { return "session_sync" }
func (*Group) FrameType() string           { return "group" }
