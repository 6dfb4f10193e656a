package client

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/imcore/im/localstore"
	"github.com/imcore/im/protocol"
)

// maxSendsInFlight bounds the outbox messages sent and not yet answered,
// so that a long outbox does not trip the server's rate limit.
const maxSendsInFlight = 64

// sendRetryDelay is the wait before sending again a message the server
// could not take (rate limited, internal error).
const sendRetryDelay = time.Second

// ErrServerBehind is the error of the ErrorEvent that says the server's
// history of a conversation is behind what this device holds: it numbered a
// new message with a seq the device already holds for another (it lost
// data, or it is not the server the device knew). The device keeps its
// messages, set aside before the server's history, and goes on with the
// server's numbering.
var ErrServerBehind = errors.New("the server's history is behind this device's")

// reportBehind says, for each conversation the store found the server
// behind in (TakeBehind), that it is: never silently, and once per
// connection. Until the check of the connection settles, it is said with
// the check's warning (behindSettled), or when the connection ends
// (endBehindCheck).
func (l *link) reportBehind() {
	ck := &l.behind
	for _, b := range l.c.store.TakeBehind() {
		l.c.log.Warn("server behind", "conv", b.Conv, "seq", b.Seq, "held", b.Held)
		switch {
		case ck.told[b.Conv]:
		case !ck.done:
			ck.found[b.Conv] = true
			ck.collided = append(ck.collided, b)
		default:
			l.sayCollision(b)
		}
		l.c.events.push(MessagesChanged{Conv: b.Conv})
	}
}

// sayCollision says that the server numbered a message of b.Conv with a
// seq the device held for another.
func (l *link) sayCollision(b localstore.Behind) {
	l.behind.told[b.Conv] = true
	l.c.behindSaid.Add(1)
	err := fmt.Errorf("%w in %s: it numbered a new message %d where this device held up to %d (it lost messages?); the device keeps them, before the server's", ErrServerBehind, b.Conv, b.Seq, b.Held)
	l.c.events.push(ErrorEvent{Op: "sync", Err: err})
}

// outboxKey names an outbox message.
type outboxKey struct{ conv, msgID string }

// Send puts a message in the outbox and in the chat at once, online or
// not, and returns it (Outbox true). The client sends it, under the same
// msg_id however many times it must try, until the server answers sent.
// The error is for local failures: an invalid conversation or body, the
// store. Messages are queued in the order of the calls: each takes a later
// client_ts and msg_id than the one before, even within a millisecond, and
// the server stores a conversation's messages in that order.
func (c *Client) Send(conv, body string) (Message, error) {
	parsed, ok := protocol.ParseConv(conv)
	if !ok || parsed.Kind == protocol.ConvBiz {
		return Message{}, fmt.Errorf("send: %q is not a conversation", conv)
	}
	if perr := protocol.CheckBody(body, protocol.DefaultMaxBody); perr != nil {
		return Message{}, fmt.Errorf("send: %w", perr)
	}
	user := c.User()
	if user == "" {
		return Message{}, errors.New("send: the user is not known until the first welcome")
	}
	c.sendMu.Lock()
	ts := max(c.now().UnixMilli(), c.lastSendTS+1)
	m := protocol.Message{Conv: conv, MsgID: newMsgID(time.UnixMilli(ts)), From: user, Body: body, ClientTS: ts}
	err := c.store.EnqueueOutbox(m)
	if err == nil {
		c.lastSendTS = ts
	}
	c.sendMu.Unlock()
	if err != nil {
		return Message{}, err
	}
	c.events.push(MessagesChanged{Conv: conv})
	c.wake()
	c.Reconnect() // offline, the user has something to send: try now
	return Message{Message: m, Outbox: true}, nil
}

// newMsgID returns a fresh msg_id: the time in ms (so ids sort by creation)
// and 80 random bits.
func newMsgID(now time.Time) string {
	var b [10]byte
	rand.Read(b[:])
	return strconv.FormatInt(now.UnixMilli(), 36) + "-" + hex.EncodeToString(b[:])
}

