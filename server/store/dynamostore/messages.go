package dynamostore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// changeRecord is a group change as recorded with its system message.
type changeRecord struct {
	Create bool     `json:"create,omitempty"`
	Title  string   `json:"title,omitempty"`
	Add    []string `json:"add,omitempty"`
	Remove []string `json:"remove,omitempty"`
}

// messageItem is m as stored at its seq, with the group change it tells
// of when change is not nil.
func messageItem(m protocol.Message, change *changeRecord) (item, error) {
	it := item{
		aConv: strV(m.Conv), aSeq: numV(m.Seq), aMsgID: strV(m.MsgID), aSender: strV(m.From),
		aClientTS: numV(m.ClientTS), aServerTS: numV(m.ServerTS),
	}
	it.setStr(aBody, m.Body)
	it.setStr(aKind, m.Kind)
	if m.ReplyTo != 0 {
		it[aReplyTo] = numV(m.ReplyTo)
	}
	if m.RefSeq != 0 {
		it[aRefSeq] = numV(m.RefSeq)
	}
	if change != nil {
		b, err := json.Marshal(change)
		if err != nil {
			return nil, err
		}
		it[aChange] = strV(string(b))
	}
	return it, nil
}

// messageOf decodes a stored message as it stands (its state shown), its
// body as stored (empty when archived: see messagesOf), and reports
// whether it shows the body stored.
func messageOf(it item) (protocol.Message, bool, error) {
	m := protocol.Message{
		Conv: it.str(aConv), Seq: it.num(aSeq), MsgID: it.str(aMsgID), From: it.str(aSender), Body: it.str(aBody),
		ClientTS: it.num(aClientTS), ServerTS: it.num(aServerTS), Kind: it.str(aKind),
		ReplyTo: it.num(aReplyTo), RefSeq: it.num(aRefSeq),
	}
	storedBody, err := store.ShowStored(&m, it.str(aState))
	if err != nil {
		return m, false, fmt.Errorf("%s/%d: %w", m.Conv, m.Seq, err)
	}
	return m, storedBody, nil
}

// messagesOf decodes stored messages with their archived bodies read back.
func (s *Backend) messagesOf(ctx context.Context, items []item) ([]protocol.Message, error) {
	out := make([]protocol.Message, len(items))
	for i, it := range items {
		var storedBody bool
		var err error
		if out[i], storedBody, err = messageOf(it); err != nil {
			return nil, err
		}
		if ref := it.str(aS3Ref); ref != "" && storedBody {
			body, err := s.archivedBody(ctx, ref)
			if err != nil {
				return nil, err
			}
			out[i].Body = body
		}
	}
	return out, nil
}

// archivedBody reads an archived body back from the blob store.
func (s *Backend) archivedBody(ctx context.Context, ref string) (string, error) {
	if s.blobs == nil {
		return "", fmt.Errorf("message body archived at %s but no blob store is configured", ref)
	}
	b, err := s.blobs.Get(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("archived body %s: %w", ref, err)
	}
	return string(b), nil
}

// messageItemAt reads the stored item at (conv, seq); nil when none.
func (s *Backend) messageItemAt(ctx context.Context, conv string, seq int64) (item, error) {
	return s.getItem(ctx, tMessages, msgKey(conv, seq))
}

// putMessage writes it at its seq unless that seq is taken (the guard
// against reusing a seq): conditionFailed then.
func (s *Backend) putMessage(ctx context.Context, it item) error {
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: s.table(tMessages), Item: it,
		ConditionExpression:      aws.String("attribute_not_exists(#s)"),
		ExpressionAttributeNames: map[string]string{"#s": aSeq},
	})
	return err
}

// Message implements store.Backend.
func (s *Backend) Message(ctx context.Context, conv string, seq int64) (protocol.Message, error) {
	if err := s.checkOpen(); err != nil {
		return protocol.Message{}, err
	}
	it, err := s.messageItemAt(ctx, conv, seq)
	if err != nil {
		return protocol.Message{}, err
	}
	if it == nil {
		return protocol.Message{}, store.ErrNotFound
	}
	msgs, err := s.messagesOf(ctx, []item{it})
	if err != nil {
		return protocol.Message{}, err
	}
	return msgs[0], nil
}

