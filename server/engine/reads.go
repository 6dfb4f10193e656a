package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// History implements chat.Engine: messages are durable before they are
// answered sent, so the log is read as it is.
func (e *Engine) History(ctx context.Context, conv string, q store.HistoryQuery) ([]protocol.Message, bool, error) {
	return e.be.History(ctx, conv, q)
}

// Pending implements chat.Engine, once the rows put before it are written.
func (e *Engine) Pending(ctx context.Context, user string) ([]store.PendingDelivery, error) {
	if e.closed.Load() {
		return nil, store.ErrClosed
	}
	if err := e.flush.barrier(ctx); err != nil {
		return nil, fmt.Errorf("pending of %s: %w", user, err)
	}
	return e.be.Pending(ctx, user)
}

// RowsOf returns the tickets of the rows the owners of user's
// conversations put for it (its pending rows) as this engine, the user's
// owner, learned them: once they are confirmed written, the user's
// pending rows can be read whole. A ticket of this engine has Node empty.
func (e *Engine) RowsOf(user string) []WriteTicket {
	sh := e.users.shard(user)
	e.users.lock(sh)
	defer sh.mu.Unlock()
	if u := sh.m[user]; u != nil {
		return slices.Clone(u.rows)
	}
	return nil
}

// Receipts implements chat.Engine, from memory.
func (e *Engine) Receipts(ctx context.Context, conv string) ([]protocol.MemberReceipt, error) {
	if e.closed.Load() {
		return nil, store.ErrClosed
	}
	cs, err := e.peekConv(ctx, conv)
	if err != nil {
		return nil, fmt.Errorf("receipts of %s: %w", conv, err)
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if !cs.exists {
		return []protocol.MemberReceipt{}, nil
	}
	return cs.receipts(), nil
}

// SessionClock returns user's newest session timestamp (the cursor of a
// session_sync nudge), once every row put so far is written.
func (e *Engine) SessionClock(ctx context.Context, user string) (int64, error) {
	if err := e.flush.barrier(ctx); err != nil {
		return 0, err
	}
	rec, err := e.be.User(ctx, user)
	if err != nil {
		return 0, fmt.Errorf("session clock of %s: %w", user, err)
	}
	return rec.Clock, nil
}
