package tuitest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/imcore/im/protocol"
)

// presence is what the fake knows of one user.
type presence struct {
	p    protocol.Presence
	live bool
}

// SetSettings sets the user's settings Settings returns.
func (f *Fake) SetSettings(s protocol.UserSettings) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s.Blocked == nil {
		s.Blocked = []string{}
	}
	f.settings = s
}

// SetPresence sets what Presence answers for p.User: live says the server
// told it (else only the name is known).
func (f *Fake) SetPresence(p protocol.Presence, live bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.presence[p.User] = presence{p: p, live: live}
}

// SetNames gives users display names (user → name), known but not live,
// as a client that kept them from an earlier run.
func (f *Fake) SetNames(names map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for u, n := range names {
		e := f.presence[u]
		e.p.User, e.p.Name = u, n
		f.presence[u] = e
	}
}

// Settings implements tui.Backend.
func (f *Fake) Settings() protocol.UserSettings {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.settings
	s.Blocked = slices.Clone(s.Blocked)
	return s
}

// ChangeSettings implements tui.Backend: the change is recorded and
// applied at once; no event follows (a test emits SettingsChanged).
func (f *Fake) ChangeSettings(change protocol.SettingsChange) {
	f.record(Call{Method: "ChangeSettings", Change: change})
	f.mu.Lock()
	defer f.mu.Unlock()
	f.settings = change.Apply(f.settings)
}

// Block implements tui.Backend: recorded and applied at once.
func (f *Fake) Block(user string) {
	f.record(Call{Method: "Block", User: user})
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Contains(f.settings.Blocked, user) {
		f.settings.Blocked = append(f.settings.Blocked, user)
		slices.Sort(f.settings.Blocked)
	}
}

// Unblock implements tui.Backend: recorded and applied at once.
func (f *Fake) Unblock(user string) {
	f.record(Call{Method: "Unblock", User: user})
	f.mu.Lock()
	defer f.mu.Unlock()
	f.settings.Blocked = slices.DeleteFunc(f.settings.Blocked, func(u string) bool { return u == user })
}

// WatchPresence implements tui.Backend: recorded, users in Members.
func (f *Fake) WatchPresence(users []string) {
	f.record(Call{Method: "WatchPresence", Members: slices.Clone(users)})
}

// Presence implements tui.Backend.
func (f *Fake) Presence(user string) (protocol.Presence, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.presence[user]
	if !ok {
		return protocol.Presence{User: user}, false
	}
	if !e.live {
		return protocol.Presence{User: user, Name: e.p.Name}, false
	}
	return e.p, true
}

// Watched returns the users of the last WatchPresence call.
func (f *Fake) Watched() []string {
	calls := f.CallsOf("WatchPresence")
	if len(calls) == 0 {
		return nil
	}
	return calls[len(calls)-1].Members
}

// ChangeString renders a settings change compactly: the keys it carries.
func ChangeString(c protocol.SettingsChange) string {
	var parts []string
	if c.Name != nil {
		parts = append(parts, fmt.Sprintf("name=%q", *c.Name))
	}
	if c.LastSeen != nil {
		parts = append(parts, "last_seen="+*c.LastSeen)
	}
	if c.ReadReceipts != nil {
		parts = append(parts, fmt.Sprintf("read_receipts=%v", *c.ReadReceipts))
	}
	return strings.Join(parts, " ")
}
