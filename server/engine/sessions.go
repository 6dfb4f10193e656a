package engine

import (
	"context"
	"fmt"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/session"
)

// SessionOp implements chat.Engine. It returns once the change is written.
func (e *Engine) SessionOp(ctx context.Context, user, conv string, op session.Op, args session.OpArgs) (store.SessionResult, error) {
	ctx, err := e.begin(ctx)
	if err != nil {
		return store.SessionResult{}, err
	}
	now := e.nowMS()
	c, _ := protocol.ParseConv(conv)
	ticks, err := e.ticksOf(ctx, conv)
	if err != nil {
		return store.SessionResult{}, fmt.Errorf("session op %s on %s for %s: %w", op, conv, user, err)
	}
	var res store.SessionResult
	var st session.State
	err = e.retryMissing(ctx, []need{{user, conv}}, func() error {
		return e.withUsers([]string{user}, func(u *userState) error {
			if ent := u.sessions[conv]; ent != nil && !ent.exists && c.Kind == protocol.ConvBiz {
				return store.ErrNotFound // a gateway exists once something is filed under it
			}
			var err error
			st, res.Changed, err = e.applyEffect(u, now, SessionEffect{Kind: effectOp, Conv: conv, Ticks: ticks, Op: op, Args: args})
			res.Cursor = u.clock
			return err
		})
	})
	if err == nil {
		err = e.flush.barrier(ctx)
	}
	if err == nil {
		res.Session, err = e.renderState(ctx, st, now)
	}
	if err != nil {
		return store.SessionResult{}, fmt.Errorf("session op %s on %s for %s: %w", op, conv, user, err)
	}
	return res, nil
}

