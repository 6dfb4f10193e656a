// Package tuitest provides a fake client for testing and demonstrating the
// terminal UI without a server: an in-memory implementation of the
// tui.Backend interface that records every request.
package tuitest

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/imcore/im/client"
	"github.com/imcore/im/protocol"
)

// Call is one recorded request to the fake.
type Call struct {
	Method   string
	Conv     string
	Seq      int64 // MarkRead's seq, LoadOlder's beforeSeq
	Op       string
	Until    int64
	Category string
	Body     string
	Title    string
	Members  []string // CreateGroup's members, GroupOp's users
	Key      string   // CreateGroup's key
	Target   string   // the msg_id a reply, edit, deletion or reaction acts on
	User     string   // the user Block and Unblock act on
	// Change is what ChangeSettings changes (WatchPresence's users are in
	// Members).
	Change protocol.SettingsChange
}

// String renders the call compactly for test failures.
func (c Call) String() string {
	switch c.Method {
	case "SessionOp":
		return fmt.Sprintf("SessionOp(%s, %s, %d, %q)", c.Conv, c.Op, c.Until, c.Category)
	case "CreateGroup":
		return fmt.Sprintf("CreateGroup(%q, %v)", c.Title, c.Members)
	case "GroupOp":
		return fmt.Sprintf("GroupOp(%s, %s, %v, %q)", c.Conv, c.Op, c.Members, c.Title)
	case "Send", "SaveDraft":
		return fmt.Sprintf("%s(%s, %q)", c.Method, c.Conv, c.Body)
	case "Reply", "Edit", "DeleteForEveryone", "React":
		return fmt.Sprintf("%s(%s, %s, %q)", c.Method, c.Conv, c.Target, c.Body)
	case "Block", "Unblock":
		return fmt.Sprintf("%s(%s)", c.Method, c.User)
	case "WatchPresence":
		return fmt.Sprintf("WatchPresence(%v)", c.Members)
	case "ChangeSettings":
		return "ChangeSettings(" + ChangeString(c.Change) + ")"
	}
	return fmt.Sprintf("%s(%s, %d)", c.Method, c.Conv, c.Seq)
}

// Fake is an in-memory engine. Its zero value is not usable; call NewFake.
// It is safe for concurrent use.
type Fake struct {
	mu       sync.Mutex
	events   chan client.Event
	user     string
	device   string
	server   string
	conn     client.Conn
	lists    map[string][]protocol.Session
	totals   map[string]int64
	msgs     map[string][]client.Message
	ticks    map[string]protocol.Ticks
	receipts map[string][]protocol.MemberReceipt
	drafts   map[string]string
	times    map[string][2]time.Time // conv/seq → delivered, read
	calls    []Call
	outSeq   int
	settings protocol.UserSettings
	presence map[string]presence

	// Now stamps messages sent through the fake. Default time.Now.
	Now func() time.Time
	// SendErr, if set, makes Send fail with it.
	SendErr error
	// OnLoadOlder, if set, runs (outside the lock) when LoadOlder is
	// called, e.g. to store a page and Emit MessagesChanged.
	OnLoadOlder func(conv string, beforeSeq int64)
}

// NewFake returns an online fake for user on device, "connected" to server.
func NewFake(user, device, server string) *Fake {
	return &Fake{
		events:   make(chan client.Event, 256),
		user:     user,
		device:   device,
		server:   server,
		conn:     client.Conn{State: client.Online},
		lists:    map[string][]protocol.Session{},
		totals:   map[string]int64{},
		msgs:     map[string][]client.Message{},
		ticks:    map[string]protocol.Ticks{},
		receipts: map[string][]protocol.MemberReceipt{},
		drafts:   map[string]string{},
		times:    map[string][2]time.Time{},
		settings: protocol.DefaultSettings(),
		presence: map[string]presence{},
		Now:      time.Now,
	}
}

// SortSessions orders sessions as the list shows them: priority desc,
// write_ts desc, conv asc; deleted sessions are dropped.
func SortSessions(in []protocol.Session) []protocol.Session {
	out := make([]protocol.Session, 0, len(in))
	for _, s := range in {
		if !s.Deleted {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Priority != b.Priority {
			return a.Priority > b.Priority
		}
		if a.WriteTS != b.WriteTS {
			return a.WriteTS > b.WriteTS
		}
		return a.Conv < b.Conv
	})
	return out
}

