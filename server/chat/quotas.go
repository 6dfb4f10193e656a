package chat

import (
	"time"

	"golang.org/x/time/rate"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/ratelimit"
)

// Quotas bound what one user may make the server do, whatever its
// connections: groups are costly to create (a row per member, a session
// and a push to each), and typing fans out to every member.
type Quotas struct {
	// GroupCreates is how many groups one user may create per Window, in
	// a burst or spread out (0: no bound; likewise GroupChanges).
	GroupCreates int
	// GroupChanges is how many members one user may add or remove per
	// Window, over creations and ops together (a rename counts one).
	GroupChanges int
	// Window is the period of the group quotas; an hour when zero.
	Window time.Duration
	// TypingInterval is the least time between two typing indicators of
	// one user in one conversation that are relayed; those in between are
	// dropped (0: every one is relayed).
	TypingInterval time.Duration
}

// DefaultQuotas are what a person never meets: a hundred groups and ten
// thousand membership changes an hour, three typing indicators a second.
var DefaultQuotas = Quotas{GroupCreates: 100, GroupChanges: 10_000, Window: time.Hour, TypingInterval: 300 * time.Millisecond}

// quotaSets are the per-user buckets of Quotas.
type quotaSets struct {
	creates, changes *ratelimit.Set
	typing           *ratelimit.Set // per user and conversation
}

func newQuotaSets(q Quotas) quotaSets {
	if q.Window <= 0 {
		q.Window = time.Hour
	}
	return quotaSets{
		creates: perWindow(q.GroupCreates, q.Window),
		changes: perWindow(q.GroupChanges, q.Window),
		typing:  perWindow(1, q.TypingInterval),
	}
}

// perWindow is a bucket of n tokens refilled every window; n or window 0
// means no bound.
func perWindow(n int, window time.Duration) *ratelimit.Set {
	if n <= 0 || window <= 0 {
		return ratelimit.NewSet(rate.Inf, 0)
	}
	return ratelimit.NewSet(ratelimit.PerWindow(n, window), n)
}

// WithQuotas sets the service's quotas (DefaultQuotas until then) and
// returns it.
func (s *Service) WithQuotas(q Quotas) *Service {
	s.quotas = newQuotaSets(q)
	return s
}

// takeGroupQuota charges user for creating groups (creates) and changing
// members (changes). When either quota is spent it charges nothing and
// returns the rate_limited answer, with when to retry; otherwise undo gives
// the charge back (for a change that did not happen).
func (s *Service) takeGroupQuota(user string, creates, changes int) (undo func(), perr *protocol.Error) {
	undoCreates := func() {}
	if creates > 0 {
		ok, wait, undo := s.quotas.creates.Take(user, creates)
		if !ok {
			return nil, protocol.RateLimited(wait, "%s has created too many groups; try again in %v", user, roundUp(wait))
		}
		undoCreates = undo
	}
	if changes > 0 {
		ok, wait, undo := s.quotas.changes.Take(user, changes)
		if !ok {
			undoCreates()
			return nil, protocol.RateLimited(wait, "%s has changed too many group members; %d more are possible in %v", user, changes, roundUp(wait))
		}
		return func() { undoCreates(); undo() }, nil
	}
	return undoCreates, nil
}

// roundUp rounds a wait up to a whole second for people to read.
func roundUp(d time.Duration) time.Duration {
	return (d + time.Second - 1).Truncate(time.Second)
}
