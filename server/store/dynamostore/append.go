package dynamostore

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// maxPlacements bounds how often one append moves to a fresh seq (each
// move means another writer took the seq, which only a lost Redis
// counter causes).
const maxPlacements = 16

// Append implements store.Backend, in the order doc.go explains: reserve
// (conv, msg_id) at a seq, put the message at that seq, raise the
// conversation's max seq.
func (s *Backend) Append(ctx context.Context, m protocol.Message) (store.AppendResult, error) {
	if err := s.checkOpen(); err != nil {
		return store.AppendResult{}, err
	}
	parsed, ok := protocol.ParseConv(m.Conv)
	if !ok || (parsed.Kind != protocol.ConvDirect && parsed.Kind != protocol.ConvGroup) {
		return store.AppendResult{}, store.ErrNotFound
	}
	if parsed.Kind == protocol.ConvGroup {
		if err := s.checkGroup(ctx, m.Conv); err != nil {
			return store.AppendResult{}, err
		}
	}
	// The key first, then a seq for it: a repeat, even one racing its
	// first attempt, takes no seq.
	reserved, err := s.reserveID(ctx, m, 0)
	if err != nil {
		return store.AppendResult{}, err
	}
	if !reserved {
		return s.resume(ctx, m, parsed.Kind)
	}
	seq, err := s.nextSeq(ctx, m.Conv)
	if err != nil {
		return store.AppendResult{}, err
	}
	claimed, err := s.claimSeq(ctx, m, seq)
	if err != nil {
		return store.AppendResult{}, err
	}
	if !claimed {
		return s.resume(ctx, m, parsed.Kind) // taken over meanwhile
	}
	return s.place(ctx, m, seq, parsed.Kind)
}

// claimWait is how long an attempt that finds the key reserved without a
// seq waits for the attempt that reserved it before taking it over (that
// attempt stopped short).
const claimWait = 2 * time.Second

// claimSeq records seq on m's reservation, unless one is recorded.
func (s *Backend) claimSeq(ctx context.Context, m protocol.Message, seq int64) (bool, error) {
	return s.update(ctx, tMessageIDs, msgIDKey(m.Conv, m.MsgID), "SET #s = :s", "attribute_exists(#c) AND attribute_not_exists(#s)",
		map[string]string{"#s": aSeq, "#c": aConv}, item{":s": numV(seq)})
}

// checkGroup returns ErrNotFound unless group conv exists.
func (s *Backend) checkGroup(ctx context.Context, conv string) error {
	if _, ok := s.groups.Load(conv); ok {
		return nil
	}
	c, err := s.getItem(ctx, tConvs, convKey(conv))
	if err != nil {
		return err
	}
	if c == nil {
		return store.ErrNotFound
	}
	s.groups.Store(conv, true)
	return nil
}

// reserveID puts m's idempotency key (at seq when not 0); false when the
// key is already reserved (by an earlier attempt, or another sender).
func (s *Backend) reserveID(ctx context.Context, m protocol.Message, seq int64) (bool, error) {
	it := item{aConv: strV(m.Conv), aMsgID: strV(m.MsgID), aSender: strV(m.From), aReservedAt: numV(time.Now().UnixMilli())}
	if seq > 0 {
		it[aSeq] = numV(seq)
	}
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: s.table(tMessageIDs), Item: it,
		ConditionExpression:      aws.String("attribute_not_exists(#c)"),
		ExpressionAttributeNames: map[string]string{"#c": aConv},
	})
	switch {
	case conditionFailed(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reserve %s/%s: %w", m.Conv, m.MsgID, err)
	}
	return true, nil
}

// moveReservation moves m's reservation from seq old to seq new; false
// when it is no longer at old (another attempt of the same message moved
// it).
func (s *Backend) moveReservation(ctx context.Context, m protocol.Message, old, new int64) (bool, error) {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 s.table(tMessageIDs),
		Key:                       msgIDKey(m.Conv, m.MsgID),
		UpdateExpression:          aws.String("SET #s = :new"),
		ConditionExpression:       aws.String("#s = :old"),
		ExpressionAttributeNames:  map[string]string{"#s": aSeq},
		ExpressionAttributeValues: item{":new": numV(new), ":old": numV(old)},
	})
	switch {
	case conditionFailed(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("move reservation %s/%s to %d: %w", m.Conv, m.MsgID, new, err)
	}
	return true, nil
}