// SetSessions replaces the list of subBiz ("" is the main list); it is
// sorted and deleted sessions are hidden. The total unread is computed as
// the server does (muted sessions excluded).
func (f *Fake) SetSessions(subBiz string, sessions []protocol.Session) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var total int64
	for _, s := range sessions {
		if !s.Muted && !s.Deleted {
			total += s.UnreadCount
		}
	}
	f.lists[subBiz] = SortSessions(sessions)
	f.totals[subBiz] = total
}

// AddMessages stores messages of conv (kept in seq order, outbox last).
func (f *Fake) AddMessages(conv string, msgs ...client.Message) {
	f.mu.Lock()
	defer f.mu.Unlock()
	all := append(f.msgs[conv], msgs...)
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.Outbox != b.Outbox {
			return !a.Outbox
		}
		return a.Seq < b.Seq
	})
	f.msgs[conv] = all
}

// Store marks conv's outbox message msgID as stored with seq.
func (f *Fake) Store(conv, msgID string, seq int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.msgs[conv] {
		m := &f.msgs[conv][i]
		if m.MsgID == msgID {
			m.Outbox, m.Seq, m.ServerTS = false, seq, m.ClientTS
		}
	}
}

// SetConn sets the connection state Conn returns.
func (f *Fake) SetConn(c client.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.conn = c
}

// SetTicks sets conv's tick boundaries.
func (f *Fake) SetTicks(conv string, t protocol.Ticks) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ticks[conv] = t
}

// SetReceipts sets the answer of Receipts for conv.
func (f *Fake) SetReceipts(conv string, rs []protocol.MemberReceipt) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.receipts[conv] = rs
}

// Emit queues an event for the UI.
func (f *Fake) Emit(ev client.Event) { f.events <- ev }

// Calls returns the recorded requests, oldest first.
func (f *Fake) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.calls...)
}

// CallsOf returns the recorded requests of one method.
func (f *Fake) CallsOf(method string) []Call {
	var out []Call
	for _, c := range f.Calls() {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

func (f *Fake) record(c Call) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
}

// Events implements tui.Backend.
func (f *Fake) Events() <-chan client.Event { return f.events }

// Conn implements tui.Backend.
func (f *Fake) Conn() client.Conn {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.conn
}

// User implements tui.Backend.
func (f *Fake) User() string { return f.user }

// Device implements tui.Backend.
func (f *Fake) Device() string { return f.device }

// Server implements tui.Backend.
func (f *Fake) Server() string { return f.server }

// Sessions implements tui.Backend.
func (f *Fake) Sessions(subBiz string) ([]protocol.Session, int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]protocol.Session(nil), f.lists[subBiz]...), f.totals[subBiz], nil
}

// Messages implements tui.Backend.
func (f *Fake) Messages(conv string, beforeSeq int64, limit int) ([]client.Message, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var stored, outbox []client.Message
	for _, m := range f.msgs[conv] {
		switch {
		case m.IsRelation():
			// Shown in their targets, as the client does.
		case m.Outbox:
			if beforeSeq == 0 {
				outbox = append(outbox, m)
			}
		case beforeSeq == 0 || m.Seq < beforeSeq:
			stored = append(stored, m)
		}
	}
	if limit > 0 && len(stored) > limit {
		stored = stored[len(stored)-limit:]
	}
	out := append([]client.Message(nil), stored...)
	return append(out, outbox...), nil
}

// LoadOlder implements tui.Backend.
func (f *Fake) LoadOlder(conv string, beforeSeq int64) {
	f.record(Call{Method: "LoadOlder", Conv: conv, Seq: beforeSeq})
	if f.OnLoadOlder != nil {
		f.OnLoadOlder(conv, beforeSeq)
	}
}

