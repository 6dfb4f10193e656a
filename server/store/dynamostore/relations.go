package dynamostore

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/blob"
	"github.com/imcore/im/server/store"
)

// stateTries bounds how often ApplyRelation reads a target again because
// its state changed between the read and the write (only a writer other
// than the conversation's owner, during a handover, changes it).
const stateTries = 8

// ApplyRelation implements store.Backend. No write spans two items: the
// entry is put first (Append, AppendAt), then its target's state is
// rewritten here, conditional on the state read, then the erased bodies
// are removed item by item. A crash in between leaves the conversation
// behind its derived state (Unrepaired), and the engine's repair applies
// the entry again: every step is idempotent.
func (s *Backend) ApplyRelation(ctx context.Context, rel protocol.Message) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	for range stateTries {
		target, err := s.messageItemAt(ctx, rel.Conv, rel.RefSeq)
		if err != nil {
			return err
		}
		if target == nil {
			return fmt.Errorf("target %s/%d: %w", rel.Conv, rel.RefSeq, store.ErrNotFound)
		}
		old := target.str(aState)
		st, err := store.DecodeTargetState(old)
		if err != nil {
			return err
		}
		if st == nil {
			st = &store.TargetState{}
		}
		change := st.Apply(rel)
		written, err := s.writeTargetState(ctx, rel, old, st, change)
		if err != nil {
			return err
		}
		if !written {
			continue
		}
		blobs := []string{}
		if ref := target.str(aS3Ref); ref != "" && erases(change, rel.RefSeq) {
			blobs = append(blobs, ref)
		}
		for _, seq := range change.Erase {
			if seq == rel.RefSeq {
				continue
			}
			ref, err := s.eraseEntry(ctx, rel.Conv, seq)
			if err != nil {
				return err
			}
			if ref != "" {
				blobs = append(blobs, ref)
			}
		}
		return blob.Erase(ctx, s.blobs, blobs)
	}
	return fmt.Errorf("apply %s/%d to its target: its state kept changing", rel.Conv, rel.Seq)
}

// erases reports whether change erases the body at seq.
func erases(change store.RelationChange, seq int64) bool {
	for _, s := range change.Erase {
		if s == seq {
			return true
		}
	}
	return false
}

// writeTargetState stores the target's new state, if it changed, on
// condition that its state is still old, and removes its body if the
// change erases it; false when the state changed meanwhile.
func (s *Backend) writeTargetState(ctx context.Context, rel protocol.Message, old string, st *store.TargetState, change store.RelationChange) (bool, error) {
	key := msgKey(rel.Conv, rel.RefSeq)
	if !change.Changed {
		if !erases(change, rel.RefSeq) {
			return true, nil
		}
		return s.update(ctx, tMessages, key, "REMOVE #b", "", map[string]string{"#b": aBody}, nil)
	}
	text, err := st.Encode()
	if err != nil {
		return false, err
	}
	names := map[string]string{"#st": aState}
	values := item{":new": strV(text)}
	cond := "attribute_not_exists(#st)"
	if old != "" {
		cond, values[":old"] = "#st = :old", strV(old)
	}
	expr := "SET #st = :new"
	if erases(change, rel.RefSeq) {
		expr += " REMOVE #b"
		names["#b"] = aBody
	}
	return s.update(ctx, tMessages, key, expr, cond, names, values)
}

// eraseEntry removes the body of the edit entry at seq and marks it
// erased; it returns the entry's blob key when its body was archived.
func (s *Backend) eraseEntry(ctx context.Context, conv string, seq int64) (string, error) {
	text, err := (&store.ErasedEntry).Encode()
	if err != nil {
		return "", err
	}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 s.table(tMessages),
		Key:                       msgKey(conv, seq),
		UpdateExpression:          aws.String("SET #st = :e REMOVE #b"),
		ConditionExpression:       aws.String("attribute_exists(#s)"),
		ExpressionAttributeNames:  map[string]string{"#st": aState, "#b": aBody, "#s": aSeq},
		ExpressionAttributeValues: item{":e": strV(text)},
		ReturnValues:              types.ReturnValueAllNew,
	})
	switch {
	case conditionFailed(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("erase %s/%d: %w", conv, seq, err)
	}
	return item(out.Attributes).str(aS3Ref), nil
}

// applyStored applies m to its target when it is a relation entry just
// stored or found stored (a repeat finishes what its first attempt may
// have cut short); the caller giving up must not stop it half-way.
func (s *Backend) applyStored(ctx context.Context, m protocol.Message) error {
	if !m.IsRelation() {
		return nil
	}
	return s.ApplyRelation(context.WithoutCancel(ctx), m)
}

// MessageSeq implements store.Backend: the seq the key's reservation
// records once its message has one (a reservation without a seq is a send
// not stored yet: ErrNotFound).
func (s *Backend) MessageSeq(ctx context.Context, conv, msgID string) (int64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	res, err := s.getItem(ctx, tMessageIDs, msgIDKey(conv, msgID))
	if err != nil {
		return 0, err
	}
	if res == nil || !res.has(aSeq) {
		return 0, store.ErrNotFound
	}
	seq := res.num(aSeq)
	stored, err := s.messageItemAt(ctx, conv, seq)
	if err != nil {
		return 0, err
	}
	if stored == nil || stored.str(aMsgID) != msgID {
		return 0, store.ErrNotFound
	}
	return seq, nil
}
