package memstore

import (
	"context"
	"fmt"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/blob"
	"github.com/imcore/im/server/store"
)

// view is the message at seq as it stands (its archived body, if any,
// still to load: see archivedIn). Called under the lock.
func (c *conv) view(seq int64) protocol.Message {
	m := c.msgs[seq-1]
	c.states[seq].ShowEdits(&m)
	m.SetReactions(c.reactions[seq])
	return m
}

// hasMsgID reports whether m's (conv, msg_id) is stored. Called under the
// lock.
func (d *data) hasMsgID(m protocol.Message) bool {
	_, ok := d.msgIDs[[2]string{m.Conv, m.MsgID}]
	return ok
}

// targetExists returns ErrNotFound unless relation entry m's target is
// stored. Called under the lock.
func (d *data) targetExists(m protocol.Message) error {
	c := d.convs[m.Conv]
	if c == nil || !c.has(m.RefSeq) {
		return fmt.Errorf("target %s/%d: %w", m.Conv, m.RefSeq, store.ErrNotFound)
	}
	return nil
}

// applyRelation applies stored relation entry rel to its target and
// erases the bodies it erases; it returns the blob keys of the erased
// bodies that were archived, to be rewritten without them. Called under
// the lock, its target known to exist.
func (d *data) applyRelation(rel protocol.Message) (blobs []string) {
	c := d.convs[rel.Conv]
	st := c.states[rel.RefSeq]
	if st == nil {
		st = &store.TargetState{}
	}
	change := st.Apply(rel)
	if change.Changed {
		if c.states == nil {
			c.states = map[int64]*store.TargetState{}
		}
		c.states[rel.RefSeq] = st
		if rel.Kind == protocol.KindReaction { // only reactions change them
			if c.reactions == nil {
				c.reactions = map[int64][]protocol.Reaction{}
			}
			c.reactions[rel.RefSeq] = st.ReactionList()
		}
	}
	for _, seq := range change.Erase {
		c.msgs[seq-1].Body = ""
		if seq != rel.RefSeq {
			erased := store.ErasedEntry
			if c.states == nil {
				c.states = map[int64]*store.TargetState{}
			}
			c.states[seq] = &erased
		}
		if key, ok := c.archived[seq]; ok {
			blobs = append(blobs, key)
		}
	}
	return blobs
}

// ApplyRelation implements store.Backend.
func (s *Backend) ApplyRelation(ctx context.Context, rel protocol.Message) error {
	d, err := s.lock()
	if err != nil {
		return err
	}
	if err := d.targetExists(rel); err != nil {
		d.mu.Unlock()
		return err
	}
	erased := d.applyRelation(rel)
	d.mu.Unlock()
	return blob.Erase(ctx, d.blobs, erased)
}

// MessageSeq implements store.Backend.
func (s *Backend) MessageSeq(_ context.Context, conv, msgID string) (int64, error) {
	d, err := s.lock()
	if err != nil {
		return 0, err
	}
	defer d.mu.Unlock()
	seq, ok := d.msgIDs[[2]string{conv, msgID}]
	if !ok {
		return 0, store.ErrNotFound
	}
	return seq, nil
}
