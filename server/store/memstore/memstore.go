// Package memstore is a store.Backend in memory: the same promises as the
// SQLite backend, kept in maps under one lock, lost with the process. It
// is the second backend that keeps the storage contract honest (both pass
// the conformance suites), and a fast one for tests. Reopen gives a new
// handle on the same data, as a restarted process would find a database.
package memstore

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/blob"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/session"
)

var _ store.Backend = (*Backend)(nil)

// Backend is a handle on in-memory data. Its methods are safe for concurrent
// use.
type Backend struct {
	d      *data
	closed atomic.Bool
}

// data is what the handles share.
type data struct {
	mu         sync.Mutex
	convs      map[string]*conv
	msgIDs     map[[2]string]int64 // (conv, msg_id) → seq
	members    map[string]map[string]int64
	changes    map[string]map[int64]store.GroupChange
	groupKeys  map[[2]string]string
	boundaries map[store.MemberKey]*boundary
	pending    map[store.MemberKey]int64
	sessions   map[store.MemberKey]session.State
	totals     map[[2]string]total
	former     map[store.MemberKey]store.FormerRow
	accounts   map[string][2]string
	people     map[string]store.Person
	blobs      blob.Store // archived bodies (see archive.go); nil when none
}

type conv struct {
	kind    protocol.ConvKind
	title   string
	version int64
	derived int64
	ticks   protocol.Ticks
	// msgs[i] is the message at seq i+1, or a hole (Seq 0) where the
	// owner gave a seq no message took (yet): len(msgs) is the max seq.
	msgs []protocol.Message
	// archived maps the seq of each message whose body was archived
	// (its Body in msgs emptied) to the body's blob key.
	archived map[int64]string
	// states holds, by seq, what relation entries made of their targets
	// (and the erased edit entries): see relations.go.
	states map[int64]*store.TargetState
	// reactions holds, by seq, the reactions standing on a target as a
	// read shows them (TargetState.ReactionList), aggregated when its
	// state changes rather than on every read.
	reactions map[int64][]protocol.Reaction
}

type boundary struct{ delivered, read, joined int64 }

type total struct{ value, at int64 }

// New returns an empty store.
func New() *Backend {
	return &Backend{d: &data{
		convs:      map[string]*conv{},
		msgIDs:     map[[2]string]int64{},
		members:    map[string]map[string]int64{},
		changes:    map[string]map[int64]store.GroupChange{},
		groupKeys:  map[[2]string]string{},
		boundaries: map[store.MemberKey]*boundary{},
		pending:    map[store.MemberKey]int64{},
		sessions:   map[store.MemberKey]session.State{},
		totals:     map[[2]string]total{},
		former:     map[store.MemberKey]store.FormerRow{},
		accounts:   map[string][2]string{},
		people:     map[string]store.Person{},
	}}
}

// Reopen returns a new handle on the same data, open whatever this one
// is: what a process restarted on the same database would find.
func (s *Backend) Reopen() *Backend { return &Backend{d: s.d} }

// Close implements store.Backend.
func (s *Backend) Close() error {
	s.closed.Store(true)
	return nil
}

// lock takes the data's lock, or reports the handle closed.
func (s *Backend) lock() (*data, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	s.d.mu.Lock()
	return s.d, nil
}

// Append implements store.Backend.
func (s *Backend) Append(ctx context.Context, m protocol.Message) (store.AppendResult, error) {
	m.Seq = 0
	return s.appendMsg(ctx, m)
}

// appendMsg stores m at m.Seq, or at the next seq when it is 0.
func (s *Backend) appendMsg(ctx context.Context, m protocol.Message) (store.AppendResult, error) {
	d, err := s.lock()
	if err != nil {
		return store.AppendResult{}, err
	}
	var res store.AppendResult
	var erased []string
	if m.IsRelation() && !d.hasMsgID(m) {
		// The entry and its effect on the target in one step.
		if err := d.targetExists(m); err != nil {
			d.mu.Unlock()
			return res, err
		}
	}
	res, err = d.append(m, false)
	var archived []archivedBody
	if err == nil && res.Duplicate {
		archived = d.archivedIn(&res.Msg, nil)
	}
	if err == nil && !res.Duplicate && m.IsRelation() {
		erased = d.applyRelation(res.Msg)
	}
	d.mu.Unlock()
	if err != nil {
		return res, err
	}
	if err := blob.Erase(ctx, d.blobs, erased); err != nil {
		return res, err
	}
	return res, d.loadBodies(ctx, archived)
}

