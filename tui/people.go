package tui

import (
	"slices"
	"sort"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/protocol"
)

// people is what the UI knows of the users it shows (the peers of the
// direct chats in the lists, the members and senders of the open chat,
// the senders of the groups' last messages): their presence and display
// names as the client last told them, and the user's own settings. The
// root reads them from the backend after every change the client reports
// and when the users shown change; the panes read them when they draw.
type people struct {
	presence map[string]protocol.Presence // by user, as last read
	live     map[string]bool              // the presence is the server's, on this connection
	labels   map[string]string            // by user: how the UI names them
	settings protocol.UserSettings
	watched  []string // the watch list last given to the backend
	shown    []string // the users last read
}

func newPeople() *people {
	return &people{
		presence: map[string]protocol.Presence{}, live: map[string]bool{}, labels: map[string]string{},
		settings: protocol.DefaultSettings(),
	}
}

// label is how the UI names user: its display name; with the id beside
// it ("Bob (bob)") where two users shown share the name, or the name is
// another user's id; the id when it has none.
func (p *people) label(user string) string {
	if p == nil {
		return user
	}
	if l, ok := p.labels[user]; ok {
		return l
	}
	return user
}

// name is user's display name, "" for none known.
func (p *people) name(user string) string {
	if p == nil {
		return ""
	}
	return oneLine(p.presence[user].Name)
}

// blocked says the user blocked user.
func (p *people) blocked(user string) bool {
	return p != nil && slices.Contains(p.settings.Blocked, user)
}

// relabel names every user known, telling apart those whose names
// collide (me's id counts as taken); it reports whether a label changed.
func (p *people) relabel(me string) bool {
	byName := map[string]int{}
	ids := map[string]bool{strings.ToLower(me): true}
	for u, pr := range p.presence {
		ids[strings.ToLower(u)] = true
		if n := oneLine(pr.Name); n != "" {
			byName[strings.ToLower(n)]++
		}
	}
	labels := make(map[string]string, len(p.presence))
	for u, pr := range p.presence {
		n := oneLine(pr.Name)
		switch key := strings.ToLower(n); {
		case n == "" || n == u:
			labels[u] = u
		case byName[key] > 1 || (ids[key] && key != strings.ToLower(u)):
			labels[u] = n + " (" + u + ")"
		default:
			labels[u] = n
		}
	}
	changed := len(labels) != len(p.labels)
	for u, l := range labels {
		if p.labels[u] != l {
			changed = true
		}
	}
	p.labels = labels
	return changed
}

// peopleMsg carries what the backend knows of users, and the settings.
type peopleMsg struct {
	presence map[string]protocol.Presence
	live     map[string]bool
	settings protocol.UserSettings
}

// readPeople reads what the backend knows of users.
func readPeople(b Backend, users []string) tea.Cmd {
	users = slices.Clone(users)
	return func() tea.Msg {
		msg := peopleMsg{presence: make(map[string]protocol.Presence, len(users)), live: make(map[string]bool, len(users)),
			settings: b.Settings()}
		for _, u := range users {
			msg.presence[u], msg.live[u] = b.Presence(u)
		}
		return msg
	}
}

// apply takes in what was read; it reports whether a label changed.
func (p *people) apply(msg peopleMsg, me string) bool {
	for u, pr := range msg.presence {
		p.presence[u] = pr
		p.live[u] = msg.live[u]
	}
	p.settings = msg.settings
	return p.relabel(me)
}

// directPeer is the other member of direct chat s, "" for a chat that is
// none (a group, a business's list).
func directPeer(s *protocol.Session, me string) string {
	c, ok := protocol.ParseConv(s.Conv)
	if !ok || c.Kind != protocol.ConvDirect {
		return ""
	}
	if c.A == me {
		return c.B
	}
	return c.A
}

// chatTitle is how the UI names chat s: a direct chat by its peer's
// label, any other by its title.
func (c *common) chatTitle(s *protocol.Session) string {
	if peer := directPeer(s, c.me()); peer != "" && c.people.name(peer) != "" {
		return c.people.label(peer)
	}
	return sessionTitle(s)
}