// History implements store.Backend: one Query from the bound asked from,
// outwards, Limit+1 items.
func (s *Backend) History(ctx context.Context, conv string, q store.HistoryQuery) ([]protocol.Message, bool, error) {
	if err := s.checkOpen(); err != nil {
		return nil, false, err
	}
	if q.Limit <= 0 {
		return nil, false, fmt.Errorf("history of %s: limit %d must be positive", conv, q.Limit)
	}
	in := &dynamodb.QueryInput{
		TableName:                s.table(tMessages),
		ExpressionAttributeNames: map[string]string{"#c": aConv, "#s": aSeq},
		ScanIndexForward:         aws.Bool(q.After),
	}
	if q.After {
		in.KeyConditionExpression = aws.String("#c = :c AND #s > :lo")
		in.ExpressionAttributeValues = item{":c": strV(conv), ":lo": numV(max(q.AfterSeq, q.MinSeq-1))}
	} else {
		lo := max(1, q.MinSeq)
		if q.BeforeSeq > 0 {
			if q.BeforeSeq-1 < lo {
				return []protocol.Message{}, false, nil
			}
			in.KeyConditionExpression = aws.String("#c = :c AND #s BETWEEN :lo AND :hi")
			in.ExpressionAttributeValues = item{":c": strV(conv), ":lo": numV(lo), ":hi": numV(q.BeforeSeq - 1)}
		} else {
			in.KeyConditionExpression = aws.String("#c = :c AND #s >= :lo")
			in.ExpressionAttributeValues = item{":c": strV(conv), ":lo": numV(lo)}
		}
	}
	items, err := s.query(ctx, in, q.Limit+1)
	if err != nil {
		return nil, false, fmt.Errorf("history of %s: %w", conv, err)
	}
	// Cut by size on what is stored, then read back only the bodies
	// returned.
	cands, err := s.messagesOf(ctx, items[:min(len(items), q.Limit)])
	if err != nil {
		return nil, false, fmt.Errorf("history of %s: %w", conv, err)
	}
	out, cut := store.WithinBytes(cands, q.MaxBytes)
	hasMore := cut || len(items) > q.Limit
	if !q.After {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out, hasMore, nil
}

// Senders implements store.Backend.
func (s *Backend) Senders(ctx context.Context, conv string, after, upTo int64) ([]string, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	out := []string{}
	if upTo <= after {
		return out, nil
	}
	items, err := s.query(ctx, &dynamodb.QueryInput{
		TableName:                 s.table(tMessages),
		KeyConditionExpression:    aws.String("#c = :c AND #s BETWEEN :lo AND :hi"),
		ProjectionExpression:      aws.String("#f"),
		ExpressionAttributeNames:  map[string]string{"#c": aConv, "#s": aSeq, "#f": aSender},
		ExpressionAttributeValues: item{":c": strV(conv), ":lo": numV(after + 1), ":hi": numV(upTo)},
	}, 0)
	if err != nil {
		return nil, fmt.Errorf("senders of %s: %w", conv, err)
	}
	seen := map[string]bool{}
	for _, it := range items {
		if f := it.str(aSender); !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out, nil
}

// GroupChangeAt implements store.Backend.
func (s *Backend) GroupChangeAt(ctx context.Context, conv string, seq int64) (store.GroupChange, error) {
	if err := s.checkOpen(); err != nil {
		return store.GroupChange{}, err
	}
	it, err := s.messageItemAt(ctx, conv, seq)
	if err != nil {
		return store.GroupChange{}, err
	}
	if it == nil || !it.has(aChange) {
		return store.GroupChange{}, store.ErrNotFound
	}
	var rec changeRecord
	if err := json.Unmarshal([]byte(it.str(aChange)), &rec); err != nil {
		return store.GroupChange{}, errors.Join(fmt.Errorf("group change at %s/%d", conv, seq), err)
	}
	return store.GroupChange{Conv: conv, Create: rec.Create, Title: rec.Title, Add: rec.Add, Remove: rec.Remove}, nil
}