// Send implements tui.Backend: the message goes to the outbox.
func (f *Fake) Send(conv, body string) (client.Message, error) {
	f.record(Call{Method: "Send", Conv: conv, Body: body})
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.SendErr != nil {
		return client.Message{}, f.SendErr
	}
	return f.queue(conv, body, 0), nil
}

// Reply implements tui.Backend: the reply goes to the outbox, naming the
// target's seq.
func (f *Fake) Reply(conv, targetID, body string) (client.Message, error) {
	f.record(Call{Method: "Reply", Conv: conv, Body: body, Target: targetID})
	f.mu.Lock()
	defer f.mu.Unlock()
	t, err := f.target(conv, targetID)
	if err != nil {
		return client.Message{}, err
	}
	return f.queue(conv, body, t.Seq), nil
}

// queue puts a message of the user's in the outbox of conv, a reply to
// seq replyTo (0: none); the caller holds the lock.
func (f *Fake) queue(conv, body string, replyTo int64) client.Message {
	f.outSeq++
	m := client.Message{Message: protocol.Message{
		Conv: conv, MsgID: fmt.Sprintf("out-%d", f.outSeq), From: f.user, Body: body,
		ClientTS: f.Now().UnixMilli(), ReplyTo: replyTo,
	}, Outbox: true}
	f.msgs[conv] = append(f.msgs[conv], m)
	return m
}

// Edit implements tui.Backend: the target shows the edit at once.
func (f *Fake) Edit(conv, targetID, body string) (client.Message, error) {
	f.record(Call{Method: "Edit", Conv: conv, Body: body, Target: targetID})
	return f.relate(conv, targetID, func(t *client.Message) { t.Body, t.EditedTS = body, f.Now().UnixMilli() })
}

// DeleteForEveryone implements tui.Backend: the target shows deleted at
// once.
func (f *Fake) DeleteForEveryone(conv, targetID string) (client.Message, error) {
	f.record(Call{Method: "DeleteForEveryone", Conv: conv, Target: targetID})
	return f.relate(conv, targetID, func(t *client.Message) { t.Body, t.Deleted = "", true })
}

// React implements tui.Backend: the user's reaction replaces the user's
// earlier one on the target at once; "" removes it.
func (f *Fake) React(conv, targetID, reaction string) (client.Message, error) {
	f.record(Call{Method: "React", Conv: conv, Body: reaction, Target: targetID})
	return f.relate(conv, targetID, func(t *client.Message) { t.SetReactions(SetReaction(t.ReactionList(), f.user, reaction)) })
}

// relate applies a relation of the user's to message targetID of conv.
func (f *Fake) relate(conv, targetID string, apply func(*client.Message)) (client.Message, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, err := f.target(conv, targetID)
	if err != nil {
		return client.Message{}, err
	}
	apply(t)
	return client.Message{Message: protocol.Message{Conv: conv, From: f.user}, Outbox: true}, nil
}

// target returns message targetID of conv, which a reply or a relation
// names, or the error the client gives (SendErr first); the caller holds
// the lock.
func (f *Fake) target(conv, targetID string) (*client.Message, error) {
	if f.SendErr != nil {
		return nil, f.SendErr
	}
	if t := f.find(conv, targetID); t != nil {
		return t, nil
	}
	return nil, client.ErrNoTarget
}

// find returns message msgID of conv; the caller holds the lock.
func (f *Fake) find(conv, msgID string) *client.Message {
	for i := range f.msgs[conv] {
		if f.msgs[conv][i].MsgID == msgID {
			return &f.msgs[conv][i]
		}
	}
	return nil
}

// SetReaction returns rs with user's reaction set to r (one per user, the
// new one last; "" removes it), as the client aggregates them.
func SetReaction(rs []protocol.Reaction, user, r string) []protocol.Reaction {
	var out []protocol.Reaction
	for _, x := range rs {
		users := slices.DeleteFunc(slices.Clone(x.Users), func(u string) bool { return u == user })
		if len(users) > 0 {
			out = append(out, protocol.Reaction{Body: x.Body, Users: users})
		}
	}
	if r == "" {
		return out
	}
	for i := range out {
		if out[i].Body == r {
			out[i].Users = append(out[i].Users, user)
			return out
		}
	}
	return append(out, protocol.Reaction{Body: r, Users: []string{user}})
}

