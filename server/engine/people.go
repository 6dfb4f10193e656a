package engine

import (
	"context"
	"slices"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// people holds users' settings and last seen (store.Person), read from
// the backend on first use and kept: the conversations' owners consult
// them on every read mark of a direct chat (are reads shown?) and every
// send there (is the sender blocked?). A user's settings change only at
// its owner (ChangeSettings), which has every other node forget them
// before the change is answered (Options.PeopleChanged), so that a block
// is in force everywhere once answered.
type people struct {
	mu sync.Mutex
	m  map[string]store.Person
	// changing serialises the changes of settings (rare): a change reads
	// the stored settings, applies itself and writes them back.
	changing sync.Mutex
}

func newPeople() *people { return &people{m: map[string]store.Person{}} }

// Person implements chat.Engine: user's settings and last seen, from
// memory once read.
func (e *Engine) Person(ctx context.Context, user string) (store.Person, error) {
	e.people.mu.Lock()
	p, ok := e.people.m[user]
	e.people.mu.Unlock()
	if ok {
		return p, nil
	}
	if e.closed.Load() {
		return store.Person{}, store.ErrClosed
	}
	p, err := e.be.Person(ctx, user)
	if err != nil {
		return store.Person{}, err
	}
	e.people.mu.Lock()
	if cur, ok := e.people.m[user]; ok {
		p = cur // a change landed meanwhile
	} else {
		e.people.m[user] = p
	}
	e.people.mu.Unlock()
	return p, nil
}

// peopleReads bounds the reads of People in flight at once.
const peopleReads = 32

// People implements chat.Engine: the settings and last seen of users,
// those not kept yet read concurrently (a group of 500 created at once
// reads its members' blocks in a few round trips, not 500 in a row).
func (e *Engine) People(ctx context.Context, users []string) (map[string]store.Person, error) {
	out := make(map[string]store.Person, len(users))
	var missing []string
	e.people.mu.Lock()
	for _, u := range users {
		if p, ok := e.people.m[u]; ok {
			out[u] = p
		} else {
			missing = append(missing, u)
		}
	}
	e.people.mu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	var (
		mu sync.Mutex
		g  errgroup.Group
	)
	g.SetLimit(peopleReads)
	for _, u := range missing {
		g.Go(func() error {
			p, err := e.Person(ctx, u)
			if err != nil {
				return err
			}
			mu.Lock()
			out[u] = p
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// ChangeSettings implements chat.Engine: change is applied to user's
// stored settings and the result written, then every other node forgets
// what it kept of them, before it returns. A change that changes nothing
// writes nothing. An error of change is returned as it is.
func (e *Engine) ChangeSettings(ctx context.Context, user string, change func(protocol.UserSettings) (protocol.UserSettings, error)) (protocol.UserSettings, error) {
	if _, err := e.begin(ctx); err != nil {
		return protocol.UserSettings{}, err
	}
	e.people.changing.Lock()
	defer e.people.changing.Unlock()
	// The stored settings, not the kept ones: another node may have
	// owned the user a moment ago.
	p, err := e.be.Person(ctx, user)
	if err != nil {
		return protocol.UserSettings{}, err
	}
	next, err := change(cloneSettings(p.Settings))
	if err != nil {
		return protocol.UserSettings{}, err
	}
	if !sameSettings(next, p.Settings) {
		if err := e.be.PutSettings(ctx, user, next); err != nil {
			return protocol.UserSettings{}, err
		}
	}
	p.Settings = next
	e.people.mu.Lock()
	e.people.m[user] = p
	e.people.mu.Unlock()
	if e.peopleChanged != nil {
		if err := e.peopleChanged(ctx, user); err != nil {
			return protocol.UserSettings{}, err
		}
	}
	return cloneSettings(next), nil
}

// SetLastSeen implements chat.Engine: it records when user's last device
// went away.
func (e *Engine) SetLastSeen(ctx context.Context, user string, at int64) error {
	if _, err := e.begin(ctx); err != nil {
		return err
	}
	if err := e.be.PutLastSeen(ctx, user, at); err != nil {
		return err
	}
	e.people.mu.Lock()
	if p, ok := e.people.m[user]; ok {
		p.LastSeen = at
		e.people.m[user] = p
	}
	e.people.mu.Unlock()
	return nil
}

// ForgetPerson drops what the engine kept of user's settings: another
// node changed them.
func (e *Engine) ForgetPerson(user string) {
	e.people.mu.Lock()
	delete(e.people.m, user)
	e.people.mu.Unlock()
}

// forgetPeople drops every user's kept settings: shards moved, and a
// node that missed a change while it could not be reached (paused past
// its lease) reads them again.
func (e *Engine) forgetPeople() {
	e.people.mu.Lock()
	clear(e.people.m)
	e.people.mu.Unlock()
}

// readsShown reports whether the reads of direct chat conv are shown:
// both members have read receipts on.
func (e *Engine) readsShown(ctx context.Context, conv string) (bool, error) {
	c, ok := protocol.ParseConv(conv)
	if !ok || c.Kind != protocol.ConvDirect {
		return true, nil
	}
	for _, u := range []string{c.A, c.B} {
		p, err := e.Person(ctx, u)
		if err != nil {
			return false, err
		}
		if !p.Settings.ReadReceipts {
			return false, nil
		}
	}
	return true, nil
}

func cloneSettings(s protocol.UserSettings) protocol.UserSettings {
	s.Blocked = slices.Clone(s.Blocked)
	if s.Blocked == nil {
		s.Blocked = []string{}
	}
	return s
}

func sameSettings(a, b protocol.UserSettings) bool {
	return a.LastSeen == b.LastSeen && a.ReadReceipts == b.ReadReceipts && a.Name == b.Name && slices.Equal(a.Blocked, b.Blocked)
}

// HasMessages implements chat.Engine: whether conv holds a message.
func (e *Engine) HasMessages(ctx context.Context, conv string) (bool, error) {
	cs, err := e.peekConv(ctx, conv)
	if err != nil {
		return false, err
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.exists && cs.maxSeq > 0, nil
}

// coMembersPage is how many sessions one read of CoMembers takes.
const coMembersPage = 1000

// CoMembers implements chat.Engine: the members of every group user is a
// member of, read from the backend once the user's rows put on this node
// are written (on another node's, a group joined a moment ago may show at
// the next read). It changes nothing, so any node may ask it of any user.
func (e *Engine) CoMembers(ctx context.Context, user string) (map[string]bool, error) {
	if e.closed.Load() {
		return nil, store.ErrClosed
	}
	// The user's rows put here written first (its owner's, when this is
	// its owner): a group just joined shows.
	if err := e.flush.barrierOf(ctx, func(string) bool { return false }, func(u string) bool { return u == user }); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	q := store.SyncQuery{Limit: coMembersPage, SkipTotal: true}
	for {
		rows, _, err := e.be.SessionPage(ctx, user, q)
		if err != nil {
			return nil, err
		}
		for i, row := range rows {
			if i == coMembersPage {
				break
			}
			if !row.Left {
				for _, m := range row.Members {
					out[m] = true
				}
			}
			q.Since = row.State.ActiveTS
		}
		if len(rows) <= coMembersPage {
			return out, nil
		}
	}
}