// ticksOf returns a conversation's ticks as they are (zero for a gateway).
func (e *Engine) ticksOf(ctx context.Context, conv string) (protocol.Ticks, error) {
	if c, _ := protocol.ParseConv(conv); c.Kind == protocol.ConvBiz {
		return protocol.Ticks{}, nil
	}
	cs, err := e.peekConv(ctx, conv)
	if err != nil {
		return protocol.Ticks{}, err
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.ticks, nil
}

// renderState renders a session state an operation produced, with what it
// shows of its conversation as it is now.
func (e *Engine) renderState(ctx context.Context, st session.State, now int64) (protocol.Session, error) {
	row := store.SessionRow{State: st}
	if st.LastSeq > 0 {
		m, err := e.be.Message(ctx, st.LastConv, st.LastSeq)
		if err != nil {
			return protocol.Session{}, err
		}
		row.LastMsg = &m
	}
	c, _ := protocol.ParseConv(st.Conv)
	if c.Kind == protocol.ConvBiz {
		return render(row, now), nil
	}
	cs, err := e.peekConv(ctx, st.Conv)
	if err != nil {
		return protocol.Session{}, err
	}
	cs.mu.Lock()
	row.Title = cs.title
	_, member := cs.members[st.User]
	if cs.isGroup() && member {
		row.Members = cs.groupState().Members
	}
	cs.mu.Unlock()
	if cs.isGroup() && !member {
		// A user who left sees the group as it left it.
		rows, _, err := e.be.SessionPage(ctx, st.User, store.SyncQuery{Conv: st.Conv, Limit: 1, SkipTotal: true})
		if err != nil {
			return protocol.Session{}, err
		}
		if len(rows) == 1 {
			row.Title, row.Left = rows[0].Title, true
		}
	}
	return render(row, now), nil
}

// SetAccount implements chat.Engine.
func (e *Engine) SetAccount(ctx context.Context, user, category, subBiz string) error {
	return e.be.SetAccount(ctx, user, category, subBiz)
}

// Sync implements chat.Engine. Mutes that have expired are turned off
// first, as a change of their sessions, so that the totals are exact and
// every device learns it; the page is read once everything before it is
// written.
func (e *Engine) Sync(ctx context.Context, user string, q store.SyncQuery) (store.SyncPage, error) {
	if q.Limit <= 0 {
		return store.SyncPage{}, fmt.Errorf("sync of %s: limit %d must be positive", user, q.Limit)
	}
	if e.closed.Load() {
		return store.SyncPage{}, store.ErrClosed
	}
	// One reading of the clock: what expires and what is shown agree.
	now := e.nowMS()
	if err := e.flush.barrier(ctx); err != nil {
		return store.SyncPage{}, fmt.Errorf("sync of %s: %w", user, err)
	}
	if err := e.expireMutes(ctx, now, user); err != nil {
		return store.SyncPage{}, fmt.Errorf("sync of %s: %w", user, err)
	}
	rows, total, err := e.readPage(ctx, user, q)
	if err != nil {
		return store.SyncPage{}, fmt.Errorf("sync of %s: %w", user, err)
	}
	page := store.SyncPage{Sessions: []protocol.Session{}, Cursor: q.Since, TotalUnread: total}
	for _, row := range rows {
		if len(page.Sessions) == q.Limit {
			page.HasMore = true
			break
		}
		page.Sessions = append(page.Sessions, render(row, now))
		page.Cursor = row.State.ActiveTS
	}
	return page, nil
}

// pageRereads bounds how often an owner reads a sync page again because
// the user's sessions changed while it was read.
const pageRereads = 8

// readPage reads a page of user's sessions with its list's total once every
// row put before it is written. An owner (Options.Owners) may change the
// user's sessions while the backend reads them, and a backend that cannot
// read sessions in one snapshot (DynamoDB) could then show rows that
// disagree with the total: the page is read again until no change of the
// user's was made while it was read. An owner's total is its memory's (it
// is the truth of the users it owns), taken with the check that nothing
// changed, so the backend does not read it. A page still read with
// changes after pageRereads tries takes the backend's total, read beside
// the rows, or, when the page holds the whole list, the sum of its rows.
func (e *Engine) readPage(ctx context.Context, user string, q store.SyncQuery) ([]store.SessionRow, int64, error) {
	for try := 0; ; try++ {
		last := try == pageRereads
		q.SkipTotal = !last
		if q.SkipTotal {
			if err := e.loadUser(ctx, user); err != nil {
				return nil, 0, err
			}
		}
		// A change staged before the mark is written before the read.
		mark := e.users.stampNow(user)
		if err := e.flush.barrier(ctx); err != nil {
			return nil, 0, err
		}
		rows, total, err := e.be.SessionPage(ctx, user, q)
		switch {
		case err != nil:
			return rows, total, err
		case last && q.Conv == "" && q.Since == 0 && len(rows) <= q.Limit:
			return rows, contributions(rows), nil
		case last:
			return rows, total, nil
		}
		if total, changed, held := e.users.totalSince(user, q.SubBiz, mark); held && !changed {
			return rows, total, nil
		}
	}
}

// contributions sums what rows add to their list's unread total.
func contributions(rows []store.SessionRow) int64 {
	var sum int64
	for _, r := range rows {
		sum += r.State.UnreadContribution()
	}
	return sum
}

// expireMutes turns off user's mutes whose time is up, and waits for the
// change to be written; the caller holds the user's section (Sync).
func (e *Engine) expireMutes(ctx context.Context, now int64, user string) error {
	convs, err := e.be.TimedMutes(ctx, user, now)
	if err != nil || len(convs) == 0 {
		return err
	}
	ticks := make(map[string]protocol.Ticks, len(convs))
	for _, conv := range convs {
		if ticks[conv], err = e.ticksOf(ctx, conv); err != nil {
			return err
		}
	}
	err = e.retryMissing(ctx, sessionNeedsOf(user, convs), func() error {
		return e.withUsers([]string{user}, func(u *userState) error {
			for _, conv := range convs {
				// changeSession expires the mute; the effect itself changes nothing.
				if _, _, err := e.applyEffect(u, now, SessionEffect{Kind: effectExpire, Conv: conv, Ticks: ticks[conv]}); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	return e.flush.barrier(ctx)
}

// sessionNeedsOf names user's sessions of convs.
func sessionNeedsOf(user string, convs []string) []need {
	out := make([]need, len(convs))
	for i, c := range convs {
		out[i] = need{user, c}
	}
	return out
}

// render is the wire form of a session: every field present.
func render(row store.SessionRow, now int64) protocol.Session {
	st := row.State
	out := protocol.Session{
		Conv:         st.Conv,
		Members:      []string{},
		UnreadCount:  st.UnreadCount,
		ReadSeq:      st.ReadSeq,
		WriteSeq:     st.WriteSeq,
		ActiveTS:     st.ActiveTS,
		WriteTS:      st.WriteTS,
		Muted:        st.MutedAt(now),
		MuteUntil:    st.MuteUntil,
		Priority:     st.Priority,
		Deleted:      st.Deleted,
		MarkedUnread: st.MarkedUnread,
		Category:     st.Category,
		SubBiz:       st.SubBiz,
		Request:      st.Request,
		LastMsg:      row.LastMsg,
		// The conversation's ticks as far as the session holds: a message's
		// rise can reach a session a moment before the message does.
		Ticks: protocol.Ticks{DeliveredSeq: min(st.Ticks.DeliveredSeq, st.WriteSeq), ReadSeq: min(st.Ticks.ReadSeq, st.WriteSeq)},
	}
	if !out.Muted {
		out.MuteUntil = 0
	}
	c, _ := protocol.ParseConv(st.Conv)
	out.Kind = c.Kind.String()
	switch c.Kind {
	case protocol.ConvDirect:
		out.Title = c.Peer(st.User)
		out.Members = []string{c.A, c.B}
	case protocol.ConvGroup:
		out.Title = row.Title
		if !row.Left && row.Members != nil {
			out.Members = row.Members
		}
	case protocol.ConvBiz:
		out.Title = c.Name
	}
	return out
}