func (d *data) append(m protocol.Message, system bool) (store.AppendResult, error) {
	if seq, ok := d.msgIDs[[2]string{m.Conv, m.MsgID}]; ok {
		if system {
			return store.AppendResult{}, fmt.Errorf("system message id %s is taken", m.MsgID)
		}
		orig := d.convs[m.Conv].view(seq)
		if orig.From != m.From {
			return store.AppendResult{}, store.ErrMsgIDTaken
		}
		return store.AppendResult{Msg: orig, Duplicate: true}, nil
	}
	c := d.convs[m.Conv]
	if c == nil {
		parsed, ok := protocol.ParseConv(m.Conv)
		if !ok || parsed.Kind != protocol.ConvDirect {
			return store.AppendResult{}, store.ErrNotFound
		}
		c = &conv{kind: parsed.Kind}
		d.convs[m.Conv] = c
	}
	if m.Seq == 0 {
		m.Seq = int64(len(c.msgs)) + 1
	} else if c.has(m.Seq) {
		return store.AppendResult{}, store.ErrSeqTaken
	}
	for int64(len(c.msgs)) < m.Seq {
		c.msgs = append(c.msgs, protocol.Message{})
	}
	c.msgs[m.Seq-1] = m
	d.msgIDs[[2]string{m.Conv, m.MsgID}] = m.Seq
	return store.AppendResult{Msg: m}, nil
}

// has reports whether a message holds seq.
func (c *conv) has(seq int64) bool {
	return seq >= 1 && seq <= int64(len(c.msgs)) && c.msgs[seq-1].Seq != 0
}

// AppendAt implements store.Backend: Append, at the seq m carries.
func (s *Backend) AppendAt(ctx context.Context, m protocol.Message, _ int64) (store.AppendResult, error) {
	if m.Seq <= 0 {
		return store.AppendResult{}, fmt.Errorf("append to %s: seq %d is not a seq", m.Conv, m.Seq)
	}
	return s.appendMsg(ctx, m)
}

// AppendWriters implements store.AppendWriters: appends cost nothing to
// wait for.
func (s *Backend) AppendWriters() int { return 256 }

// NewestSeq implements store.Backend.
func (s *Backend) NewestSeq(_ context.Context, convID string) (int64, error) {
	d, err := s.lock()
	if err != nil {
		return 0, err
	}
	defer d.mu.Unlock()
	if c := d.convs[convID]; c != nil {
		return int64(len(c.msgs)), nil
	}
	return 0, nil
}

// History implements store.Backend.
func (s *Backend) History(ctx context.Context, convID string, q store.HistoryQuery) ([]protocol.Message, bool, error) {
	if q.Limit <= 0 {
		return nil, false, fmt.Errorf("history of %s: limit %d must be positive", convID, q.Limit)
	}
	d, err := s.lock()
	if err != nil {
		return nil, false, err
	}
	c := d.convs[convID]
	if c == nil {
		d.mu.Unlock()
		return []protocol.Message{}, false, nil
	}
	// The candidates in the order they are read: from the bound asked
	// from, outwards.
	var cands []protocol.Message
	if q.After {
		for i := max(q.AfterSeq, q.MinSeq-1); i < int64(len(c.msgs)); i++ {
			if !c.has(i + 1) {
				continue
			}
			cands = append(cands, c.view(i+1))
			if len(cands) > q.Limit {
				break
			}
		}
	} else {
		top := int64(len(c.msgs))
		if q.BeforeSeq > 0 {
			top = min(top, q.BeforeSeq-1)
		}
		for seq := top; seq >= max(1, q.MinSeq); seq-- {
			if !c.has(seq) {
				continue
			}
			cands = append(cands, c.view(seq))
			if len(cands) > q.Limit {
				break
			}
		}
	}
	var archived []archivedBody
	for i := range cands {
		archived = d.archivedIn(&cands[i], archived)
	}
	d.mu.Unlock()
	if err := d.loadBodies(ctx, archived); err != nil {
		return nil, false, fmt.Errorf("history of %s: %w", convID, err)
	}
	out, cut := store.WithinBytes(cands, q.MaxBytes)
	hasMore := cut || len(out) > q.Limit
	if len(out) > q.Limit {
		out = out[:q.Limit]
	}
	if !q.After {
		slices.Reverse(out)
	}
	return out, hasMore, nil
}

