package client

import (
	"time"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/session"
)

// Sessions returns the list subBiz ("" the main list) from the profile's
// store, as it is shown (sorted, deleted sessions hidden), and the list's
// total unread count by the session rules. It works offline.
func (c *Client) Sessions(subBiz string) ([]protocol.Session, int64, error) {
	list, err := c.store.Sessions(subBiz)
	if err != nil {
		return nil, 0, err
	}
	now := c.now().UnixMilli()
	var total int64
	for i := range list {
		total += session.ObjectUnread(&list[i], now)
	}
	return list, total, nil
}

// Messages returns the newest limit stored messages of conv below
// beforeSeq (0: the newest, followed by the user's messages still in the
// outbox), in ascending seq order, each as it stands: edited, deleted for
// everyone, with its reactions, the user's own edits, deletions and
// reactions still in the outbox included. Relation entries are not
// listed: they show in their targets. It works offline; LoadOlder fetches
// older pages from the server.
func (c *Client) Messages(conv string, beforeSeq int64, limit int) ([]Message, error) {
	stored, err := c.store.Messages(conv, beforeSeq, limit)
	if err != nil {
		return nil, err
	}
	out := make([]Message, len(stored))
	for i, m := range stored {
		out[i] = Message{Message: m.Message, Outbox: m.Outbox, Failed: m.Failed}
	}
	return out, nil
}

// Ticks returns the highest tick boundaries known for conv; a message of
// the user's own shows protocol.TickOf(its seq, these).
func (c *Client) Ticks(conv string) protocol.Ticks {
	t, err := c.store.Ticks(conv)
	if err != nil {
		c.log.Error("read ticks", "conv", conv, "err", err)
	}
	return t
}

// Drafts returns what the user typed and did not send, per conversation,
// as kept by SaveDraft.
func (c *Client) Drafts() (map[string]string, error) { return c.store.Drafts() }

// SaveDraft keeps text as the draft of conv, across restarts; "" forgets
// it.
func (c *Client) SaveDraft(conv, text string) {
	if err := c.store.SetDraft(conv, text); err != nil {
		c.log.Error("save draft", "conv", conv, "err", err)
	}
}

// SearchMessages returns up to limit stored messages of conv ("" for
// every conversation) that hold every word of query anywhere, inside
// words and in any script too, newest first. It searches what this
// device holds, offline too: an edited message by its text as it stands,
// a deleted one no more.
func (c *Client) SearchMessages(conv, query string, limit int) ([]Message, error) {
	found, err := c.store.SearchMessages(conv, query, limit)
	if err != nil {
		return nil, err
	}
	out := make([]Message, len(found))
	for i, m := range found {
		out[i] = Message{Message: m.Message}
	}
	return out, nil
}

// TickTimes returns when this device saw conv's ticks first cover message
// seq: delivered to every other member, read by every other member (zero
// while not yet, or not known).
func (c *Client) TickTimes(conv string, seq int64) (delivered, read time.Time) {
	d, r, err := c.store.TickTimes(conv, seq)
	if err != nil {
		c.log.Error("read tick times", "conv", conv, "err", err)
	}
	return d, r
}