// flushOutbox sends the outbox messages not yet sent on this connection,
// oldest first, one unanswered send per conversation so that the server
// stores each conversation's messages in the order they were written
// (conversations are pipelined). A conversation whose send was refused for
// a passing reason waits for its retry timer.
func (l *link) flushOutbox() {
	if len(l.sending) >= maxSendsInFlight {
		return
	}
	items, err := l.c.store.Outbox()
	if err != nil {
		l.c.log.Error("read outbox", "err", err)
		return
	}
	now := time.Now()
	next := make(map[string]bool) // conversations whose oldest message was seen
	for _, it := range items {
		if next[it.Conv] {
			continue
		}
		next[it.Conv] = true
		key := outboxKey{it.Conv, it.MsgID}
		if l.sending[key] || now.Before(l.retryAt[it.Conv]) {
			continue
		}
		if len(l.sending) >= maxSendsInFlight {
			return
		}
		if it.Kind != "" && it.RefSeq == 0 {
			// Its target, in the outbox before it, was never stored.
			l.dropUnsendable(it)
			next[it.Conv] = false
			continue
		}
		if !it.Tried {
			if err := l.c.store.MarkTried(it.Conv, it.MsgID); err != nil {
				l.c.log.Error("mark tried", "err", err)
				continue
			}
		}
		l.sending[key] = true
		l.request(&request{
			op: "send",
			frame: &protocol.Send{Conv: it.Conv, MsgID: it.MsgID, Body: it.Body, ClientTS: it.ClientTS,
				ReplyTo: it.ReplyTo, Kind: it.Kind, RefSeq: it.RefSeq},
			answer: func(l *link, f protocol.Frame) { l.onSent(it, f) },
		})
	}
}

// dropUnsendable drops outbox entry it, whose target never took a seq
// (the server refused it), and says so.
func (l *link) dropUnsendable(it localstore.OutboxItem) {
	if err := l.c.store.DropOutbox(it.Conv, it.MsgID); err != nil {
		l.c.log.Error("drop entry without target", "err", err)
		return
	}
	l.c.events.push(ErrorEvent{Op: "send", Err: fmt.Errorf("%s in %s not sent: its message was never stored", relationWord(it.Kind, 0), it.Conv)})
	l.c.events.push(MessagesChanged{Conv: it.Conv})
}

// onSent applies the answer to an outbox message: sent makes it a stored
// message; a passing failure leaves it for a try after sendRetryDelay; a
// refusal for good drops it (and says so), unless an earlier try of it
// (it.Tried) may have been stored: then it stays in the chat, failed.
func (l *link) onSent(it localstore.OutboxItem, f protocol.Frame) {
	delete(l.sending, outboxKey{it.Conv, it.MsgID})
	switch f := f.(type) {
	case *protocol.Sent:
		delete(l.retryAt, it.Conv)
		m, err := l.c.store.ConfirmSent(f.Conv, f.MsgID, f.Seq, f.ServerTS)
		l.reportBehind()
		if errors.Is(err, localstore.ErrNotInOutbox) {
			l.flushOutbox()
			return
		}
		if err != nil {
			l.c.log.Error("confirm sent", "conv", f.Conv, "msg_id", f.MsgID, "err", err)
			return
		}
		unknown, err := l.c.store.ApplyMessages([]protocol.Message{m}, l.self)
		if err != nil {
			l.c.log.Error("update session", "conv", m.Conv, "err", err)
		}
		l.c.events.push(MessagesChanged{Conv: m.Conv})
		l.c.events.push(SessionsChanged{})
		if len(unknown) > 0 {
			l.syncAll() // the first message of a conversation: its session is new
		}
		l.recheckPresence([]string{m.Conv})
		l.flushOutbox()
	case *protocol.ErrorFrame:
		if temporary(f) {
			l.retryAt[it.Conv] = time.Now().Add(sendRetryDelay)
			time.AfterFunc(sendRetryDelay, l.c.wake)
			return
		}
		delete(l.retryAt, it.Conv)
		drop := l.c.store.DropOutbox
		if it.Tried {
			drop = l.c.store.FailOutbox
		}
		if err := drop(it.Conv, it.MsgID); err != nil {
			l.c.log.Error("drop refused message", "err", err)
		}
		if it.Kind != "" {
			// Undone in its target; nothing to give back to the user.
			l.c.events.push(ErrorEvent{Op: "send", Err: fmt.Errorf("%s in %s refused: %w", relationWord(it.Kind, 0), it.Conv, answerError(f))})
			l.c.events.push(MessagesChanged{Conv: it.Conv})
			l.flushOutbox()
			return
		}
		l.c.events.push(ErrorEvent{Op: "send", Err: fmt.Errorf("message to %s refused: %w", it.Conv, answerError(f))})
		l.c.events.push(SendRefused{Conv: it.Conv, Body: it.Body, Kept: it.Tried})
		l.c.events.push(MessagesChanged{Conv: it.Conv})
		l.flushOutbox()
	}
}