// Message implements store.Backend.
func (s *Backend) Message(ctx context.Context, convID string, seq int64) (protocol.Message, error) {
	d, err := s.lock()
	if err != nil {
		return protocol.Message{}, err
	}
	c := d.convs[convID]
	if c == nil || !c.has(seq) {
		d.mu.Unlock()
		return protocol.Message{}, store.ErrNotFound
	}
	m := c.view(seq)
	archived := d.archivedIn(&m, nil)
	d.mu.Unlock()
	if err := d.loadBodies(ctx, archived); err != nil {
		return protocol.Message{}, err
	}
	return m, nil
}

// Senders implements store.Backend.
func (s *Backend) Senders(_ context.Context, convID string, after, upTo int64) ([]string, error) {
	d, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer d.mu.Unlock()
	c := d.convs[convID]
	var out []string
	if c == nil {
		return out, nil
	}
	for seq := max(after+1, 1); seq <= min(upTo, int64(len(c.msgs))); seq++ {
		if c.has(seq) {
			out = append(out, c.msgs[seq-1].From)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// Conversation implements store.Backend.
func (s *Backend) Conversation(_ context.Context, convID string) (store.ConvRecord, error) {
	d, err := s.lock()
	if err != nil {
		return store.ConvRecord{}, err
	}
	defer d.mu.Unlock()
	c := d.convs[convID]
	if c == nil {
		return store.ConvRecord{Conv: convID}, store.ErrNotFound
	}
	rec := store.ConvRecord{Conv: convID, Kind: c.kind, Title: c.title, Version: c.version,
		MaxSeq: int64(len(c.msgs)), DerivedSeq: c.derived, Ticks: c.ticks}
	parsed, _ := protocol.ParseConv(convID)
	users := map[string]int64{}
	if c.kind == protocol.ConvGroup {
		users = d.members[convID]
	} else {
		users[parsed.A], users[parsed.B] = 1, 1
	}
	for u, joined := range users {
		m := store.MemberRecord{User: u, JoinedSeq: joined}
		k := store.MemberKey{User: u, Conv: convID}
		if b := d.boundaries[k]; b != nil {
			m.DeliveredSeq, m.ReadSeq, m.HasBoundaries = b.delivered, b.read, true
		}
		if first, ok := d.pending[k]; ok {
			m.IsPending, m.FirstUndelivered = true, first
		}
		rec.Members = append(rec.Members, m)
	}
	slices.SortFunc(rec.Members, func(a, b store.MemberRecord) int { return cmp.Compare(a.User, b.User) })
	return rec, nil
}

// Unrepaired implements store.Backend.
func (s *Backend) Unrepaired(context.Context) ([]string, error) {
	d, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer d.mu.Unlock()
	var out []string
	for id, c := range d.convs {
		if c.derived < int64(len(c.msgs)) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out, nil
}

// ChangeGroup implements store.Backend: the change is checked and applied
// by store.ApplyGroupChange; under the lock, nothing is half done.
func (s *Backend) ChangeGroup(_ context.Context, ch store.GroupChange) (store.GroupRecordResult, error) {
	d, err := s.lock()
	if err != nil {
		return store.GroupRecordResult{}, err
	}
	defer d.mu.Unlock()
	if ch.Create && ch.Key != "" {
		if existing, ok := d.groupKeys[[2]string{ch.Creator, ch.Key}]; ok {
			return store.GroupRecordResult{Group: d.group(existing).State(), Existing: true}, nil
		}
	}
	c := d.convs[ch.Conv]
	if c != nil && c.kind != protocol.ConvGroup {
		return store.GroupRecordResult{}, store.ErrNotFound
	}
	var cur *store.GroupRecord
	seq := int64(1) // the seq its system message takes
	if c != nil {
		g := d.group(ch.Conv)
		cur, seq = &g, int64(len(c.msgs))+1
		if ch.Msg.Seq > 0 {
			seq = ch.Msg.Seq
		}
		if c.has(seq) {
			return store.GroupRecordResult{}, store.ErrSeqTaken
		}
	}
	ch.Msg.Seq = seq
	next, err := store.ApplyGroupChange(cur, ch, seq)
	if err != nil {
		return store.GroupRecordResult{}, err
	}
	if _, taken := d.msgIDs[[2]string{ch.Conv, ch.Msg.MsgID}]; taken {
		return store.GroupRecordResult{}, fmt.Errorf("system message id %s is taken", ch.Msg.MsgID)
	}
	// Checked: from here nothing fails, so nothing is half done.
	if c == nil {
		c = &conv{kind: protocol.ConvGroup}
		d.convs[ch.Conv] = c
	}
	if ch.Create && ch.Key != "" {
		d.groupKeys[[2]string{ch.Creator, ch.Key}] = ch.Conv
	}
	appended, err := d.append(ch.Msg, true)
	if err != nil {
		return store.GroupRecordResult{}, err
	}
	c.title, c.version = next.Title, next.Version
	d.members[ch.Conv] = next.Members
	if d.changes[ch.Conv] == nil {
		d.changes[ch.Conv] = map[int64]store.GroupChange{}
	}
	d.changes[ch.Conv][seq] = store.GroupChange{Conv: ch.Conv, Create: ch.Create, Title: ch.Title,
		Add: slices.Clone(ch.Add), Remove: slices.Clone(ch.Remove)}
	return store.GroupRecordResult{Group: next.State(), Msg: appended.Msg}, nil
}

// group is a group as recorded.
func (d *data) group(convID string) store.GroupRecord {
	c := d.convs[convID]
	return store.GroupRecord{Conv: convID, Title: c.title, Version: c.version, Members: maps.Clone(d.members[convID])}
}

// GroupChangeAt implements store.Backend.
func (s *Backend) GroupChangeAt(_ context.Context, convID string, seq int64) (store.GroupChange, error) {
	d, err := s.lock()
	if err != nil {
		return store.GroupChange{}, err
	}
	defer d.mu.Unlock()
	ch, ok := d.changes[convID][seq]
	if !ok {
		return store.GroupChange{}, store.ErrNotFound
	}
	ch.Add, ch.Remove = slices.Clone(ch.Add), slices.Clone(ch.Remove)
	return ch, nil
}

// Apply implements store.Backend, with the semantics of store.Derived.
func (s *Backend) Apply(_ context.Context, der store.Derived) error {
	d, err := s.lock()
	if err != nil {
		return err
	}
	defer d.mu.Unlock()
	for _, g := range der.Gone {
		k := store.MemberKey{User: g.User, Conv: g.Conv}
		if b := d.boundaries[k]; b != nil && b.joined < g.Before {
			delete(d.boundaries, k)
		}
	}
	for _, r := range der.Boundaries {
		k := store.MemberKey{User: r.User, Conv: r.Conv}
		b := d.boundaries[k]
		delivered := max(r.DeliveredSeq, r.ReadSeq)
		switch {
		case b == nil:
			d.boundaries[k] = &boundary{delivered: delivered, read: r.ReadSeq, joined: r.JoinedSeq}
		case r.Join && r.JoinedSeq > b.joined:
			*b = boundary{delivered: delivered, read: r.ReadSeq, joined: r.JoinedSeq}
		default:
			b.delivered, b.read = max(b.delivered, delivered), max(b.read, r.ReadSeq)
		}
	}
	for _, p := range der.Pending {
		k := store.MemberKey{User: p.User, Conv: p.Conv}
		if first, ok := d.pending[k]; ok && p.Clear > 0 && first <= p.Clear {
			delete(d.pending, k)
		}
		if _, ok := d.pending[k]; !ok && p.FirstUndelivered > 0 {
			d.pending[k] = p.FirstUndelivered
		}
	}
	for _, st := range der.Sessions {
		k := store.MemberKey{User: st.User, Conv: st.Conv}
		if old, ok := d.sessions[k]; ok {
			st = session.Merge(old, st)
		}
		d.sessions[k] = st
	}
	for _, t := range der.Totals {
		k := [2]string{t.User, t.List}
		if old, ok := d.totals[k]; !ok || t.At > old.at {
			d.totals[k] = total{value: t.Total, at: t.At}
		}
	}
	for _, cd := range der.Convs {
		if c := d.convs[cd.Conv]; c != nil {
			c.ticks = c.ticks.Merge(cd.Ticks)
			c.derived = max(c.derived, cd.DerivedSeq)
		}
	}
	for _, f := range der.Former {
		k := store.MemberKey{User: f.User, Conv: f.Conv}
		if f.Delete {
			delete(d.former, k)
		} else {
			d.former[k] = f
		}
	}
	return nil
}

// User implements store.Backend.
func (s *Backend) User(_ context.Context, user string) (store.UserRecord, error) {
	d, err := s.lock()
	if err != nil {
		return store.UserRecord{}, err
	}
	defer d.mu.Unlock()
	rec := store.UserRecord{Totals: map[string]int64{}}
	for k, st := range d.sessions {
		if k.User == user {
			rec.Clock = max(rec.Clock, st.ActiveTS)
		}
	}
	for k, t := range d.totals {
		if k[0] == user {
			rec.Totals[k[1]] = t.value
		}
	}
	return rec, nil
}

// Sessions implements store.Backend.
func (s *Backend) Sessions(_ context.Context, convID string, users []string) (map[string]session.State, error) {
	d, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer d.mu.Unlock()
	out := map[string]session.State{}
	for _, u := range users {
		if st, ok := d.sessions[store.MemberKey{User: u, Conv: convID}]; ok {
			out[u] = st
		}
	}
	return out, nil
}

// TimedMutes implements store.Backend.
func (s *Backend) TimedMutes(_ context.Context, user string, now int64) ([]string, error) {
	d, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer d.mu.Unlock()
	var out []string
	for k, st := range d.sessions {
		if k.User == user && st.Muted && st.MuteUntil > 0 && st.MuteUntil <= now {
			out = append(out, k.Conv)
		}
	}
	slices.Sort(out)
	return out, nil
}

// SessionPage implements store.Backend.
func (s *Backend) SessionPage(ctx context.Context, user string, q store.SyncQuery) ([]store.SessionRow, int64, error) {
	if q.Limit <= 0 {
		return nil, 0, fmt.Errorf("sessions of %s: limit %d must be positive", user, q.Limit)
	}
	d, err := s.lock()
	if err != nil {
		return nil, 0, err
	}
	var states []session.State
	for k, st := range d.sessions {
		if k.User != user {
			continue
		}
		if q.Conv != "" {
			if k.Conv == q.Conv {
				states = append(states, st)
			}
			continue
		}
		if st.SubBiz == q.SubBiz && st.ActiveTS > q.Since {
			states = append(states, st)
		}
	}
	slices.SortFunc(states, func(a, b session.State) int { return cmp.Compare(a.ActiveTS, b.ActiveTS) })
	states = states[:min(len(states), q.Limit+1)]
	rows := make([]store.SessionRow, 0, len(states))
	var archived []archivedBody
	for _, st := range states {
		row := d.row(st)
		if row.LastMsg != nil {
			archived = d.archivedIn(row.LastMsg, archived)
		}
		rows = append(rows, row)
	}
	total := d.totals[[2]string{user, q.SubBiz}].value
	d.mu.Unlock()
	if err := d.loadBodies(ctx, archived); err != nil {
		return nil, 0, fmt.Errorf("sessions of %s: %w", user, err)
	}
	return rows, total, nil
}

// row is a session with what it shows of its conversation.
func (d *data) row(st session.State) store.SessionRow {
	row := store.SessionRow{State: st}
	if st.LastSeq > 0 {
		if c := d.convs[st.LastConv]; c != nil && c.has(st.LastSeq) {
			m := c.view(st.LastSeq)
			row.LastMsg = &m
		}
	}
	c := d.convs[st.Conv]
	if c == nil {
		return row
	}
	row.Title = c.title
	if c.kind != protocol.ConvGroup {
		return row
	}
	if _, in := d.members[st.Conv][st.User]; in {
		row.Members = d.group(st.Conv).State().Members
		return row
	}
	row.Left = true
	if f, ok := d.former[store.MemberKey{User: st.User, Conv: st.Conv}]; ok {
		row.Title = f.Title
	}
	return row
}

// Pending implements store.Backend.
func (s *Backend) Pending(_ context.Context, user string) ([]store.PendingDelivery, error) {
	d, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer d.mu.Unlock()
	var out []store.PendingDelivery
	for k, first := range d.pending {
		if k.User != user {
			continue
		}
		p := store.PendingDelivery{Conv: k.Conv, FirstUndelivered: first}
		if b := d.boundaries[k]; b != nil {
			p.LastDeliveredSeq = b.delivered
		}
		if c := d.convs[k.Conv]; c != nil {
			p.NewestSeq = int64(len(c.msgs))
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b store.PendingDelivery) int { return cmp.Compare(a.Conv, b.Conv) })
	return out, nil
}

// Account implements store.Backend.
func (s *Backend) Account(_ context.Context, user string) (string, string, error) {
	d, err := s.lock()
	if err != nil {
		return "", "", err
	}
	defer d.mu.Unlock()
	a := d.accounts[user]
	return a[0], a[1], nil
}

// SetAccount implements store.Backend.
func (s *Backend) SetAccount(_ context.Context, user, category, subBiz string) error {
	d, err := s.lock()
	if err != nil {
		return err
	}
	defer d.mu.Unlock()
	d.accounts[user] = [2]string{category, subBiz}
	return nil
}
