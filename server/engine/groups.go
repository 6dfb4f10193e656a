package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// Group implements chat.Engine, from memory.
func (e *Engine) Group(ctx context.Context, conv string) (store.GroupState, error) {
	cs, err := e.group(ctx, conv)
	if err != nil {
		return store.GroupState{}, err
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if !cs.exists {
		return store.GroupState{Conv: conv}, store.ErrNotFound
	}
	return cs.groupState(), nil
}

// Membership implements chat.Engine, from memory.
func (e *Engine) Membership(ctx context.Context, conv, user string) (store.Membership, error) {
	cs, err := e.group(ctx, conv)
	if err != nil {
		return store.Membership{}, err
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	m := cs.members[user]
	if !cs.exists || m == nil {
		return store.Membership{}, store.ErrNotFound
	}
	return store.Membership{JoinedSeq: m.joined}, nil
}

// group returns the state of a group conversation id (ErrNotFound for any
// other id).
func (e *Engine) group(ctx context.Context, conv string) (*convState, error) {
	if e.closed.Load() {
		return nil, store.ErrClosed
	}
	if c, ok := protocol.ParseConv(conv); !ok || c.Kind != protocol.ConvGroup {
		return nil, store.ErrNotFound
	}
	cs, err := e.peekConv(ctx, conv)
	if err != nil {
		return nil, fmt.Errorf("group %s: %w", conv, err)
	}
	return cs, nil
}

// ChangeGroup implements chat.Engine: the change and its system message are
// recorded in one atomic step of the backend; what they imply for each
// member is derived as for any message.
func (e *Engine) ChangeGroup(ctx context.Context, req store.GroupChange) (store.GroupResult, error) {
	if _, err := e.begin(ctx); err != nil {
		return store.GroupResult{}, err
	}
	res, err := e.changeGroup(ctx, req)
	if err != nil {
		return store.GroupResult{}, fmt.Errorf("change group %s: %w", req.Conv, err)
	}
	return res, nil
}

func (e *Engine) changeGroup(ctx context.Context, req store.GroupChange) (store.GroupResult, error) {
	if e.closed.Load() {
		return store.GroupResult{}, store.ErrClosed
	}
	if c, ok := protocol.ParseConv(req.Conv); !ok || c.Kind != protocol.ConvGroup {
		return store.GroupResult{}, store.ErrNotFound
	}
	dctx := context.WithoutCancel(ctx)
	cs, err := e.convs.get(ctx, e.be, req.Conv)
	if err != nil {
		return store.GroupResult{}, err
	}
	cs.gate.Lock()
	defer cs.gate.Unlock()
	msg := req.Msg
	msg.Conv, msg.Kind, msg.ServerTS = req.Conv, protocol.KindSystem, e.nowMS()
	change := req
	change.Msg = msg
	// Checked against the group held here before the backend records it
	// (and checks it again, atomically); a create's group is the
	// backend's to find: a retried create returns it.
	var cur *store.GroupRecord
	if !req.Create {
		cs.mu.Lock()
		cur = cs.groupRecord()
		cs.mu.Unlock()
	}
	if err := store.CheckGroupChange(cur, change); err != nil {
		return store.GroupResult{}, err
	}
	rec, err := e.recordChange(ctx, cs, change)
	if err != nil {
		return store.GroupResult{}, err
	}
	if rec.Existing {
		return store.GroupResult{Group: rec.Group, Existing: true}, nil
	}
	// Recorded: its derivation goes to its end whatever the caller does.
	d, err := e.deriveChange(dctx, cs, change, rec.Msg)
	if err != nil {
		return store.GroupResult{}, err
	}
	e.derivedOnceWritten(cs, rec.Msg.Seq, d.pending)
	res := store.GroupResult{Group: rec.Group, Msg: rec.Msg, Cursors: map[string]int64{}}
	if d.rise != nil {
		res.Ticks = &d.rise.next
	}
	for u, clock := range d.clocks {
		res.Cursors[u] = clock
	}
	return res, nil
}

// recordChange records change at the seq this owner gives its system
// message, as it gives a message's (a create's is seq 1), with every
// append of the group held back by the caller: a seq another message
// holds (a node that lost the conversation wrote there) sends it to one
// above the newest stored, and a seq its write leaves unused goes to the
// next message.
func (e *Engine) recordChange(ctx context.Context, cs *convState, change store.GroupChange) (store.GroupRecordResult, error) {
	if change.Create {
		change.Msg.Seq = 1
		return e.be.ChangeGroup(ctx, change)
	}
	if err := e.loadRecent(ctx, cs); err != nil {
		return store.GroupRecordResult{}, err
	}
	for range maxSeqTries {
		cs.mu.Lock()
		change.Msg.Seq = cs.takeSeqAbove(0)
		cs.mu.Unlock()
		rec, err := e.be.ChangeGroup(ctx, change)
		if errors.Is(err, store.ErrSeqTaken) {
			if err := e.catchUp(ctx, cs); err != nil {
				return store.GroupRecordResult{}, err
			}
			continue
		}
		if err != nil || rec.Existing {
			cs.mu.Lock()
			cs.giveBack(change.Msg.Seq)
			cs.mu.Unlock()
		}
		return rec, err
	}
	return store.GroupRecordResult{}, fmt.Errorf("no free seq after %d tries", maxSeqTries)
}

// deriveChange applies a recorded group change — the members it removes
// keep their sessions as they were (with the title and ticks of when they
// left) and lose their boundaries and pending rows; the members it adds
// start with both boundaries at the seq before the message and nothing
// unread before it — and then derives its system message m like any
// message.
func (e *Engine) deriveChange(ctx context.Context, cs *convState, change store.GroupChange, m protocol.Message) (derivation, error) {
	before := m.Seq - 1
	now := e.nowMS()
	cs.mu.Lock()
	title, ticks := cs.title, cs.ticks
	cs.mu.Unlock()
	// The sessions first: of those leaving as they were, of those joining
	// with nothing unread before the message.
	effects := make([]Effect, 0, len(change.Remove)+len(change.Add))
	for _, u := range change.Remove {
		effects = append(effects, Effect{User: u, Now: now, SessionEffect: SessionEffect{Kind: effectLeave, Conv: cs.conv, Ticks: ticks}})
	}
	for _, u := range change.Add {
		effects = append(effects, Effect{User: u, Now: now, SessionEffect: SessionEffect{Kind: effectJoin, Conv: cs.conv, Ticks: ticks, Seq: before}})
	}
	results, pending, err := e.affect(ctx, effects)
	if err != nil {
		return derivation{}, err
	}
	left := map[string]int64{} // the clocks of those leaving, after it
	for _, u := range change.Remove {
		left[u] = results[u].Clock
	}
	d, err := e.deriveMessage(ctx, cs, m, func(cs *convState) {
		cs.exists = true
		for _, u := range change.Remove {
			mm := cs.members[u]
			delete(cs.members, u)
			wasPending := mm != nil && mm.pending
			e.flush.put(func(b *batch) {
				b.gone(u, cs.conv, m.Seq)
				if wasPending {
					b.clearPending(u, cs.conv, m.Seq)
				}
				b.formerView(store.FormerRow{User: u, Conv: cs.conv, Title: title})
			})
		}
		for _, u := range change.Add {
			cs.members[u] = &member{joined: m.Seq, delivered: before, read: before}
			e.flush.put(func(b *batch) {
				b.boundary(store.BoundaryRow{User: u, Conv: cs.conv, DeliveredSeq: before, ReadSeq: before, Join: true, JoinedSeq: m.Seq})
				b.formerView(store.FormerRow{User: u, Conv: cs.conv, Delete: true})
			})
		}
		if change.Title != "" {
			cs.title = change.Title
		}
		if change.ChangesMembers() {
			cs.version++
		}
		cs.resort()
	})
	if err != nil {
		return derivation{}, err
	}
	for u, clock := range left {
		if _, member := d.clocks[u]; !member {
			d.clocks[u] = clock
		}
	}
	d.pending = append(pending, d.pending...)
	return d, nil
}

// groupRecord is the group as held here, nil when it does not exist
// (cs.mu held).
func (cs *convState) groupRecord() *store.GroupRecord {
	if !cs.exists {
		return nil
	}
	members := make(map[string]int64, len(cs.members))
	for u, m := range cs.members {
		members[u] = m.joined
	}
	return &store.GroupRecord{Conv: cs.conv, Title: cs.title, Version: cs.version, Members: members}
}
