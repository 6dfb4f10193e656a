package tui

import (
	"context"
	"time"

	"github.com/imcore/im/client"
	"github.com/imcore/im/protocol"
)

// Backend is what the UI needs from the client engine. Query methods read the
// local store and return at once; the methods without results are requests
// whose effects come back as events on Events.
type Backend interface {
	// Events streams what changed; the UI re-reads state from the queries.
	Events() <-chan client.Event
	// Conn returns the connection state now.
	Conn() client.Conn
	// User returns the signed-in user id.
	User() string
	// Device returns this installation's device id.
	Device() string
	// Server returns the server address, for the status bar.
	Server() string
	// Sessions returns the list of subBiz ("" for the main list), sorted by
	// priority, write_ts desc, conv; deleted sessions are hidden.
	Sessions(subBiz string) (sessions []protocol.Session, totalUnread int64, err error)
	// Messages returns up to limit stored messages of conv below beforeSeq
	// in ascending order; beforeSeq 0 is the newest page, outbox included.
	Messages(conv string, beforeSeq int64, limit int) ([]client.Message, error)
	// SearchMessages returns up to limit stored messages of conv ("" for
	// every conversation) holding every word of query anywhere, newest
	// first.
	SearchMessages(conv, query string, limit int) ([]client.Message, error)
	// LoadOlder fetches the page below beforeSeq from the server; a
	// MessagesChanged event follows when it is stored.
	LoadOlder(conv string, beforeSeq int64)
	// Send queues body for conv; it works offline (the message is returned
	// with Outbox true). The UI calls it from Update, in the order the user
	// sent, so it must only queue (a local write), never wait for the
	// network, and keep the order of its calls.
	Send(conv, body string) (client.Message, error)
	// Reply queues body for conv as a reply to message targetID (its
	// msg_id), as Send does.
	Reply(conv, targetID, body string) (client.Message, error)
	// Edit queues an edit of the user's message targetID of conv to body;
	// the target shows it at once.
	Edit(conv, targetID, body string) (client.Message, error)
	// DeleteForEveryone queues the deletion of the user's message
	// targetID of conv for every member; the target shows it at once.
	DeleteForEveryone(conv, targetID string) (client.Message, error)
	// React queues the user's reaction to message targetID of conv, ""
	// to remove it; the target shows it at once.
	React(conv, targetID, reaction string) (client.Message, error)
	// MessagesAt returns the stored messages of conv at seqs, as they
	// stand (the targets of replies), in ascending order.
	MessagesAt(conv string, seqs []int64) ([]client.Message, error)
	// MarkRead says the user has seen conv up to seq.
	MarkRead(conv string, seq int64)
	// SessionOp changes a session: pin, unpin, mute, unmute, mark_unread,
	// delete or set_category.
	SessionOp(conv, op string, until int64, category string)
	// CreateGroup creates a group with the user and members in it; key
	// names the request, and comes back in the GroupChanged that answers
	// it.
	CreateGroup(key, title string, members []string) string
	// GroupOp changes group conv: op is add or remove (with users), leave,
	// or rename (with title). Any member may do any of them; the answer is
	// a GroupChanged event, a refusal an ErrorEvent.
	GroupOp(conv, op string, users []string, title string)
	// Receipts asks the server for every member's boundaries in conv.
	Receipts(ctx context.Context, conv string) ([]protocol.MemberReceipt, error)
	// Reconnect tries to connect now when offline, instead of waiting
	// for the next attempt.
	Reconnect()
	// Typing tells the other members that the user is typing in conv.
	Typing(conv string)
	// Ticks returns conv's tick boundaries as known now.
	Ticks(conv string) protocol.Ticks
	// TickTimes returns when this device saw conv's ticks first cover
	// message seq: delivered and read by every other member (zero: not
	// yet).
	TickTimes(conv string, seq int64) (delivered, read time.Time)
	// Drafts returns the kept drafts: conversation → text.
	Drafts() (map[string]string, error)
	// SaveDraft keeps text as conv's draft, across restarts; "" forgets
	// it.
	SaveDraft(conv, text string)

	// Settings returns the user's settings as last known (the defaults
	// before the server first gave them), blocked users included.
	Settings() protocol.UserSettings
	// ChangeSettings changes the keys change carries; the answer is a
	// SettingsChanged event with Op "settings", a refusal an ErrorEvent.
	ChangeSettings(change protocol.SettingsChange)
	// Block blocks user (SettingsChanged with Op "block" answers it).
	Block(user string)
	// Unblock lifts a block (SettingsChanged with Op "unblock").
	Unblock(user string)
	// WatchPresence makes users, most wanted first, the ones whose
	// presence the client follows; PresenceChanged events tell changes.
	WatchPresence(users []string)
	// Presence returns what is known of user: live is true when the
	// server told its presence on the current connection; otherwise only
	// its Name (kept across restarts) is known, if that.
	Presence(user string) (p protocol.Presence, live bool)
}
