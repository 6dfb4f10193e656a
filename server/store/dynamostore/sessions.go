package dynamostore

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/session"
)

// Session attributes (besides the keys, active_ts and the ticks).
const (
	aReadSeq      = "read_seq"
	aWriteSeq     = "write_seq"
	aUnread       = "unread_count"
	aWriteTS      = "write_ts"
	aMuted        = "muted"
	aMuteUntil    = "mute_until"
	aPriority     = "priority"
	aDeleted      = "deleted"
	aMarkedUnread = "marked_unread"
	aLastConv     = "last_conv"
	aLastSeq      = "last_seq"
	aRequest      = "request"
)

// listActive is the sort key of the by_list index: the session's list,
// then its active_ts at a fixed width, so that one list's sessions changed
// after a cursor are one key range.
func listActive(subBiz string, activeTS int64) string {
	return fmt.Sprintf("%s#%020d", subBiz, max(activeTS, 0))
}

// sessionItem is st as stored.
func sessionItem(st session.State) item {
	it := item{
		aUser: strV(st.User), aConv: strV(st.Conv), aReadSeq: numV(st.ReadSeq), aWriteSeq: numV(st.WriteSeq),
		aUnread: numV(st.UnreadCount), aActiveTS: numV(st.ActiveTS), aWriteTS: numV(st.WriteTS),
		aMuted: boolV(st.Muted), aMuteUntil: numV(st.MuteUntil), aPriority: numV(st.Priority),
		aDeleted: boolV(st.Deleted), aMarkedUnread: boolV(st.MarkedUnread), aLastSeq: numV(st.LastSeq),
		aTickDeliv: numV(st.Ticks.DeliveredSeq), aTickRead: numV(st.Ticks.ReadSeq),
		aListActive: strV(listActive(st.SubBiz, st.ActiveTS)),
	}
	it.setStr(aCategory, st.Category)
	it.setStr(aSubBiz, st.SubBiz)
	it.setStr(aLastConv, st.LastConv)
	if st.Request {
		it[aRequest] = boolV(true)
	}
	if st.Muted && st.MuteUntil > 0 {
		it[aTimedMute] = numV(st.MuteUntil) // the sparse by_timed_mute index
	}
	return it
}

// sessionOf decodes a stored session.
func sessionOf(it item) session.State {
	return session.State{
		User: it.str(aUser), Conv: it.str(aConv), ReadSeq: it.num(aReadSeq), WriteSeq: it.num(aWriteSeq),
		UnreadCount: it.num(aUnread), ActiveTS: it.num(aActiveTS), WriteTS: it.num(aWriteTS),
		Muted: it.boolean(aMuted), MuteUntil: it.num(aMuteUntil), Priority: it.num(aPriority),
		Deleted: it.boolean(aDeleted), MarkedUnread: it.boolean(aMarkedUnread), Category: it.str(aCategory),
		SubBiz: it.str(aSubBiz), LastConv: it.str(aLastConv), LastSeq: it.num(aLastSeq),
		Ticks:   protocol.Ticks{DeliveredSeq: it.num(aTickDeliv), ReadSeq: it.num(aTickRead)},
		Request: it.boolean(aRequest),
	}
}

// TimedMutes implements store.Backend: the sparse by_timed_mute index.
func (s *Backend) TimedMutes(ctx context.Context, user string, now int64) ([]string, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	items, err := s.query(ctx, &dynamodb.QueryInput{
		TableName: s.table(tSessions), IndexName: aws.String(ixTimedMutes),
		KeyConditionExpression:    aws.String("#u = :u AND #t <= :now"),
		ExpressionAttributeNames:  map[string]string{"#u": aUser, "#t": aTimedMute},
		ExpressionAttributeValues: item{":u": strV(user), ":now": numV(now)},
	}, 0)
	if err != nil {
		return nil, fmt.Errorf("timed mutes of %s: %w", user, err)
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, it.str(aConv))
	}
	slices.Sort(out)
	return out, nil
}

