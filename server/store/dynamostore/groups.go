package dynamostore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// maxChangeTries bounds how often a group change is tried again after
// another change of the same group got in between.
const maxChangeTries = 8

// pendingChange is a group change committed on the conversation's item
// whose system message is not written yet (see doc.go).
type pendingChange struct {
	Seq    int64            `json:"seq"`
	Msg    protocol.Message `json:"msg"`
	Change changeRecord     `json:"change"`
}

// ChangeGroup implements store.Backend (see doc.go for the order of the
// writes and what each crash point leaves).
func (s *Backend) ChangeGroup(ctx context.Context, ch store.GroupChange) (store.GroupRecordResult, error) {
	if err := s.checkOpen(); err != nil {
		return store.GroupRecordResult{}, err
	}
	if ch.Create {
		return s.createGroup(ctx, ch)
	}
	return s.changeGroup(ctx, ch)
}

// createGroup writes the key (if any), the system message at seq 1, its
// idempotency key, and last the conversation's item, which makes the group
// exist.
func (s *Backend) createGroup(ctx context.Context, ch store.GroupChange) (store.GroupRecordResult, error) {
	// The create's own rules are checked before anything is written;
	// whether its group exists, the conditional writes below find.
	if err := store.CheckGroupChange(nil, ch); err != nil {
		return store.GroupRecordResult{}, err
	}
	if ch.Key != "" {
		_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                s.table(tGroupKeys),
			Item:                     item{aCreator: strV(ch.Creator), aKey: strV(ch.Key), aConv: strV(ch.Conv)},
			ConditionExpression:      aws.String("attribute_not_exists(#c)"),
			ExpressionAttributeNames: map[string]string{"#c": aCreator},
		})
		if err != nil && !conditionFailed(err) {
			return store.GroupRecordResult{}, fmt.Errorf("create %s: key: %w", ch.Conv, err)
		}
		if err != nil {
			k, err := s.getItem(ctx, tGroupKeys, groupKeyKey(ch.Creator, ch.Key))
			if err != nil {
				return store.GroupRecordResult{}, err
			}
			conv := k.str(aConv)
			c, err := s.convItem(ctx, conv)
			if err != nil {
				return store.GroupRecordResult{}, err
			}
			if c != nil {
				return store.GroupRecordResult{Group: groupState(conv, c), Existing: true}, nil
			}
			// The key's group was never finished: this create finishes it.
			ch.Conv, ch.Msg.Conv = conv, conv
		}
	}
	rec := changeRecord{Create: true, Title: ch.Title, Add: slices.Clone(ch.Add)}
	m := ch.Msg
	m.Seq = 1
	it, err := messageItem(m, &rec)
	if err != nil {
		return store.GroupRecordResult{}, err
	}
	if err := s.putMessage(ctx, it); err != nil {
		if !conditionFailed(err) {
			return store.GroupRecordResult{}, fmt.Errorf("create %s: %w", ch.Conv, err)
		}
		if m, rec, err = s.adoptCreate(ctx, ch); err != nil {
			return store.GroupRecordResult{}, err
		}
	}
	if _, err := s.reserveID(ctx, m, 1); err != nil {
		return store.GroupRecordResult{}, err
	}
	g, err := store.ApplyGroupChange(nil, store.GroupChange{Conv: ch.Conv, Create: true, Title: rec.Title, Add: rec.Add}, m.Seq)
	if err != nil {
		return store.GroupRecordResult{}, err
	}
	c := item{
		aConv: strV(ch.Conv), aKind: numV(int64(protocol.ConvGroup)), aVersion: numV(g.Version), aMaxSeq: numV(m.Seq),
		aDerivedSeq: numV(0), aTickDeliv: numV(0), aTickRead: numV(0), aMembers: numMapV(g.Members), aBehind: strV("1"),
	}
	c.setStr(aTitle, g.Title)
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: s.table(tConvs), Item: c,
		ConditionExpression:      aws.String("attribute_not_exists(#c)"),
		ExpressionAttributeNames: map[string]string{"#c": aConv},
	})
	switch {
	case conditionFailed(err):
		return s.existingGroup(ctx, ch)
	case err != nil:
		return store.GroupRecordResult{}, fmt.Errorf("create %s: %w", ch.Conv, err)
	}
	s.groups.Store(ch.Conv, true)
	return store.GroupRecordResult{Group: g.State(), Msg: m}, nil
}