// place writes m at seq, reserved for it, moving to a fresh seq when
// another message took that one, then raises the conversation's max seq.
func (s *Backend) place(ctx context.Context, m protocol.Message, seq int64, kind protocol.ConvKind) (store.AppendResult, error) {
	for range maxPlacements {
		m.Seq = seq
		it, err := messageItem(m, nil)
		if err != nil {
			return store.AppendResult{}, err
		}
		err = s.putMessage(ctx, it)
		if err == nil {
			// Stored: the caller giving up must not leave it answered as
			// an error with max_seq not raised.
			if _, err := s.raiseMax(context.WithoutCancel(ctx), m.Conv, seq, kind); err != nil {
				return store.AppendResult{}, err
			}
			if err := s.applyStored(ctx, m); err != nil {
				return store.AppendResult{}, err
			}
			return store.AppendResult{Msg: m}, nil
		}
		if !conditionFailed(err) {
			return store.AppendResult{}, fmt.Errorf("append %s/%s at %d: %w", m.Conv, m.MsgID, seq, err)
		}
		// The seq is taken: by another attempt of this very message, or
		// by another message after Redis lost the counter.
		stored, err := s.messageItemAt(ctx, m.Conv, seq)
		if err != nil {
			return store.AppendResult{}, err
		}
		if stored != nil && stored.str(aMsgID) == m.MsgID {
			return s.finishStored(ctx, stored, kind)
		}
		next, err := s.reseed(ctx, m.Conv)
		if err != nil {
			return store.AppendResult{}, err
		}
		moved, err := s.moveReservation(ctx, m, seq, next)
		if err != nil {
			return store.AppendResult{}, err
		}
		if !moved {
			return s.resume(ctx, m, kind)
		}
		seq = next
	}
	return store.AppendResult{}, fmt.Errorf("append %s/%s: no free seq after %d attempts", m.Conv, m.MsgID, maxPlacements)
}

