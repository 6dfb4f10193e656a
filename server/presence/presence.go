// Package presence tracks which users have a device connected and when
// their last one went away, and pushes the changes to the connections
// watching them (PROTOCOL.md, "Presence"): each connection's watch list,
// coalesced per watched user to at most one push per interval, the last
// change always delivered. A user nobody watches costs a counter per
// connect and disconnect, nothing more.
package presence

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/chat"
)

// DefaultInterval is the contract's coalescing interval.
const DefaultInterval = 2 * time.Second

// Viewer decides what a watcher may see (chat.Service).
type Viewer interface {
	Contacts(ctx context.Context, watcher string, users []string) (chat.Contacts, *protocol.Error)
	View(ctx context.Context, watcher, user string, contacts chat.Contacts, state chat.PresenceState) (protocol.Presence, *protocol.Error)
}

// LastSeenStore keeps when a user's last device went away.
type LastSeenStore interface {
	SetLastSeen(ctx context.Context, user string, at int64) error
}

// Config sets up a Tracker.
type Config struct {
	Viewer   Viewer
	LastSeen LastSeenStore
	// Interval is the coalescing interval; DefaultInterval when 0.
	Interval time.Duration
	// Now is the clock of last seen timestamps (the server's); time.Now
	// when nil. The interval is measured on the machine's clock.
	Now func() time.Time
	Log *slog.Logger
}

// Tracker is one node's presence: its connected users and the watches of
// its connections.
type Tracker struct {
	cfg Config

	mu       sync.Mutex
	online   map[string]int   // devices connected here, per user
	lastSeen map[string]int64 // when a user's last device here went away
	watchers map[string]map[*Watch]struct{}
}

// New returns a Tracker.
func New(cfg Config) *Tracker {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Tracker{cfg: cfg, online: map[string]int{}, lastSeen: map[string]int64{}, watchers: map[string]map[*Watch]struct{}{}}
}

// Connected notes a device of user connected (welcomed).
func (t *Tracker) Connected(user string) {
	t.mu.Lock()
	t.online[user]++
	first := t.online[user] == 1
	watches := t.watchesOf(user, first)
	t.mu.Unlock()
	for _, w := range watches {
		w.changed(user)
	}
}

// Disconnected notes a device of user went away; when it was the last,
// the user's last seen is now, recorded durably.
func (t *Tracker) Disconnected(user string) {
	t.mu.Lock()
	n := t.online[user] - 1
	if n > 0 {
		t.online[user] = n
		t.mu.Unlock()
		return
	}
	delete(t.online, user)
	at := t.cfg.Now().UnixMilli()
	t.lastSeen[user] = at
	watches := t.watchesOf(user, true)
	t.mu.Unlock()
	if t.cfg.LastSeen != nil {
		if err := t.cfg.LastSeen.SetLastSeen(context.Background(), user, at); err != nil {
			t.cfg.Log.Warn("recording last seen failed", "user", user, "err", err)
		}
	}
	for _, w := range watches {
		w.changed(user)
	}
}

// watchesOf returns the watches of user when changed; t.mu is held.
func (t *Tracker) watchesOf(user string, changed bool) []*Watch {
	if !changed || len(t.watchers[user]) == 0 {
		return nil
	}
	out := make([]*Watch, 0, len(t.watchers[user]))
	for w := range t.watchers[user] {
		out = append(out, w)
	}
	return out
}

// state is the chat.PresenceState of this node.
func (t *Tracker) state(user string) (bool, int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.online[user] > 0 {
		return true, 0
	}
	return false, t.lastSeen[user]
}

// Watch is one connection's watch list.
type Watch struct {
	t       *Tracker
	watcher string
	deliver func(frame []byte)

	// pushing orders the pushes: a push's views are read and delivered
	// under it, so that the last push delivered is the latest state.
	pushing sync.Mutex

	mu       sync.Mutex
	users    []string
	contacts chat.Contacts
	lastPush map[string]time.Time // when each watched user was last pushed
	dirty    map[string]bool      // changed since, waiting for the interval
	timer    *time.Timer
	closed   bool
}