// adoptCreate handles a create whose seq 1 is taken: the group exists, or
// an earlier attempt of a keyed create stopped after writing its message,
// which this one adopts.
func (s *Backend) adoptCreate(ctx context.Context, ch store.GroupChange) (protocol.Message, changeRecord, error) {
	stored, err := s.messageItemAt(ctx, ch.Conv, 1)
	if err != nil {
		return protocol.Message{}, changeRecord{}, err
	}
	c, err := s.getItem(ctx, tConvs, convKey(ch.Conv))
	if err != nil {
		return protocol.Message{}, changeRecord{}, err
	}
	var rec changeRecord
	if c != nil || ch.Key == "" || stored == nil || json.Unmarshal([]byte(stored.str(aChange)), &rec) != nil || !rec.Create {
		return protocol.Message{}, changeRecord{}, fmt.Errorf("create %s: the group exists", ch.Conv)
	}
	msgs, err := s.messagesOf(ctx, []item{stored})
	if err != nil {
		return protocol.Message{}, changeRecord{}, err
	}
	return msgs[0], rec, nil
}

// existingGroup answers a create that found its group made meanwhile.
func (s *Backend) existingGroup(ctx context.Context, ch store.GroupChange) (store.GroupRecordResult, error) {
	if ch.Key == "" {
		return store.GroupRecordResult{}, fmt.Errorf("create %s: the group exists", ch.Conv)
	}
	c, err := s.convItem(ctx, ch.Conv)
	if err != nil {
		return store.GroupRecordResult{}, err
	}
	return store.GroupRecordResult{Group: groupState(ch.Conv, c), Existing: true}, nil
}

// changeGroup commits the change on the conversation's item (membership
// version checked, the change recorded as pending at its seq), then
// writes the system message and clears the pending record.
func (s *Backend) changeGroup(ctx context.Context, ch store.GroupChange) (store.GroupRecordResult, error) {
	var seq int64
	for range maxChangeTries {
		c, err := s.convItem(ctx, ch.Conv)
		if err != nil {
			return store.GroupRecordResult{}, err
		}
		cur := groupRecord(ch.Conv, c)
		if seq == 0 {
			// Checked before a seq is taken: a refused change leaves no
			// gap and reserves no msg_id.
			if err := store.CheckGroupChange(cur, ch); err != nil {
				return store.GroupRecordResult{}, err
			}
			if seq = ch.Msg.Seq; seq == 0 {
				if seq, err = s.nextSeq(ctx, ch.Conv); err != nil {
					return store.GroupRecordResult{}, err
				}
			}
			reserved, err := s.reserveID(ctx, ch.Msg, seq)
			if err != nil {
				return store.GroupRecordResult{}, err
			}
			if !reserved {
				return store.GroupRecordResult{}, fmt.Errorf("change %s: system message id %s is taken", ch.Conv, ch.Msg.MsgID)
			}
		}
		next, err := store.ApplyGroupChange(cur, ch, seq)
		if err != nil {
			return store.GroupRecordResult{}, err
		}
		m := ch.Msg
		m.Seq = seq
		p := pendingChange{Seq: seq, Msg: m, Change: changeRecord{Title: ch.Title, Add: slices.Clone(ch.Add), Remove: slices.Clone(ch.Remove)}}
		pj, err := json.Marshal(p)
		if err != nil {
			return store.GroupRecordResult{}, err
		}
		committed, err := s.commitChange(ctx, *cur, next, c.num(aMaxSeq) < seq, seq, string(pj))
		if err != nil {
			return store.GroupRecordResult{}, err
		}
		if !committed {
			continue // changed meanwhile: checked again
		}
		if err := s.completeChange(ctx, ch.Conv, string(pj)); err != nil {
			return store.GroupRecordResult{}, err
		}
		// The seq may have moved while the message was written.
		stored, err := s.getItem(ctx, tMessageIDs, msgIDKey(ch.Conv, m.MsgID))
		if err != nil {
			return store.GroupRecordResult{}, err
		}
		m.Seq = stored.num(aSeq)
		return store.GroupRecordResult{Group: next.State(), Msg: m}, nil
	}
	return store.GroupRecordResult{}, fmt.Errorf("change %s: %w (tried %d times)", ch.Conv, store.ErrStaleMembers, maxChangeTries)
}

// groupRecord is the group an item holds, nil when it holds none.
func groupRecord(conv string, c item) *store.GroupRecord {
	if c == nil || protocol.ConvKind(c.num(aKind)) != protocol.ConvGroup {
		return nil
	}
	return &store.GroupRecord{Conv: conv, Title: c.str(aTitle), Version: c.num(aVersion), Members: c.numMap(aMembers)}
}