// resume handles an append whose (conv, msg_id) is already reserved: a
// duplicate, another sender's key, or an earlier attempt cut short
// (reserved, perhaps written, not finished), which it finishes.
func (s *Backend) resume(ctx context.Context, m protocol.Message, kind protocol.ConvKind) (store.AppendResult, error) {
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		res, err := s.getItem(ctx, tMessageIDs, msgIDKey(m.Conv, m.MsgID))
		if err != nil {
			return store.AppendResult{}, err
		}
		if res == nil {
			return store.AppendResult{}, fmt.Errorf("append %s/%s: reservation vanished", m.Conv, m.MsgID)
		}
		if res.str(aSender) != m.From {
			return store.AppendResult{}, store.ErrMsgIDTaken
		}
		if res.has(aSeq) {
			seq := res.num(aSeq)
			stored, err := s.messageItemAt(ctx, m.Conv, seq)
			if err != nil {
				return store.AppendResult{}, err
			}
			if stored != nil && stored.str(aMsgID) == m.MsgID {
				return s.finishStored(ctx, stored, kind)
			}
			// Reserved, never written: write it now, at its seq if still
			// free.
			return s.place(ctx, m, seq, kind)
		}
		// Reserved without a seq: the attempt that reserved it is taking
		// one, or stopped short; past claimWait, this one takes over.
		if time.Now().UnixMilli() >= res.num(aReservedAt)+claimWait.Milliseconds() {
			seq, err := s.nextSeq(ctx, m.Conv)
			if err != nil {
				return store.AppendResult{}, err
			}
			claimed, err := s.claimSeq(ctx, m, seq)
			if err != nil {
				return store.AppendResult{}, err
			}
			if claimed {
				return s.place(ctx, m, seq, kind)
			}
			continue
		}
		select {
		case <-ctx.Done():
			return store.AppendResult{}, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// finishStored returns a message found stored as a duplicate: the attempt
// whose write of the message succeeded is the one that stored it, and the
// only one that answers it new, even while it is still running. Should
// that attempt have stopped short of raising the conversation's max seq,
// this call raises it, and the conversation shows as behind its derived
// state (Unrepaired): the engine derives the message then.
func (s *Backend) finishStored(ctx context.Context, stored item, kind protocol.ConvKind) (store.AppendResult, error) {
	msgs, err := s.messagesOf(ctx, []item{stored})
	if err != nil {
		return store.AppendResult{}, err
	}
	m := msgs[0]
	if _, err := s.raiseMax(ctx, m.Conv, m.Seq, kind); err != nil {
		return store.AppendResult{}, err
	}
	if err := s.applyStored(ctx, m); err != nil {
		return store.AppendResult{}, err
	}
	return store.AppendResult{Msg: m, Duplicate: true}, nil
}

// raiseMax raises conv's max seq to seq (creating a direct chat's item on
// its first message) and marks it behind its derived state; false when
// the max seq was already there.
func (s *Backend) raiseMax(ctx context.Context, conv string, seq int64, kind protocol.ConvKind) (bool, error) {
	cond := "attribute_not_exists(#m) OR #m < :s"
	if kind == protocol.ConvGroup {
		cond = "attribute_exists(#m) AND #m < :s"
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: s.table(tConvs),
		Key:       convKey(conv),
		UpdateExpression: aws.String("SET #m = :s, #b = :b, #k = if_not_exists(#k, :k), #v = if_not_exists(#v, :0), " +
			"#d = if_not_exists(#d, :0), #td = if_not_exists(#td, :0), #tr = if_not_exists(#tr, :0)"),
		ConditionExpression: aws.String(cond),
		ExpressionAttributeNames: map[string]string{"#m": aMaxSeq, "#b": aBehind, "#k": aKind, "#v": aVersion,
			"#d": aDerivedSeq, "#td": aTickDeliv, "#tr": aTickRead},
		ExpressionAttributeValues: item{":s": numV(seq), ":b": strV("1"), ":k": numV(int64(kind)), ":0": numV(0)},
	})
	switch {
	case conditionFailed(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("raise the max seq of %s to %d: %w", conv, seq, err)
	}
	return true, nil
}

// AppendAt implements store.Backend: m is stored at m.Seq, which the
// conversation's owner gave it. The key is reserved at that seq while the
// conversation's max seq is raised to it, then the message is put there if
// the seq is free; a seq another message holds is ErrSeqTaken, with the
// key's reservation taken back. Raised first, the max seq lists the
// conversation as behind its derived state before the message can exist
// unlisted (a crash after the put leaves it to repair); raised for a seq
// that ends up without a message, it leaves a hole that the next message,
// or the repair, fills. Two round trips before the message is durable,
// not three; the raise goes up to given at once, so that the appends in
// flight behind this one find their seqs raised, and those in flight
// together wait for one write (maxRaises).
func (s *Backend) AppendAt(ctx context.Context, m protocol.Message, given int64) (store.AppendResult, error) {
	if err := s.checkOpen(); err != nil {
		return store.AppendResult{}, err
	}
	parsed, ok := protocol.ParseConv(m.Conv)
	if !ok || (parsed.Kind != protocol.ConvDirect && parsed.Kind != protocol.ConvGroup) || m.Seq <= 0 {
		return store.AppendResult{}, store.ErrNotFound
	}
	var raiseErr error
	raised := make(chan struct{})
	go func() {
		defer close(raised)
		raiseErr = s.raise(context.WithoutCancel(ctx), m.Conv, m.Seq, max(given, m.Seq), parsed.Kind)
	}()
	reserved, err := s.reserveID(ctx, m, m.Seq)
	<-raised
	if err != nil {
		return store.AppendResult{}, err
	}
	if !reserved {
		return s.resume(ctx, m, parsed.Kind)
	}
	if raiseErr != nil {
		return store.AppendResult{}, s.takeBackID(ctx, m, raiseErr)
	}
	it, err := messageItem(m, nil)
	if err != nil {
		return store.AppendResult{}, err
	}
	err = s.putMessage(ctx, it)
	if conditionFailed(err) {
		// Taken: by a retry of this very message that found the key
		// reserved and wrote it first (it answers it new), or by another.
		stored, serr := s.messageItemAt(ctx, m.Conv, m.Seq)
		if serr != nil {
			return store.AppendResult{}, serr
		}
		if stored != nil && stored.str(aMsgID) == m.MsgID {
			return s.finishStored(ctx, stored, parsed.Kind)
		}
	}
	switch {
	case conditionFailed(err):
		return store.AppendResult{}, s.takeBackID(ctx, m, fmt.Errorf("append %s/%s at %d: %w", m.Conv, m.MsgID, m.Seq, store.ErrSeqTaken))
	case err != nil:
		return store.AppendResult{}, fmt.Errorf("append %s/%s at %d: %w", m.Conv, m.MsgID, m.Seq, err)
	}
	if err := s.applyStored(ctx, m); err != nil {
		return store.AppendResult{}, err
	}
	return store.AppendResult{Msg: m}, nil
}

// takeBackID deletes m's key reserved at m.Seq, where m will not be
// stored, and returns why (cause), or why the key could not be taken back.
func (s *Backend) takeBackID(ctx context.Context, m protocol.Message, cause error) error {
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: s.table(tMessageIDs), Key: msgIDKey(m.Conv, m.MsgID),
		ConditionExpression:       aws.String("#s = :s"),
		ExpressionAttributeNames:  map[string]string{"#s": aSeq},
		ExpressionAttributeValues: item{":s": numV(m.Seq)},
	})
	if err != nil && !conditionFailed(err) {
		return fmt.Errorf("append %s/%s: take back the key of seq %d: %w", m.Conv, m.MsgID, m.Seq, err)
	}
	return cause
}

// NewestSeq implements store.Backend.
func (s *Backend) NewestSeq(ctx context.Context, conv string) (int64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	return s.storedNewest(ctx, conv)
}
