package client

import (
	"errors"
	"fmt"
	"time"

	"github.com/imcore/im/localstore"
	"github.com/imcore/im/protocol"
)

// Replies, edits, deletions for everyone and reactions (PROTOCOL.md,
// "Replies, edits, deletions and reactions") go through the outbox like
// any message: offline too, in the order they were made, once, across
// restarts. An edit, a deletion or a reaction shows in its target at once
// (Messages returns the target as it will stand) and is undone there if
// the server refuses it. The target is named by its msg_id, so one of the
// user's messages still in the outbox can be replied to, edited, deleted
// or reacted to: the entry goes out after it, with the seq it took.

// The errors of a reply, edit, deletion or reaction the device can tell
// the server would refuse.
var (
	// ErrNoTarget: the device holds no such message in the conversation.
	ErrNoTarget = errors.New("no such message on this device")
	// ErrNotOwn: only the sender of a message may edit or delete it.
	ErrNotOwn = errors.New("only its sender may edit or delete a message")
	// ErrNotEditable: system messages, relation entries and messages the
	// server refused cannot be edited, deleted or reacted to.
	ErrNotEditable = errors.New("only a message can be edited, deleted or reacted to")
	// ErrTargetDeleted: the message was deleted for everyone.
	ErrTargetDeleted = errors.New("the message was deleted")
)

// Reply puts in the outbox a message of conv that replies to message
// targetID (a msg_id), and returns it as Send does. The target may be a
// system message, or deleted since; not a relation entry.
func (c *Client) Reply(conv, targetID, body string) (Message, error) {
	t, err := c.relationTarget(conv, targetID)
	if err != nil {
		return Message{}, fmt.Errorf("reply: %w", err)
	}
	if t.IsRelation() || t.Failed || t.Seq < 0 {
		return Message{}, fmt.Errorf("reply: %w", ErrNotEditable)
	}
	return c.enqueueRelated("reply", protocol.Message{Conv: conv, Body: body}, targetID)
}

// Edit puts in the outbox an edit of the user's message targetID of conv
// to body.
func (c *Client) Edit(conv, targetID, body string) (Message, error) {
	if _, err := c.ownTarget(conv, targetID); err != nil {
		return Message{}, fmt.Errorf("edit: %w", err)
	}
	return c.enqueueRelated("edit", protocol.Message{Conv: conv, Kind: protocol.KindEdit, Body: body}, targetID)
}

// DeleteForEveryone puts in the outbox the deletion of the user's message
// targetID of conv for every member. Its text is erased from the device
// once the server has stored the deletion.
func (c *Client) DeleteForEveryone(conv, targetID string) (Message, error) {
	if _, err := c.ownTarget(conv, targetID); err != nil {
		return Message{}, fmt.Errorf("delete: %w", err)
	}
	return c.enqueueRelated("delete", protocol.Message{Conv: conv, Kind: protocol.KindDelete}, targetID)
}

// React puts in the outbox the user's reaction to message targetID of
// conv (anyone's): 1-32 bytes without whitespace, replacing the user's
// earlier one; "" removes it.
func (c *Client) React(conv, targetID, reaction string) (Message, error) {
	if perr := protocol.CheckReaction(reaction); perr != nil {
		return Message{}, fmt.Errorf("react: %w", perr)
	}
	t, err := c.relationTarget(conv, targetID)
	if err == nil {
		err = editable(t)
	}
	if err != nil {
		return Message{}, fmt.Errorf("react: %w", err)
	}
	return c.enqueueRelated("react", protocol.Message{Conv: conv, Kind: protocol.KindReaction, Body: reaction}, targetID)
}

// relationTarget returns message targetID of conv as the device holds it.
func (c *Client) relationTarget(conv, targetID string) (localstore.Message, error) {
	if _, perr := protocol.ParseMessageConv(conv); perr != nil {
		return localstore.Message{}, perr
	}
	t, ok, err := c.store.Message(conv, targetID)
	if err != nil {
		return localstore.Message{}, err
	}
	if !ok {
		return localstore.Message{}, ErrNoTarget
	}
	return t, nil
}