// commitChange writes next, the group that results from a change of cur,
// on the group's item if its membership version is still cur's and no
// other change is pending, with pj, the change's pending record; false
// when either moved (the caller reads the item again).
func (s *Backend) commitChange(ctx context.Context, cur, next store.GroupRecord, raise bool, seq int64, pj string) (bool, error) {
	names := map[string]string{"#v": aVersion, "#p": aPendingCh, "#b": aBehind}
	values := item{":v": numV(cur.Version), ":p": strV(pj), ":b": strV("1")}
	// seqValue names a seq among the values, once however often it is used.
	seqValue := func(n int64) string {
		v := ":s" + strconv.FormatInt(n, 10)
		values[v] = numV(n)
		return v
	}
	set := []string{"#p = :p", "#b = :b"}
	var remove []string
	joined, left := store.MemberChanges(&cur, next)
	if len(joined)+len(left) > 0 {
		names["#mem"] = aMembers
	}
	for i, u := range joined {
		n := "#a" + strconv.Itoa(i)
		names[n] = u
		set = append(set, "#mem."+n+" = "+seqValue(next.Members[u]))
	}
	for i, u := range left {
		n := "#r" + strconv.Itoa(i)
		names[n] = u
		remove = append(remove, "#mem."+n)
	}
	if next.Version != cur.Version {
		set = append(set, "#v = :nv")
		values[":nv"] = numV(next.Version)
	}
	if next.Title != cur.Title {
		set = append(set, "#t = :title")
		names["#t"] = aTitle
		values[":title"] = strV(next.Title)
	}
	cond := "#v = :v AND attribute_not_exists(#p)"
	if raise {
		v := seqValue(seq)
		set = append(set, "#m = "+v)
		names["#m"] = aMaxSeq
		cond += " AND #m < " + v
	}
	expr := "SET " + join(set)
	if len(remove) > 0 {
		expr += " REMOVE " + join(remove)
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: s.table(tConvs), Key: convKey(next.Conv),
		UpdateExpression: aws.String(expr), ConditionExpression: aws.String(cond),
		ExpressionAttributeNames: names, ExpressionAttributeValues: values,
	})
	switch {
	case conditionFailed(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("change %s: %w", next.Conv, err)
	}
	return true, nil
}

func join(parts []string) string {
	out := ""
	for i, p := range parts {
		if i > 0 {
			out += ", "
		}
		out += p
	}
	return out
}

// completeChange writes the system message of a change committed on the
// group's item (pj, its pending record) and clears the record. It is safe
// to run twice, concurrently too: whoever reads the item first finishes
// the change. When another message took the change's seq (Redis lost the
// counter), the change moves to a fresh seq first.
func (s *Backend) completeChange(ctx context.Context, conv, pj string) error {
	var p pendingChange
	if err := json.Unmarshal([]byte(pj), &p); err != nil {
		return fmt.Errorf("pending change of %s: %w", conv, err)
	}
	for range maxPlacements {
		it, err := messageItem(p.Msg, &p.Change)
		if err != nil {
			return err
		}
		err = s.putMessage(ctx, it)
		if err != nil && !conditionFailed(err) {
			return fmt.Errorf("change %s: system message: %w", conv, err)
		}
		if err == nil {
			break
		}
		stored, err := s.messageItemAt(ctx, conv, p.Seq)
		if err != nil {
			return err
		}
		if stored != nil && stored.str(aMsgID) == p.Msg.MsgID {
			break
		}
		if pj, err = s.movePending(ctx, conv, pj, &p); err != nil {
			return err
		}
		if pj == "" {
			return nil // finished by another writer meanwhile
		}
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: s.table(tConvs), Key: convKey(conv),
		UpdateExpression:          aws.String("REMOVE #p"),
		ConditionExpression:       aws.String("#p = :p"),
		ExpressionAttributeNames:  map[string]string{"#p": aPendingCh},
		ExpressionAttributeValues: item{":p": strV(pj)},
	})
	if err != nil && !conditionFailed(err) {
		return fmt.Errorf("change %s: clear the pending change: %w", conv, err)
	}
	return nil
}

// movePending moves a pending change whose seq was taken to a fresh seq:
// its record, the joined seqs of the members it adds and its reservation.
// It returns the new record, or "" when the record is no longer pending.
func (s *Backend) movePending(ctx context.Context, conv, pj string, p *pendingChange) (string, error) {
	next, err := s.reseed(ctx, conv)
	if err != nil {
		return "", err
	}
	old := p.Seq
	p.Seq, p.Msg.Seq = next, next
	b, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	names := map[string]string{"#p": aPendingCh}
	values := item{":old": strV(pj), ":new": strV(string(b))}
	expr := "SET #p = :new"
	if len(p.Change.Add) > 0 {
		names["#mem"], values[":seq"] = aMembers, numV(next)
	}
	for i, u := range p.Change.Add {
		n := "#a" + strconv.Itoa(i)
		names[n] = u
		expr += ", #mem." + n + " = :seq"
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: s.table(tConvs), Key: convKey(conv),
		UpdateExpression: aws.String(expr), ConditionExpression: aws.String("#p = :old"),
		ExpressionAttributeNames: names, ExpressionAttributeValues: values,
	})
	switch {
	case conditionFailed(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("change %s: move to seq %d: %w", conv, next, err)
	}
	if _, err := s.moveReservation(ctx, p.Msg, old, next); err != nil {
		return "", err
	}
	if _, err := s.raiseMax(ctx, conv, next, protocol.ConvGroup); err != nil {
		return "", err
	}
	return string(b), nil
}