// SessionPage implements store.Backend: the by_list index for the page (or
// the one session asked), then one batch read of what the rows show (last
// messages, conversations), and one of former-member views for the groups
// the user left, then, unless q.SkipTotal, the list's total summed from
// its sessions (totals.go). DynamoDB has no snapshot across items: each
// item is read consistently, the page as a whole is not one snapshot.
func (s *Backend) SessionPage(ctx context.Context, user string, q store.SyncQuery) ([]store.SessionRow, int64, error) {
	if err := s.checkOpen(); err != nil {
		return nil, 0, err
	}
	if q.Limit <= 0 {
		return nil, 0, fmt.Errorf("sessions of %s: limit %d must be positive", user, q.Limit)
	}
	var items []item
	if q.Conv != "" {
		it, err := s.getItem(ctx, tSessions, userConvKey(user, q.Conv))
		if err != nil {
			return nil, 0, err
		}
		if it != nil {
			items = append(items, it)
		}
	} else {
		var err error
		items, err = s.query(ctx, &dynamodb.QueryInput{
			TableName: s.table(tSessions), IndexName: aws.String(ixByList),
			KeyConditionExpression:   aws.String("#u = :u AND #l BETWEEN :lo AND :hi"),
			ExpressionAttributeNames: map[string]string{"#u": aUser, "#l": aListActive},
			ExpressionAttributeValues: item{":u": strV(user), ":lo": strV(listActive(q.SubBiz, q.Since+1)),
				":hi": strV(q.SubBiz + "#99999999999999999999")},
		}, q.Limit+1)
		if err != nil {
			return nil, 0, fmt.Errorf("sessions of %s: %w", user, err)
		}
	}
	states := make([]session.State, len(items))
	var keys []batchKey
	for i, it := range items {
		st := sessionOf(it)
		states[i] = st
		keys = append(keys, batchKey{table: tConvs, key: convKey(st.Conv), id: st.Conv})
		if st.LastSeq > 0 {
			keys = append(keys, batchKey{table: tMessages, key: msgKey(st.LastConv, st.LastSeq), id: seqID(st.LastConv, st.LastSeq)})
		}
	}
	got, err := s.batchGetByTable(ctx, keys)
	if err != nil {
		return nil, 0, fmt.Errorf("sessions of %s: %w", user, err)
	}
	rows := make([]store.SessionRow, len(states))
	var formerKeys []batchKey
	for i, st := range states {
		row := store.SessionRow{State: st}
		if m := got[tMessages][seqID(st.LastConv, st.LastSeq)]; m != nil && st.LastSeq > 0 {
			msgs, err := s.messagesOf(ctx, []item{m})
			if err != nil {
				return nil, 0, err
			}
			row.LastMsg = &msgs[0]
		}
		if c := got[tConvs][st.Conv]; c != nil {
			row.Title = c.str(aTitle)
			if protocol.ConvKind(c.num(aKind)) == protocol.ConvGroup {
				if _, in := c.numMap(aMembers)[user]; in {
					row.Members = groupState(st.Conv, c).Members
				} else {
					row.Left = true
					formerKeys = append(formerKeys, batchKey{table: tFormer, key: userConvKey(user, st.Conv), id: st.Conv})
				}
			}
		}
		rows[i] = row
	}
	if len(formerKeys) > 0 {
		former, err := s.batchGet(ctx, formerKeys)
		if err != nil {
			return nil, 0, fmt.Errorf("sessions of %s: %w", user, err)
		}
		for i := range rows {
			if f := former[rows[i].State.Conv]; f != nil && rows[i].Left {
				rows[i].Title = f.str(aTitle)
			}
		}
	}
	if q.SkipTotal {
		return rows, 0, nil
	}
	total, err := s.listTotal(ctx, user, q.SubBiz)
	if err != nil {
		return nil, 0, err
	}
	return rows, total, nil
}

// Pending implements store.Backend: the user's pending rows, then one
// batch read of their boundary rows and conversations.
func (s *Backend) Pending(ctx context.Context, user string) ([]store.PendingDelivery, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	items, err := s.query(ctx, &dynamodb.QueryInput{
		TableName:                 s.table(tPending),
		KeyConditionExpression:    aws.String("#u = :u"),
		ExpressionAttributeNames:  map[string]string{"#u": aReceiver},
		ExpressionAttributeValues: item{":u": strV(user)},
	}, 0)
	if err != nil {
		return nil, fmt.Errorf("pending rows of %s: %w", user, err)
	}
	var keys []batchKey
	for _, it := range items {
		conv := it.str(aConv)
		keys = append(keys, batchKey{table: tStatus, key: userConvKey(user, conv), id: conv},
			batchKey{table: tConvs, key: convKey(conv), id: conv})
	}
	got, err := s.batchGetByTable(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("pending rows of %s: %w", user, err)
	}
	var out []store.PendingDelivery
	for _, it := range items {
		conv := it.str(aConv)
		delivered := got[tStatus][conv].num(aDelivered)
		if d, _, ok := directBoundary(got[tConvs][conv], conv, user); ok {
			delivered = max(delivered, d)
		}
		out = append(out, store.PendingDelivery{Conv: conv, FirstUndelivered: it.num(aFirst),
			LastDeliveredSeq: delivered, NewestSeq: got[tConvs][conv].num(aMaxSeq)})
	}
	return out, nil
}

// Account implements store.Backend.
func (s *Backend) Account(ctx context.Context, user string) (string, string, error) {
	if err := s.checkOpen(); err != nil {
		return "", "", err
	}
	it, err := s.getItem(ctx, tUsers, userItemKey(user, "account"))
	if err != nil {
		return "", "", fmt.Errorf("account of %s: %w", user, err)
	}
	return it.str(aCategory), it.str(aSubBiz), nil
}

// SetAccount implements store.Backend.
func (s *Backend) SetAccount(ctx context.Context, user, category, subBiz string) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	it := userItemKey(user, "account")
	it.setStr(aCategory, category)
	it.setStr(aSubBiz, subBiz)
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: s.table(tUsers), Item: it}); err != nil {
		return fmt.Errorf("file the account of %s: %w", user, err)
	}
	return nil
}
