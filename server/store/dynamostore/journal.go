package dynamostore

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/imcore/im/server/store"
	"github.com/imcore/im/session"
)

// A user's sessions and unread totals derive from one another (a total is
// the sum of its list's sessions), but Apply writes them item by item: a
// process killed in between would leave a total that no session explains,
// forever, and a clock read from a later session than one never written.
// So the rows of a user that Apply writes together are first put, whole,
// in a journal item of the user's in the users table; the rows follow,
// and the journal goes once they are written. User replays a journal it
// finds (every row is a merge, so replaying one already applied changes
// nothing) before it reads the clock and the totals.

// journalPrefix starts the sort key of a user's journal items:
// journal#<token>#<part>.
const journalPrefix = "journal#"

// journalPartBytes bounds one journal item's rows (DynamoDB's item limit
// is 400 KB); a larger journal is cut into parts that are replayed only
// all together.
const journalPartBytes = 300_000

// Journal attributes.
const (
	aJournalRows  = "rows"
	aJournalParts = "parts"
)

// userWrite is one user's sessions (by active_ts) and totals of an Apply,
// and the epoch they are fenced by (see store.Derived.Fences).
type userWrite struct {
	user     string
	sessions []session.State
	totals   []store.TotalRow
	fence    int64
}

// journalRows is what a journal holds.
type journalRows struct {
	Sessions []session.State  `json:"sessions,omitempty"`
	Totals   []store.TotalRow `json:"totals,omitempty"`
	Fence    int64            `json:"fence,omitempty"`
}

// userWrites groups d's sessions and totals by user, each user's sessions
// in ascending active_ts: written in that order, a crash can leave a
// later session of a user written only with every earlier one.
func userWrites(d store.Derived) []*userWrite {
	byUser := map[string]*userWrite{}
	var out []*userWrite
	get := func(u string) *userWrite {
		w := byUser[u]
		if w == nil {
			w = &userWrite{user: u}
			byUser[u] = w
			out = append(out, w)
		}
		return w
	}
	for _, st := range d.Sessions {
		w := get(st.User)
		w.sessions = append(w.sessions, st)
	}
	for _, t := range d.Totals {
		w := get(t.User)
		w.totals = append(w.totals, t)
	}
	for _, w := range out {
		w.fence = d.Fences[w.user]
		slices.SortStableFunc(w.sessions, func(a, b session.State) int { return cmp.Compare(a.ActiveTS, b.ActiveTS) })
	}
	return out
}

// needsJournal reports whether w's rows must be written as one: more than
// one row, and a total among them or several sessions.
func (w *userWrite) needsJournal() bool {
	return len(w.sessions)+len(w.totals) > 1
}

// journal is one user's journal as written: the keys of its parts.
type journal struct {
	user  string
	parts []string // sort keys
}

// putJournal writes w's rows to a journal of w.user and returns it.
func (s *Store) putJournal(ctx context.Context, w *userWrite) (journal, error) {
	data, err := json.Marshal(journalRows{Sessions: w.sessions, Totals: w.totals, Fence: w.fence})
	if err != nil {
		return journal{}, fmt.Errorf("journal of %s: %w", w.user, err)
	}
	token := make([]byte, 8)
	rand.Read(token)
	j := journal{user: w.user}
	chunks := chunk(string(data), journalPartBytes)
	for i, c := range chunks {
		sk := fmt.Sprintf("%s%s#%04d", journalPrefix, hex.EncodeToString(token), i)
		it := userItemKey(w.user, sk)
		it[aJournalRows], it[aJournalParts] = strV(c), numV(int64(len(chunks)))
		if _, err := s.put(ctx, tUsers, it, "", nil, nil); err != nil {
			return j, fmt.Errorf("journal of %s: %w", w.user, err)
		}
		j.parts = append(j.parts, sk)
	}
	return j, nil
}

// chunk cuts s into pieces of at most n bytes.
func chunk(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

// dropJournal deletes a journal's parts.
func (s *Store) dropJournal(ctx context.Context, j journal) error {
	for _, sk := range j.parts {
		if err := s.del(ctx, tUsers, userItemKey(j.user, sk), "", nil, nil); err != nil {
			return err
		}
	}
	return nil
}

// writeUser writes w's sessions in ascending active_ts, then its totals.
func (s *Store) writeUser(ctx context.Context, w *userWrite) error {
	for _, st := range w.sessions {
		if err := s.applySession(ctx, st, w.fence); err != nil {
			return err
		}
	}
	for _, t := range w.totals {
		if err := s.applyTotal(ctx, t, w.fence); err != nil {
			return err
		}
	}
	return nil
}

// replayJournals writes again the rows of the journals among a user's
// items (a writer died, or failed, before it finished them) and deletes
// them; a journal missing a part (its writer died while writing it, so
// none of its rows was written) is only deleted. It reports whether there
// was one.
func (s *Store) replayJournals(ctx context.Context, user string, items []item) (bool, error) {
	type parts struct {
		want int64
		keys []string
		text []string
	}
	byToken := map[string]*parts{}
	for _, it := range items {
		sk := it.str(aItem)
		rest, ok := strings.CutPrefix(sk, journalPrefix)
		if !ok {
			continue
		}
		token, _, _ := strings.Cut(rest, "#")
		p := byToken[token]
		if p == nil {
			p = &parts{want: it.num(aJournalParts)}
			byToken[token] = p
		}
		p.keys = append(p.keys, sk) // Query returns them in sort key order
		p.text = append(p.text, it.str(aJournalRows))
	}
	for _, p := range byToken {
		if int64(len(p.keys)) == p.want {
			var rows journalRows
			if err := json.Unmarshal([]byte(strings.Join(p.text, "")), &rows); err != nil {
				return true, fmt.Errorf("journal of %s: %w", user, err)
			}
			w := &userWrite{user: user, sessions: rows.Sessions, totals: rows.Totals, fence: rows.Fence}
			if err := s.writeUser(ctx, w); err != nil {
				return true, fmt.Errorf("replay the journal of %s: %w", user, err)
			}
		}
		if err := s.dropJournal(ctx, journal{user: user, parts: p.keys}); err != nil {
			return true, err
		}
	}
	return len(byToken) > 0, nil
}