// MessagesAt implements tui.Backend.
func (f *Fake) MessagesAt(conv string, seqs []int64) ([]client.Message, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []client.Message
	for _, m := range f.msgs[conv] {
		if m.Seq > 0 && slices.Contains(seqs, m.Seq) {
			out = append(out, m)
		}
	}
	return out, nil
}

// MarkRead implements tui.Backend.
func (f *Fake) MarkRead(conv string, seq int64) {
	f.record(Call{Method: "MarkRead", Conv: conv, Seq: seq})
}

// SessionOp implements tui.Backend.
func (f *Fake) SessionOp(conv, op string, until int64, category string) {
	f.record(Call{Method: "SessionOp", Conv: conv, Op: op, Until: until, Category: category})
}

// CreateGroup implements tui.Backend.
func (f *Fake) CreateGroup(key, title string, members []string) string {
	f.record(Call{Method: "CreateGroup", Title: title, Members: members, Key: key})
	return key
}

// GroupOp implements tui.Backend.
func (f *Fake) GroupOp(conv, op string, users []string, title string) {
	f.record(Call{Method: "GroupOp", Conv: conv, Op: op, Members: users, Title: title})
}

// Receipts implements tui.Backend.
func (f *Fake) Receipts(ctx context.Context, conv string) ([]protocol.MemberReceipt, error) {
	f.record(Call{Method: "Receipts", Conv: conv})
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]protocol.MemberReceipt(nil), f.receipts[conv]...), nil
}

// Reconnect implements tui.Backend.
func (f *Fake) Reconnect() { f.record(Call{Method: "Reconnect"}) }

// Typing implements tui.Backend.
func (f *Fake) Typing(conv string) { f.record(Call{Method: "Typing", Conv: conv}) }

// Ticks implements tui.Backend.
func (f *Fake) Ticks(conv string) protocol.Ticks {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ticks[conv]
}

// SetDrafts sets the drafts the fake keeps, as if saved before a restart.
func (f *Fake) SetDrafts(drafts map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drafts = maps.Clone(drafts)
}

// Drafts implements tui.Backend.
func (f *Fake) Drafts() (map[string]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.drafts), nil
}

// SaveDraft implements tui.Backend.
func (f *Fake) SaveDraft(conv, text string) {
	f.record(Call{Method: "SaveDraft", Conv: conv, Body: text})
	f.mu.Lock()
	defer f.mu.Unlock()
	if text == "" {
		delete(f.drafts, conv)
	} else {
		f.drafts[conv] = text
	}
}

// SearchMessages implements tui.Backend: stored messages of conv (""
// for every conversation) whose body holds query, ignoring case, newest
// first (across conversations, by server time).
func (f *Fake) SearchMessages(conv, query string, limit int) ([]client.Message, error) {
	f.record(Call{Method: "SearchMessages", Conv: conv, Body: query})
	f.mu.Lock()
	defer f.mu.Unlock()
	q := strings.ToLower(strings.TrimSpace(query))
	var out []client.Message
	for c, msgs := range f.msgs {
		if conv != "" && c != conv {
			continue
		}
		for i := len(msgs) - 1; i >= 0 && q != ""; i-- {
			if m := msgs[i]; !m.Outbox && m.Seq > 0 && strings.Contains(strings.ToLower(m.Body), q) {
				out = append(out, m)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b client.Message) int {
		return cmp.Or(cmp.Compare(b.ServerTS, a.ServerTS), strings.Compare(a.Conv, b.Conv), cmp.Compare(b.Seq, a.Seq))
	})
	return out[:min(len(out), limit)], nil
}

// SetTickTimes sets what TickTimes answers for message seq of conv.
func (f *Fake) SetTickTimes(conv string, seq int64, delivered, read time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.times[fmt.Sprintf("%s/%d", conv, seq)] = [2]time.Time{delivered, read}
}

// TickTimes implements tui.Backend.
func (f *Fake) TickTimes(conv string, seq int64) (delivered, read time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.times[fmt.Sprintf("%s/%d", conv, seq)]
	return t[0], t[1]
}
