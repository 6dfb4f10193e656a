package client

import (
	"slices"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/imcore/im/protocol"
)

// People: the user's settings and blocks, and the presence and names of
// the users a UI shows (PROTOCOL.md, "People: presence, settings, names
// and blocking").

// SettingsChanged reports the user's settings as they now stand: the
// answer to this device's change, block or unblock, the settings another
// device changed (pushed), or those read when a connection starts.
type SettingsChanged struct {
	Settings protocol.UserSettings
	// Op names the request of this device the change answers: "settings",
	// "block" or "unblock" (User is who was blocked or unblocked); "" for
	// a push or the read at the start of a connection.
	Op   string
	User string
}

// PresenceChanged reports that the presence (online, last seen, name) of
// Users changed: an answer to the watch list, or a push about one of it.
// Users is nil when anyone's may have: the connection ended, and with it
// what was known of who is online.
type PresenceChanged struct{ Users []string }

func (SettingsChanged) event() {}
func (PresenceChanged) event() {}

// presenceEntry is what the client knows of one user: its presence, and
// whether the server told it on the current connection (live). A name
// stays known across connections and restarts.
type presenceEntry struct {
	p    protocol.Presence
	live bool
}

// loadPeople reads the settings and names the profile kept.
func (c *Client) loadPeople() error {
	settings, _, err := c.store.Settings()
	if err != nil {
		return err
	}
	names, err := c.store.Names()
	if err != nil {
		return err
	}
	c.settings = settings
	c.presence = make(map[string]presenceEntry, len(names))
	for user, name := range names {
		c.presence[user] = presenceEntry{p: protocol.Presence{User: user, Name: name}}
	}
	return nil
}

// Settings returns the user's settings as last known: the server's, kept
// across restarts (the defaults before the server first gave them). It
// works offline.
func (c *Client) Settings() protocol.UserSettings {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.settings
	s.Blocked = slices.Clone(s.Blocked)
	return s
}

// Blocked returns the users the user blocked, sorted.
func (c *Client) Blocked() []string { return c.Settings().Blocked }

// ChangeSettings changes the keys change carries (the display name, last
// seen, read receipts). It goes out as soon as there is a connection; the
// server's answer is a SettingsChanged event with Op "settings", a
// refusal an ErrorEvent. A change the server's rules would refuse (a name
// too long or with control characters) is an ErrorEvent at once.
func (c *Client) ChangeSettings(change protocol.SettingsChange) {
	if change.Empty() {
		return
	}
	keys := map[string]any{}
	if change.LastSeen != nil {
		keys["last_seen"] = *change.LastSeen
	}
	if change.ReadReceipts != nil {
		keys["read_receipts"] = *change.ReadReceipts
	}
	if change.Name != nil {
		if !protocol.ValidName(*change.Name, protocol.DefaultMaxName) {
			c.events.push(ErrorEvent{Op: "settings", Err: protocol.Errorf(protocol.CodeInvalid,
				"a name is at most %d characters, without control characters", protocol.DefaultMaxName)})
			return
		}
		keys["name"] = *change.Name
	}
	raw, err := jsonv2.Marshal(keys)
	if err != nil {
		c.events.push(ErrorEvent{Op: "settings", Err: err})
		return
	}
	c.enqueue(&request{
		op:    "settings",
		frame: &protocol.SettingsRequest{Settings: jsontext.Value(raw)},
		retry: true, // the same keys set twice are set once
		answer: func(l *link, f protocol.Frame) {
			if r, ok := f.(*protocol.SettingsReply); ok {
				l.onSettings(r.Settings, "settings", "")
				return
			}
			c.events.push(ErrorEvent{Op: "settings", Err: c.refusal(f)})
		},
	})
}

// Block blocks user: the server then refuses that user's messages and
// typing in their direct chat. It goes out as soon as there is a
// connection; the answer is a SettingsChanged event with Op "block" and
// user in Blocked, a refusal an ErrorEvent.
func (c *Client) Block(user string) { c.blockOp("block", user) }

