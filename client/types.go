package client

import (
	"time"

	"github.com/imcore/im/protocol"
)

// ConnState says whether what a user sees is live.
type ConnState int

// The connection states, as the status bar names them.
const (
	Connecting ConnState = iota // dialing or saying hello
	Online                      // welcomed: pushes arrive live
	Offline                     // disconnected; a retry is scheduled at RetryAt
	Stopped                     // Run has returned
)

// String names the state.
func (s ConnState) String() string {
	switch s {
	case Connecting:
		return "connecting"
	case Online:
		return "online"
	case Offline:
		return "offline"
	}
	return "stopped"
}

// Conn is the connection's state at one moment.
type Conn struct {
	State   ConnState
	RetryAt time.Time // when Offline: the next attempt
	Err     error     // when Offline: why the last attempt failed or ended
	URL     string    // the server's endpoint of the connection or the attempt
}

// Message is a message as the client holds it: a stored message, or one of
// the user's own still in the outbox (Seq 0, not yet answered by sent).
type Message struct {
	protocol.Message
	// Outbox is true while the server has not answered sent.
	Outbox bool
	// Failed is true for one of the user's own messages (Seq 0) the server
	// refused on a retry after an earlier try may have been stored: it is
	// no longer sent, and kept in the chat.
	Failed bool
}

// Event is what the client tells a UI. Events say what changed; the UI
// reads the new state from the client's query methods.
type Event interface{ event() }

// ConnChanged reports a new connection state.
type ConnChanged struct{ Conn Conn }

// MessagesChanged reports that messages of Conv were stored or changed (a
// push, a sent answer, a history page).
type MessagesChanged struct{ Conv string }

// SessionsChanged reports that the session list changed.
type SessionsChanged struct{}

// TicksChanged reports that a conversation's tick boundaries rose.
type TicksChanged struct {
	Conv  string
	Ticks protocol.Ticks
}

// TypingEvent reports that User is typing in Conv.
type TypingEvent struct{ Conv, User string }

// ErrorEvent reports a request the server refused or that failed.
type ErrorEvent struct {
	Op  string
	Err error
}

func (ConnChanged) event()     {}
func (MessagesChanged) event() {}
func (SessionsChanged) event() {}
func (TicksChanged) event()    {}
func (TypingEvent) event()     {}
func (ErrorEvent) event()      {}

// GroupChanged reports a group's state as the server answered a
// create_group or group_op of this client.
type GroupChanged struct {
	Conv    string
	Title   string
	Members []string
	// Key is the key of the create_group this answers, "" for a group_op.
	Key string
}

func (GroupChanged) event() {}

// Incoming reports messages from other users that arrived live in Conv,
// new to this device: Count of them, Last the newest. A UI notifies the
// user of them. Messages fetched as history are not reported, nor edits
// and deletions; a reaction to one of the user's own messages is, with
// Last the reaction entry and ReactedTo the message it is given to.
type Incoming struct {
	Conv      string
	Count     int
	Last      protocol.Message
	ReactedTo *protocol.Message
}

func (Incoming) event() {}

// SendRefused reports one of the user's messages the server refused for
// good (after the ErrorEvent that says why). Kept says it stays in the
// chat, flagged as failed, because an earlier try may have been stored;
// otherwise it left the chat, and Body is the text to give back to the
// user.
type SendRefused struct {
	Conv string
	Body string
	Kept bool
}

func (SendRefused) event() {}
