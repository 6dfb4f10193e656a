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
	"slices"
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

// Elsewhere is the presence of the other nodes of a deployment of
// several (package relay keeps it in Redis, the node links carry the
// news).
type Elsewhere interface {
	// OnlineElsewhere reports which of users have a device on another
	// node.
	OnlineElsewhere(ctx context.Context, users []string) (map[string]bool, error)
	// Watch notes that a connection of this node watches user (on), or
	// that none does any more.
	Watch(ctx context.Context, user string, on bool) error
	// Tell tells the nodes watching user that its devices here came (its
	// first) or went (its last, at lastSeen).
	Tell(ctx context.Context, user string, online bool, lastSeen int64)
}

// LastSeenStore keeps when a user's last device went away.
type LastSeenStore interface {
	SetLastSeen(ctx context.Context, user string, at int64) error
}

// Config sets up a Tracker.
type Config struct {
	Viewer   Viewer
	LastSeen LastSeenStore
	// Elsewhere, on a node of several, is the other nodes' presence; nil
	// alone.
	Elsewhere Elsewhere
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
	lastSeen map[string]int64 // when a user's last device (here or, told, elsewhere) went away
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
	if first && t.cfg.Elsewhere != nil {
		// Not on the connection's way in: the watching nodes read the
		// state when they push, so the order of two tells matters not.
		go t.cfg.Elsewhere.Tell(context.Background(), user, true, 0)
	}
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
	if t.cfg.Elsewhere != nil {
		go t.cfg.Elsewhere.Tell(context.Background(), user, false, at)
	}
	for _, w := range watches {
		w.changed(user)
	}
}

// Told notes what another node told of user: its devices there came
// (online) or went (at lastSeen). The watches of user here learn it.
func (t *Tracker) Told(user string, online bool, lastSeen int64) {
	t.mu.Lock()
	if !online && lastSeen > t.lastSeen[user] {
		t.lastSeen[user] = lastSeen
	}
	watches := t.watchesOf(user, true)
	t.mu.Unlock()
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

// states returns the chat.PresenceState of users: connected here, or on
// another node (one round trip for them all).
func (t *Tracker) states(ctx context.Context, users []string) chat.PresenceState {
	t.mu.Lock()
	online := map[string]bool{}
	lastSeen := map[string]int64{}
	var ask []string
	for _, u := range users {
		if t.online[u] > 0 {
			online[u] = true
			continue
		}
		lastSeen[u] = t.lastSeen[u]
		ask = append(ask, u)
	}
	t.mu.Unlock()
	if t.cfg.Elsewhere != nil && len(ask) > 0 {
		elsewhere, err := t.cfg.Elsewhere.OnlineElsewhere(ctx, ask)
		if err != nil {
			t.cfg.Log.Warn("presence of the other nodes unread", "err", err)
		}
		for u := range elsewhere {
			online[u] = true
		}
	}
	return func(user string) (bool, int64) {
		if online[user] {
			return true, 0
		}
		return false, lastSeen[user]
	}
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
	timer    *time.Timer          // armed for timerAt while users wait
	timerAt  time.Time
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
	state := w.t.states(ctx, users)
	out := make([]protocol.Presence, 0, len(users))
	for _, u := range users {
		p, perr := w.t.cfg.Viewer.View(ctx, w.watcher, u, contacts, state)
		if perr != nil {
			return nil, perr
		}
		out = append(out, p)
	}
	w.t.mu.Lock()
	w.mu.Lock()
	// The users watched on this node before and after the change: the
	// other nodes are told of the difference alone.
	touched := append(slices.Clone(w.users), users...)
	before := map[string]bool{}
	for _, u := range touched {
		before[u] = len(w.t.watchers[u]) > 0
	}
	for _, u := range w.users {
		w.t.unwatch(u, w)
	}
	var unwatched, watched []string
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
	for u, was := range before {
		switch now := len(w.t.watchers[u]) > 0; {
		case now && !was:
			watched = append(watched, u)
		case was && !now:
			unwatched = append(unwatched, u)
		}
	}
	w.mu.Unlock()
	w.t.mu.Unlock()
	w.t.tellWatching(ctx, watched, unwatched)
	return out, nil
}

// tellWatching has the other nodes tell this one of the users watched
// here now, and no more of those watched no longer.
func (t *Tracker) tellWatching(ctx context.Context, watched, unwatched []string) {
	if t.cfg.Elsewhere == nil {
		return
	}
	for _, set := range []struct {
		users []string
		on    bool
	}{{watched, true}, {unwatched, false}} {
		for _, u := range set.users {
			if err := t.cfg.Elsewhere.Watch(ctx, u, set.on); err != nil {
				t.cfg.Log.Warn("watch not recorded", "user", u, "err", err)
			}
		}
	}
}

// Close ends the watch (the connection went away).
func (w *Watch) Close() {
	w.t.mu.Lock()
	w.mu.Lock()
	var unwatched []string
	for _, u := range w.users {
		if w.t.unwatch(u, w) {
			unwatched = append(unwatched, u)
		}
	}
	w.users, w.closed = nil, true
	if w.timer != nil {
		w.timer.Stop()
	}
	w.mu.Unlock()
	w.t.mu.Unlock()
	w.t.tellWatching(context.Background(), nil, unwatched)
}

// unwatch drops w from user's watches and reports whether none is left;
// t.mu is held.
func (t *Tracker) unwatch(user string, w *Watch) bool {
	if _, ok := t.watchers[user][w]; !ok {
		return false
	}
	delete(t.watchers[user], w)
	if len(t.watchers[user]) == 0 {
		delete(t.watchers, user)
		return true
	}
	return false
}

// changed notes a change of user: pushed now if its last push is an
// interval old, else once it is (a timer; nothing is scanned here, so a
// user flapping costs each watch a map write).
func (w *Watch) changed(user string) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.dirty[user] = true
	if due := w.lastPush[user].Add(w.t.cfg.Interval); time.Now().Before(due) {
		w.armLocked(due)
		w.mu.Unlock()
		return
	}
	w.mu.Unlock()
	w.flush()
}

// armLocked makes sure the timer fires by at; w.mu is held.
func (w *Watch) armLocked(at time.Time) {
	if w.timer != nil && !w.timerAt.After(at) {
		return
	}
	if w.timer != nil {
		w.timer.Stop()
	}
	w.timerAt = at
	w.timer = time.AfterFunc(time.Until(at), func() {
		w.mu.Lock()
		w.timer = nil
		w.mu.Unlock()
		w.flush()
	})
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
	if !next.IsZero() {
		w.armLocked(next)
	}
	contacts := w.contacts
	w.mu.Unlock()
	if len(due) == 0 {
		return
	}
	ctx := context.Background()
	state := w.t.states(ctx, due)
	views := make([]protocol.Presence, 0, len(due))
	for _, u := range due {
		p, perr := w.t.cfg.Viewer.View(ctx, w.watcher, u, contacts, state)
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