// NewWatch returns an empty watch list of a connection of watcher; deliver
// sends a frame to the connection without blocking.
func (t *Tracker) NewWatch(watcher string, deliver func(frame []byte)) *Watch {
	return &Watch{t: t, watcher: watcher, deliver: deliver, lastPush: map[string]time.Time{}, dirty: map[string]bool{}}
}

// Set answers a presence request: users become the watch list (replacing
// the earlier one; none stops watching) and their presence is returned in
// the order asked.
func (w *Watch) Set(ctx context.Context, users []string) ([]protocol.Presence, *protocol.Error) {
	contacts, perr := w.t.cfg.Viewer.Contacts(ctx, w.watcher, users)
	if perr != nil {
		return nil, perr
	}
	out := make([]protocol.Presence, 0, len(users))
	for _, u := range users {
		p, perr := w.t.cfg.Viewer.View(ctx, w.watcher, u, contacts, w.t.state)
		if perr != nil {
			return nil, perr
		}
		out = append(out, p)
	}
	w.t.mu.Lock()
	w.mu.Lock()
	for _, u := range w.users {
		w.t.unwatch(u, w)
	}
	if !w.closed {
		for _, u := range users {
			if w.t.watchers[u] == nil {
				w.t.watchers[u] = map[*Watch]struct{}{}
			}
			w.t.watchers[u][w] = struct{}{}
		}
		w.users, w.contacts = users, contacts
		now := time.Now()
		clear(w.dirty)
		for _, u := range users {
			w.lastPush[u] = now // the answer counts as a push
		}
	}
	w.mu.Unlock()
	w.t.mu.Unlock()
	return out, nil
}

// Close ends the watch (the connection went away).
func (w *Watch) Close() {
	w.t.mu.Lock()
	w.mu.Lock()
	for _, u := range w.users {
		w.t.unwatch(u, w)
	}
	w.users, w.closed = nil, true
	if w.timer != nil {
		w.timer.Stop()
	}
	w.mu.Unlock()
	w.t.mu.Unlock()
}

// unwatch drops w from user's watches; t.mu is held.
func (t *Tracker) unwatch(user string, w *Watch) {
	delete(t.watchers[user], w)
	if len(t.watchers[user]) == 0 {
		delete(t.watchers, user)
	}
}

// changed notes a change of user: pushed now if its last push is an
// interval old, else once it is.
func (w *Watch) changed(user string) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.dirty[user] = true
	w.mu.Unlock()
	w.flush()
}

// flush pushes the dirty users whose interval has passed, in one frame,
// and arms the timer for the others.
func (w *Watch) flush() {
	w.pushing.Lock()
	defer w.pushing.Unlock()
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	now := time.Now()
	var due []string
	var next time.Time
	for u := range w.dirty {
		at := w.lastPush[u].Add(w.t.cfg.Interval)
		if !now.Before(at) {
			due = append(due, u)
			delete(w.dirty, u)
			w.lastPush[u] = now
			continue
		}
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	if !next.IsZero() && w.timer == nil {
		w.timer = time.AfterFunc(next.Sub(now), func() {
			w.mu.Lock()
			w.timer = nil
			w.mu.Unlock()
			w.flush()
		})
	}
	contacts := w.contacts
	w.mu.Unlock()
	if len(due) == 0 {
		return
	}
	ctx := context.Background()
	views := make([]protocol.Presence, 0, len(due))
	for _, u := range due {
		p, perr := w.t.cfg.Viewer.View(ctx, w.watcher, u, contacts, w.t.state)
		if perr != nil {
			w.t.cfg.Log.Warn("presence push failed", "watcher", w.watcher, "user", u, "err", perr.Message)
			continue
		}
		views = append(views, p)
	}
	if len(views) > 0 {
		w.deliver(protocol.MustEncode(&protocol.PresenceReply{Users: views}))
	}
}