// Unblock lifts a block, as Block sets it (Op "unblock").
func (c *Client) Unblock(user string) { c.blockOp("unblock", user) }

// blockOp sends a block or an unblock of user.
func (c *Client) blockOp(op, user string) {
	if !protocol.ValidUser(user) || user == c.User() {
		c.events.push(ErrorEvent{Op: op, Err: protocol.Errorf(protocol.CodeInvalid, "cannot %s %q", op, user)})
		return
	}
	var frame protocol.Frame = &protocol.Block{User: user}
	if op == "unblock" {
		frame = &protocol.Unblock{User: user}
	}
	c.enqueue(&request{
		op:    op,
		frame: frame,
		retry: true, // blocking a blocked user changes nothing
		answer: func(l *link, f protocol.Frame) {
			if _, ok := f.(*protocol.OK); !ok {
				c.events.push(ErrorEvent{Op: op, Err: c.refusal(f)})
				return
			}
			s := c.Settings()
			s.Blocked = slices.DeleteFunc(s.Blocked, func(u string) bool { return u == user })
			if op == "block" {
				s.Blocked = append(s.Blocked, user)
				slices.Sort(s.Blocked)
			}
			l.onSettings(s, op, user)
			// What the user may see of the other changed both ways.
			l.watchSent = -1
			l.sendWatch()
		},
	})
}

// WatchPresence makes users the list whose presence the client follows:
// the users a UI shows (the peers of its direct chats, the members of
// the open group), most wanted first. The server is asked for them, on
// every connection, and tells their changes; each answer and push is a
// PresenceChanged event, and Presence reads the result. The user itself,
// repeats and ids that are no user ids are left out, and the list is cut
// to the server's limit. Asking for the list already watched does
// nothing.
func (c *Client) WatchPresence(users []string) {
	self := c.User()
	list := make([]string, 0, min(len(users), protocol.DefaultMaxPresenceUsers))
	for _, u := range users {
		if len(list) == protocol.DefaultMaxPresenceUsers {
			break
		}
		if u != self && protocol.ValidUser(u) && !slices.Contains(list, u) {
			list = append(list, u)
		}
	}
	c.mu.Lock()
	if slices.Equal(list, c.watch) {
		c.mu.Unlock()
		return
	}
	for _, u := range c.watch {
		if e, ok := c.presence[u]; ok && !slices.Contains(list, u) {
			// No longer told of: what is known goes stale.
			e.live = false
			c.presence[u] = e
		}
	}
	c.watch = list
	c.watchGen++
	c.mu.Unlock()
	c.wake()
}

// Presence returns what is known of user's presence: live is true when
// the server told it on the current connection, about a user watched (see
// WatchPresence); otherwise only the Name is known (kept across restarts),
// or nothing.
func (c *Client) Presence(user string) (p protocol.Presence, live bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.presence[user]
	if !ok {
		return protocol.Presence{User: user}, false
	}
	if !e.live {
		return protocol.Presence{User: user, Name: e.p.Name}, false
	}
	return e.p, true
}

// Name returns user's display name as last known, "" for none.
func (c *Client) Name(user string) string {
	p, _ := c.Presence(user)
	return p.Name
}

// onSettings keeps settings as the user's and reports them (op and user
// name the request of this device they answer, "" for none).
func (l *link) onSettings(s protocol.UserSettings, op, user string) {
	if s.Blocked == nil {
		s.Blocked = []string{}
	}
	c := l.c
	c.mu.Lock()
	c.settings = s
	c.mu.Unlock()
	if err := c.store.SetSettings(s); err != nil {
		c.log.Error("keep settings", "err", err)
	}
	c.events.push(SettingsChanged{Settings: s, Op: op, User: user})
}