// presenceText says what a direct chat's header shows of its peer:
// online, when last seen, or "" when it is not known (offline, hidden,
// never seen, or a user who may not be seen).
func presenceText(p protocol.Presence, live bool, now time.Time) string {
	switch {
	case !live:
		return ""
	case p.Online:
		return "online"
	case p.LastSeen > 0:
		return "last seen " + lastSeenWhen(p.LastSeen, now)
	}
	return ""
}

// lastSeenWhen says when ms was, for "last seen": today at 14:02,
// yesterday at 09:10, 12 Mar at 09:10, or 12 Mar 2025 in another year.
func lastSeenWhen(ms int64, now time.Time) string {
	t := msTime(ms, now.Location())
	switch {
	case sameDay(t, now):
		return "today at " + t.Format("15:04")
	case sameDay(t, now.AddDate(0, 0, -1)):
		return "yesterday at " + t.Format("15:04")
	case t.Year() == now.Year():
		return t.Format("2 Jan") + " at " + t.Format("15:04")
	}
	return t.Format("2 Jan 2006")
}

// onlineText says who of members (me left out) is online: "bob online",
// "bob, carol online", "3 online"; "" for nobody.
func (p *people) onlineText(members []string, me string) string {
	var on []string
	for _, u := range members {
		if u != me && p.live[u] && p.presence[u].Online {
			on = append(on, p.label(u))
		}
	}
	switch {
	case len(on) == 0:
		return ""
	case len(on) > 2:
		return itoa(int64(len(on))) + " online"
	}
	sort.Strings(on)
	return strings.Join(on, ", ") + " online"
}

// watchList is the users whose presence the UI asks for, most wanted
// first: the open chat's peer or members, then the peers of the direct
// chats in the lists loaded, in list order.
func (m *Model) watchList() []string {
	me := m.com.me()
	var out []string
	seen := map[string]bool{me: true}
	add := func(u string) {
		if u != "" && !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	if m.chat.isOpen() {
		s := m.chat.session()
		if isGroup(&s) {
			for _, u := range s.Members {
				add(u)
			}
		} else {
			add(directPeer(&s, me))
		}
	}
	for _, sb := range m.list.listOrder() {
		for i := range m.list.lists[sb] {
			add(directPeer(&m.list.lists[sb][i], me))
		}
	}
	return out
}

// shownUsers is every user the screen may name: the watch list, the
// senders of the groups' last messages and of the open chat's messages.
func (m *Model) shownUsers(watch []string) []string {
	out := slices.Clone(watch)
	seen := map[string]bool{m.com.me(): true}
	for _, u := range out {
		seen[u] = true
	}
	add := func(u string) {
		if u != "" && !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	for _, list := range m.list.lists {
		for i := range list {
			if lm := list[i].LastMsg; lm != nil && isGroup(&list[i]) {
				add(lm.From)
			}
		}
	}
	if c := m.chat.c; c != nil && c.group {
		for i := range c.msgs {
			add(c.msgs[i].From)
		}
	}
	return out
}

// followPeople gives the backend the watch list when it changed, and
// reads what is known of the users shown when they changed.
func (m *Model) followPeople() tea.Cmd {
	pp := m.com.people
	watch := m.watchList()
	var cmds []tea.Cmd
	if !slices.Equal(watch, pp.watched) {
		pp.watched = watch
		b, users := m.com.b, slices.Clone(watch)
		cmds = append(cmds, call(func() { b.WatchPresence(users) }))
	}
	if shown := m.shownUsers(watch); !sameSet(shown, pp.shown) {
		pp.shown = shown
		cmds = append(cmds, readPeople(m.com.b, shown))
	}
	return tea.Batch(cmds...)
}

// sameSet says a and b hold the same strings.
func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// onPeople applies what was read of the users shown: the open chat is
// drawn again when a name it shows changed.
func (m *Model) onPeople(msg peopleMsg) {
	if m.com.people.apply(msg, m.com.me()) && m.chat.isOpen() {
		m.chat.c.rebuild(m.com.renderCtx())
	}
}