// ownTarget returns the user's message targetID of conv, if it may be
// edited or deleted.
func (c *Client) ownTarget(conv, targetID string) (localstore.Message, error) {
	t, err := c.relationTarget(conv, targetID)
	if err != nil {
		return t, err
	}
	if err := editable(t); err != nil {
		return t, err
	}
	if t.From != c.User() {
		return t, ErrNotOwn
	}
	return t, nil
}

// editable says why t cannot be edited, deleted or reacted to, nil when
// it can.
func editable(t localstore.Message) error {
	switch {
	case t.Kind != "" || t.Failed || t.Seq < 0:
		return ErrNotEditable
	case t.Deleted:
		return ErrTargetDeleted
	}
	return nil
}

// enqueueRelated is Send for m (Conv, Body, and Kind or ReplyTo), acting on the
// message targetID, or none: it takes the next client_ts and msg_id of the
// ordered outbox, and the target's seq if it has one yet.
func (c *Client) enqueueRelated(op string, m protocol.Message, targetID string) (Message, error) {
	parsed, ok := protocol.ParseConv(m.Conv)
	if !ok || parsed.Kind == protocol.ConvBiz {
		return Message{}, fmt.Errorf("%s: %q is not a conversation", op, m.Conv)
	}
	if m.Kind != protocol.KindDelete && m.Kind != protocol.KindReaction {
		if perr := protocol.CheckBody(m.Body, protocol.DefaultMaxBody); perr != nil {
			return Message{}, fmt.Errorf("%s: %w", op, perr)
		}
	}
	user := c.User()
	if user == "" {
		return Message{}, fmt.Errorf("%s: the user is not known until the first welcome", op)
	}
	m.From = user
	c.sendMu.Lock()
	ts := max(c.now().UnixMilli(), c.lastSendTS+1)
	m.ClientTS, m.MsgID = ts, newMsgID(time.UnixMilli(ts))
	var err error
	if targetID != "" {
		// Read under sendMu: a target in the outbox takes its seq in the
		// same store, and the entry after it must see either.
		var seq int64
		if seq, _, err = c.store.TargetSeq(m.Conv, targetID); err == nil && seq > 0 {
			targetID = ""
			if m.Kind != "" {
				m.RefSeq = seq
			} else {
				m.ReplyTo = seq
			}
		}
	}
	if err == nil {
		err = c.store.EnqueueRelated(m, targetID)
	}
	if err == nil {
		c.lastSendTS = ts
	}
	c.sendMu.Unlock()
	if err != nil {
		return Message{}, err
	}
	c.events.push(MessagesChanged{Conv: m.Conv})
	c.wake()
	c.Reconnect()
	return Message{Message: m, Outbox: true}, nil
}

// Message returns message msgID of conv as the device holds it (as it
// stands); ok is false when it holds none.
func (c *Client) Message(conv, msgID string) (Message, bool, error) {
	m, ok, err := c.store.Message(conv, msgID)
	if err != nil || !ok {
		return Message{}, ok, err
	}
	return Message{Message: m.Message, Outbox: m.Outbox, Failed: m.Failed}, true, nil
}

// MessagesAt returns the messages of conv the device holds at seqs, as
// they stand, in ascending seq order: the targets of replies, say.
func (c *Client) MessagesAt(conv string, seqs []int64) ([]Message, error) {
	held, err := c.store.MessagesAt(conv, seqs)
	if err != nil {
		return nil, err
	}
	out := make([]Message, len(held))
	for i, m := range held {
		out[i] = Message{Message: m.Message, Outbox: m.Outbox, Failed: m.Failed}
	}
	return out, nil
}

// relationWord names a relation entry (or a reply) in what the user is
// told.
func relationWord(kind string, replyTo int64) string {
	switch kind {
	case protocol.KindEdit:
		return "edit"
	case protocol.KindDelete:
		return "deletion"
	case protocol.KindReaction:
		return "reaction"
	}
	if replyTo > 0 {
		return "reply"
	}
	return "message"
}
