package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"github.com/imcore/im/localstore"
	"github.com/imcore/im/protocol"
	"github.com/imcore/im/session"
)

// typingInterval is the least time between two typing frames for one
// conversation.
const typingInterval = 3 * time.Second

// SessionOp applies a session operation (pin, unpin, mute, unmute,
// mark_unread, delete, set_category) to conv. until is the mute's end in
// Unix ms (0: until unmuted); category is for set_category. It works
// offline: the operation shows in the stored list at once
// (SessionsChanged), is kept until the server answers, across restarts,
// and goes out as soon as there is a connection; the server's answer
// replaces what was shown; a refusal is an ErrorEvent and the operation is
// undone on the device. An operation the server's rules would refuse (a
// folder name outside 1-32 characters of a-z 0-9 _ . -) is an ErrorEvent
// at once, saying the rule, and changes nothing.
func (c *Client) SessionOp(conv, op string, until int64, category string) {
	if perr := session.Validate(session.Op(op), session.OpArgs{Until: until, Category: category}); perr != nil {
		// The server would refuse it: say so now, and show nothing.
		c.events.push(ErrorEvent{Op: "session_op " + op, Err: perr})
		return
	}
	if op == "delete" && c.leftGroup(conv) {
		// The server refuses every frame about a group the user has left;
		// deleting it from the list is this device's business alone.
		if _, err := c.store.HideSession(conv); err != nil {
			c.events.push(ErrorEvent{Op: "session_op delete", Err: err})
			return
		}
		c.events.push(SessionsChanged{})
		return
	}
	if _, err := c.store.ApplySessionOp(localstore.PendingOp{Conv: conv, Op: op, Until: until, Category: category}); err != nil {
		c.log.Error("keep session op", "conv", conv, "op", op, "err", err)
		c.events.push(ErrorEvent{Op: "session_op " + op, Err: err})
		return
	}
	c.events.push(SessionsChanged{})
	c.wake()
}

// leftGroup reports whether conv is a group whose stored session says the
// user is no longer a member (a former member's session lists nobody).
func (c *Client) leftGroup(conv string) bool {
	parsed, ok := protocol.ParseConv(conv)
	if !ok || parsed.Kind != protocol.ConvGroup {
		return false
	}
	sess, found, err := c.store.Session(conv)
	return err == nil && found && !slices.Contains(sess.Members, c.User())
}

// CreateGroup asks the server for a group of the user and members named
// title. key names the request (1-64 characters; "" makes one): a retried
// create is answered with the same group, never a second one. The answer
// is a GroupChanged event carrying key (and the new session arrives by
// sync); a refusal is an ErrorEvent. It returns the key.
func (c *Client) CreateGroup(key, title string, members []string) string {
	if key == "" {
		key = NewGroupKey()
	}
	c.enqueue(&request{
		op:     "create_group",
		frame:  &protocol.CreateGroup{Title: title, Members: members, Key: key},
		retry:  true,
		answer: c.groupAnswer("create_group", key),
	})
	return key
}

// NewGroupKey returns a fresh key for CreateGroup.
func NewGroupKey() string {
	var key [12]byte
	rand.Read(key[:])
	return hex.EncodeToString(key[:])
}

// GroupOp changes a group: op is add or remove (with users), leave, or
// rename (with title). The answer is a GroupChanged event; a refusal is an
// ErrorEvent.
func (c *Client) GroupOp(conv, op string, users []string, title string) {
	c.enqueue(&request{
		op:     "group_op " + op,
		frame:  &protocol.GroupOp{Conv: conv, Op: op, Users: users, Title: title},
		retry:  op != "leave", // a second leave would be refused
		answer: c.groupAnswer("group_op "+op, ""),
		lost: func(err error) {
			c.events.push(ErrorEvent{Op: "group_op " + op, Err: err})
		},
	})
}

// groupAnswer handles the answer to a group request; key is the
// create_group's, "" for a group_op.
func (c *Client) groupAnswer(op, key string) func(*link, protocol.Frame) {
	return func(l *link, f protocol.Frame) {
		if g, ok := f.(*protocol.Group); ok {
			c.events.push(GroupChanged{Conv: g.Conv, Title: g.Title, Members: g.Members, Key: key})
			l.sync("")
			return
		}
		c.events.push(ErrorEvent{Op: op, Err: c.refusal(f)})
	}
}

// Receipts asks the server for every member's boundaries in conv (message
// info) and waits for the answer, ctx or the end of the connection. It
// fails at once with ErrOffline when there is no connection.
func (c *Client) Receipts(ctx context.Context, conv string) ([]protocol.MemberReceipt, error) {
	type result struct {
		members []protocol.MemberReceipt
		err     error
	}
	done := make(chan result, 1)
	c.mu.Lock()
	online := c.link != nil
	c.mu.Unlock()
	if !online {
		return nil, ErrOffline
	}
	c.enqueue(&request{
		op:    "receipts",
		frame: &protocol.ReceiptsRequest{Conv: conv},
		answer: func(_ *link, f protocol.Frame) {
			if r, ok := f.(*protocol.ReceiptsReply); ok {
				done <- result{members: r.Members}
				return
			}
			done <- result{err: c.refusal(f)}
		},
		lost: func(err error) { done <- result{err: err} },
	})
	select {
	case r := <-done:
		return r.members, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// LoadOlder asks the server for the page of conv's history before
// beforeSeq (0: the newest page), stores it and reports MessagesChanged;
// the UI then reads it with Messages. A page that reaches the start of
// what the user may read is followed by HistoryStart. A refusal is an
// ErrorEvent.
func (c *Client) LoadOlder(conv string, beforeSeq int64) {
	c.enqueue(&request{
		op:    "history",
		frame: &protocol.History{Conv: conv, BeforeSeq: max(beforeSeq, 0), Limit: olderPage},
		retry: true,
		answer: func(l *link, f protocol.Frame) {
			page, ok := f.(*protocol.Messages)
			if !ok {
				c.events.push(ErrorEvent{Op: "history", Err: c.refusal(f)})
				return
			}
			if len(page.Messages) > 0 {
				if !l.storeHistory(page.Messages) {
					return
				}
			} else {
				c.events.push(MessagesChanged{Conv: conv})
			}
			if start := historyStart(beforeSeq, page); start > 0 {
				c.events.push(HistoryStart{Conv: conv, Seq: start})
			}
		},
	})
}

// Typing tells the other members the user is typing in conv: at most one
// frame per conversation every few seconds, and nothing while offline.
func (c *Client) Typing(conv string) {
	now := c.now()
	c.mu.Lock()
	if c.link == nil || now.Sub(c.typedAt[conv]) < typingInterval {
		c.mu.Unlock()
		return
	}
	c.typedAt[conv] = now
	c.mu.Unlock()
	c.enqueue(&request{op: "typing", frame: &protocol.Typing{Conv: conv}, ephemeral: true})
}

// refusal turns an answer that is not the expected one into an error.
func (c *Client) refusal(f protocol.Frame) error {
	if perr := answerError(f); perr != nil {
		return perr
	}
	return fmt.Errorf("unexpected answer %q", f.FrameType())
}
