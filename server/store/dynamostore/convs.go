package dynamostore

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/session"
)

// Conversation implements store.Backend: the conversation's item (a group
// change cut short is finished first; a direct chat's boundaries are on
// it), then its members' boundary and pending rows in one batch read.
func (s *Backend) Conversation(ctx context.Context, conv string) (store.ConvRecord, error) {
	if err := s.checkOpen(); err != nil {
		return store.ConvRecord{}, err
	}
	c, err := s.convItem(ctx, conv)
	if err != nil {
		return store.ConvRecord{}, err
	}
	if c == nil {
		return store.ConvRecord{Conv: conv}, store.ErrNotFound
	}
	rec := store.ConvRecord{
		Conv: conv, Kind: protocol.ConvKind(c.num(aKind)), Title: c.str(aTitle), Version: c.num(aVersion),
		MaxSeq: c.num(aMaxSeq), DerivedSeq: c.num(aDerivedSeq),
		Ticks: protocol.Ticks{DeliveredSeq: c.num(aTickDeliv), ReadSeq: c.num(aTickRead)},
	}
	var keys []batchKey
	for user, joined := range membersOf(conv, c) {
		rec.Members = append(rec.Members, store.MemberRecord{User: user, JoinedSeq: joined})
		keys = append(keys, batchKey{table: tStatus, key: userConvKey(user, conv), id: user},
			batchKey{table: tPending, key: pendingKey(user, conv), id: user})
	}
	slices.SortFunc(rec.Members, func(a, b store.MemberRecord) int { return cmp.Compare(a.User, b.User) })
	rows, err := s.batchGetByTable(ctx, keys)
	if err != nil {
		return store.ConvRecord{}, fmt.Errorf("members of %s: %w", conv, err)
	}
	for i := range rec.Members {
		m := &rec.Members[i]
		if st := rows[tStatus][m.User]; st != nil {
			m.DeliveredSeq, m.ReadSeq, m.HasBoundaries = st.num(aDelivered), st.num(aRead), true
		}
		if d, r, ok := directBoundary(c, conv, m.User); ok {
			m.DeliveredSeq, m.ReadSeq, m.HasBoundaries = max(m.DeliveredSeq, d), max(m.ReadSeq, r), true
		}
		if p := rows[tPending][m.User]; p != nil {
			m.IsPending, m.FirstUndelivered = true, p.num(aFirst)
		}
	}
	return rec, nil
}

// batchGetByTable is batchGet with its results by table, then id.
func (s *Backend) batchGetByTable(ctx context.Context, keys []batchKey) (map[string]map[string]item, error) {
	scoped := make([]batchKey, len(keys))
	for i, k := range keys {
		scoped[i] = batchKey{table: k.table, key: k.key, id: k.table + "\x00" + k.id}
	}
	got, err := s.batchGet(ctx, scoped)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]item{}
	for _, k := range keys {
		if it, ok := got[k.table+"\x00"+k.id]; ok {
			if out[k.table] == nil {
				out[k.table] = map[string]item{}
			}
			out[k.table][k.id] = it
		}
	}
	return out, nil
}

// convItem reads conv's item, finishing a group change cut short first;
// nil when the conversation does not exist.
func (s *Backend) convItem(ctx context.Context, conv string) (item, error) {
	c, err := s.getItem(ctx, tConvs, convKey(conv))
	if err != nil || c == nil || !c.has(aPendingCh) {
		return c, err
	}
	if err := s.completeChange(ctx, conv, c.str(aPendingCh)); err != nil {
		return nil, err
	}
	return s.getItem(ctx, tConvs, convKey(conv))
}

// membersOf returns a conversation's members with their joined seqs: a
// group's from its item, a direct chat's two users (joined at 1).
func membersOf(conv string, c item) map[string]int64 {
	if protocol.ConvKind(c.num(aKind)) == protocol.ConvGroup {
		return c.numMap(aMembers)
	}
	parsed, _ := protocol.ParseConv(conv)
	return map[string]int64{parsed.A: 1, parsed.B: 1}
}

// groupState is a group's state from its item.
func groupState(conv string, c item) store.GroupState {
	g := store.GroupState{Conv: conv, Title: c.str(aTitle), Version: c.num(aVersion), Members: []string{}}
	for u := range c.numMap(aMembers) {
		g.Members = append(g.Members, u)
	}
	slices.Sort(g.Members)
	return g
}

// Unrepaired implements store.Backend: the sparse index on behind lists
// the conversations whose max seq moved past their derived watermark;
// each is checked on its item (the index is eventually consistent).
func (s *Backend) Unrepaired(ctx context.Context) ([]string, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	items, err := s.query(ctx, &dynamodb.QueryInput{
		TableName:                 s.table(tConvs),
		IndexName:                 aws.String(ixUnrepaired),
		KeyConditionExpression:    aws.String("#b = :b"),
		ExpressionAttributeNames:  map[string]string{"#b": aBehind},
		ExpressionAttributeValues: item{":b": strV("1")},
	}, 0)
	if err != nil {
		return nil, fmt.Errorf("unrepaired conversations: %w", err)
	}
	var keys []batchKey
	for _, it := range items {
		conv := it.str(aConv)
		keys = append(keys, batchKey{table: tConvs, key: convKey(conv), id: conv})
	}
	got, err := s.batchGet(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("unrepaired conversations: %w", err)
	}
	out := []string{}
	for conv, c := range got {
		if c.num(aDerivedSeq) < c.num(aMaxSeq) || c.has(aPendingCh) {
			out = append(out, conv)
		}
	}
	slices.Sort(out)
	return out, nil
}

// Sessions implements store.Backend: one batch read.
func (s *Backend) Sessions(ctx context.Context, conv string, users []string) (map[string]session.State, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	keys := make([]batchKey, len(users))
	for i, u := range users {
		keys[i] = batchKey{table: tSessions, key: userConvKey(u, conv), id: u}
	}
	got, err := s.batchGet(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("sessions of %s: %w", conv, err)
	}
	out := make(map[string]session.State, len(got))
	for u, it := range got {
		out[u] = sessionOf(it)
	}
	return out, nil
}
