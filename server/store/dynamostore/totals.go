package dynamostore

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/imcore/im/server/store"
	"github.com/imcore/im/session"
)

// A user's unread totals are not stored: each is the sum of its list's
// sessions (store.Derived's rule), summed where it is read. Written as
// rows of their own, a total and the session it moves are two items, and
// an owner killed between them would leave a total that no session
// explains, which the successor's repair cannot mend (a message derived
// again finds the session already holding it and adds nothing). Summed,
// a total always agrees with the sessions stored. An owner reads them
// once, when it takes the user (User), and keeps them in memory; a sync
// page's total comes from there too (store.SyncQuery.SkipTotal).

// contributionProjection reads the session attributes a total is summed
// from; contributionNames are its names, with the key condition's.
const contributionProjection = "#c, #n, #m, #d, #b, #a"

func contributionNames(keyNames map[string]string) map[string]string {
	names := map[string]string{"#c": aConv, "#n": aUnread, "#m": aMuted, "#d": aDeleted, "#b": aSubBiz, "#a": aActiveTS}
	maps.Copy(names, keyNames)
	return names
}

// User implements store.Backend: the user's sessions read once (the
// attributes a total is summed from), the clock their newest active_ts,
// the totals their contributions summed by list.
func (s *Backend) User(ctx context.Context, user string) (store.UserRecord, error) {
	if err := s.checkOpen(); err != nil {
		return store.UserRecord{}, err
	}
	items, err := s.query(ctx, &dynamodb.QueryInput{
		TableName:                 s.table(tSessions),
		KeyConditionExpression:    aws.String("#u = :u"),
		ProjectionExpression:      aws.String(contributionProjection),
		ExpressionAttributeNames:  contributionNames(map[string]string{"#u": aUser}),
		ExpressionAttributeValues: item{":u": strV(user)},
	}, 0)
	if err != nil {
		return store.UserRecord{}, fmt.Errorf("sessions of %s: %w", user, err)
	}
	rec := store.UserRecord{Totals: map[string]int64{}}
	for _, it := range items {
		st := sessionOf(it)
		rec.Clock = max(rec.Clock, st.ActiveTS)
		rec.Totals[st.SubBiz] += st.UnreadContribution()
	}
	return rec, nil
}

// listTotal sums the contributions of user's sessions filed in list (the
// by_list index: the list's rows only).
func (s *Backend) listTotal(ctx context.Context, user, list string) (int64, error) {
	items, err := s.query(ctx, &dynamodb.QueryInput{
		TableName: s.table(tSessions), IndexName: aws.String(ixByList),
		KeyConditionExpression:    aws.String("#u = :u AND begins_with(#l, :p)"),
		ProjectionExpression:      aws.String(contributionProjection),
		ExpressionAttributeNames:  contributionNames(map[string]string{"#u": aUser, "#l": aListActive}),
		ExpressionAttributeValues: item{":u": strV(user), ":p": strV(list + "#")},
	}, 0)
	if err != nil {
		return 0, fmt.Errorf("unread total of %s: %w", user, err)
	}
	var total int64
	for _, it := range items {
		st := sessionOf(it)
		total += st.UnreadContribution()
	}
	return total, nil
}

// userWrite is one user's sessions of an Apply, by ascending active_ts,
// and the epoch they are fenced by (see store.Derived.Fences).
type userWrite struct {
	user     string
	sessions []session.State
	fence    int64
}

// userWrites groups d's sessions by user, each user's in ascending
// active_ts: written in that order, a crash can leave a later session of
// a user written only with every earlier one, so the clock (the newest
// stored) never runs ahead of a session lost. d.Totals are not written
// (see above).
func userWrites(d store.Derived) []*userWrite {
	byUser := map[string]*userWrite{}
	var out []*userWrite
	for _, st := range d.Sessions {
		w := byUser[st.User]
		if w == nil {
			w = &userWrite{user: st.User, fence: d.Fences[st.User]}
			byUser[st.User] = w
			out = append(out, w)
		}
		w.sessions = append(w.sessions, st)
	}
	for _, w := range out {
		slices.SortStableFunc(w.sessions, func(a, b session.State) int { return cmp.Compare(a.ActiveTS, b.ActiveTS) })
	}
	return out
}

// writeUser writes w's sessions, one after another in ascending active_ts,
// each bounded by until as it is right before it (applySessionBy).
func (s *Backend) writeUser(ctx context.Context, w *userWrite, until func() time.Time) error {
	for _, st := range w.sessions {
		if err := s.applySessionBy(ctx, st, w.fence, until); err != nil {
			return err
		}
	}
	return nil
}

// applySessionBy is applySession bounded by until, asked right before
// the write (nil or zero: no bound): not one attempt after the holder
// stops trusting its lease.
func (s *Backend) applySessionBy(ctx context.Context, st session.State, fence int64, until func() time.Time) error {
	if until != nil {
		if t := until(); !t.IsZero() {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, t)
			defer cancel()
		}
	}
	return s.applySession(ctx, st, fence)
}