// readSettings asks for the user's settings: at the start of a
// connection, for any change made while this device was away.
func (l *link) readSettings() {
	l.request(&request{op: "settings", frame: &protocol.SettingsRequest{}, answer: func(l *link, f protocol.Frame) {
		if r, ok := f.(*protocol.SettingsReply); ok {
			l.onSettings(r.Settings, "", "")
			return
		}
		l.peopleRefused("settings", f)
	}})
}

// sendWatch asks for the presence of the watch list when it changed since
// it was last sent on this connection.
func (l *link) sendWatch() {
	c := l.c
	c.mu.Lock()
	gen, users := c.watchGen, slices.Clone(c.watch)
	c.mu.Unlock()
	if gen == l.watchSent {
		return
	}
	l.watchSent = gen
	if gen == 0 {
		return // nothing was ever watched
	}
	l.request(&request{op: "presence", frame: &protocol.PresenceRequest{Users: users}, answer: func(l *link, f protocol.Frame) {
		if r, ok := f.(*protocol.PresenceReply); ok {
			l.onPresence(r.Users)
			return
		}
		l.peopleRefused("presence", f)
	}})
}

// recheckPresence asks the watch list's presence again when a message
// in one of convs, direct chats, may have made its peer visible: the
// server told the stranger's answer (nobody shares a conversation before
// its first message), and a conversation is shared now. Once per peer and
// connection: a peer who hides it answers the same.
func (l *link) recheckPresence(convs []string) {
	c, again := l.c, false
	c.mu.Lock()
	for _, conv := range convs {
		peer := directPeer(conv, l.self)
		e, ok := c.presence[peer]
		if peer == "" || !ok || !e.live || e.p != protocol.Stranger(peer) || l.rechecked[peer] || !slices.Contains(c.watch, peer) {
			continue
		}
		if l.rechecked == nil {
			l.rechecked = make(map[string]bool)
		}
		l.rechecked[peer], again = true, true
	}
	c.mu.Unlock()
	if again {
		l.watchSent = -1
		l.sendWatch()
	}
}

// directPeer is the other member of direct conversation conv, "" when
// conv is none.
func directPeer(conv, self string) string {
	parsed, ok := protocol.ParseConv(conv)
	if !ok || parsed.Kind != protocol.ConvDirect {
		return ""
	}
	if parsed.A == self {
		return parsed.B
	}
	return parsed.A
}

// peopleRefused reports a refusal of a request the client made by itself
// (the settings read, the watch list). A server that does not know the
// frame (bad_frame: one older than the people frames) is only logged:
// nothing the user did failed.
func (l *link) peopleRefused(op string, f protocol.Frame) {
	err := l.c.refusal(f)
	if perr := answerError(f); perr != nil && perr.Code == protocol.CodeBadFrame {
		l.c.log.Warn("the server does not know "+op, "err", err)
		return
	}
	l.c.log.Warn(op+" refused", "err", err)
	l.c.events.push(ErrorEvent{Op: op, Err: err})
}

// onPresence keeps the presence of users the server told and reports it;
// names that changed are kept in the store.
func (l *link) onPresence(ps []protocol.Presence) {
	if len(ps) == 0 {
		return
	}
	c := l.c
	names := map[string]string{}
	users := make([]string, 0, len(ps))
	c.mu.Lock()
	for _, p := range ps {
		old, ok := c.presence[p.User]
		if !ok || old.p.Name != p.Name {
			names[p.User] = p.Name
		}
		c.presence[p.User] = presenceEntry{p: p, live: true}
		users = append(users, p.User)
	}
	c.mu.Unlock()
	if err := c.store.SetNames(names); err != nil {
		c.log.Error("keep names", "err", err)
	}
	c.events.push(PresenceChanged{Users: users})
}

// endPresence forgets the presence the connection told: without it, no
// one is known to be online. Names stay.
func (c *Client) endPresence() {
	c.mu.Lock()
	for u, e := range c.presence {
		if e.live {
			c.presence[u] = presenceEntry{p: protocol.Presence{User: u, Name: e.p.Name}}
		}
	}
	c.mu.Unlock()
	c.events.push(PresenceChanged{})
}
