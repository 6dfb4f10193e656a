package memstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/blob"
	"github.com/imcore/im/server/store"
)

var _ store.Archiver = (*Backend)(nil)

// NewWithBlobs returns an empty store that archives bodies to blobs (see
// Archive) and reads archived bodies back from it.
func NewWithBlobs(blobs blob.Store) *Backend {
	s := New()
	s.d.blobs = blobs
	return s
}

// archivedBody is a message read with its body archived, and the body's
// blob key.
type archivedBody struct {
	msg *protocol.Message
	ref string
}

// archivedIn appends m to list when its body is archived. Called under
// the lock.
func (d *data) archivedIn(m *protocol.Message, list []archivedBody) []archivedBody {
	if c := d.convs[m.Conv]; c != nil && c.states[m.Seq].ShowsStoredBody() {
		if ref, ok := c.archived[m.Seq]; ok {
			list = append(list, archivedBody{msg: m, ref: ref})
		}
	}
	return list
}

// loadBodies fills archived bodies from the blob store, outside the lock.
func (d *data) loadBodies(ctx context.Context, list []archivedBody) error {
	for _, a := range list {
		body, err := d.blobs.Get(ctx, a.ref)
		if err != nil {
			return fmt.Errorf("archived body of %s/%d: %w", a.msg.Conv, a.msg.Seq, err)
		}
		a.msg.Body = string(body)
	}
	return nil
}

// Archive implements store.Archiver: each message older than cutoff not
// archived yet has its body put in the blob store (outside the lock), then
// is marked archived and emptied, unless another run marked it first.
func (s *Backend) Archive(ctx context.Context, cutoff int64, progress func(moved int)) (int, error) {
	d, err := s.lock()
	if err != nil {
		return 0, err
	}
	if d.blobs == nil {
		d.mu.Unlock()
		return 0, errors.New("archive: no blob store configured")
	}
	var todo []protocol.Message
	for _, c := range d.convs {
		for _, m := range c.msgs {
			if m.Seq == 0 {
				continue // a hole
			}
			if _, done := c.archived[m.Seq]; !done && m.ServerTS < cutoff && !c.erased(m.Seq) {
				todo = append(todo, m)
			}
		}
	}
	d.mu.Unlock()
	moved := 0
	for _, m := range todo {
		key := blob.Key(m.Conv, m.Seq)
		if err := d.blobs.Put(ctx, key, []byte(m.Body)); err != nil {
			return moved, fmt.Errorf("archive: %w", err)
		}
		marked, erased := d.markArchived(m.Conv, m.Seq, key)
		if marked {
			moved++
		}
		if erased {
			// Deleted while its body was put: the blob must not keep it.
			if err := blob.Erase(ctx, d.blobs, []string{key}); err != nil {
				return moved, fmt.Errorf("archive: %w", err)
			}
		}
	}
	if progress != nil {
		progress(moved)
	}
	return moved, nil
}

// markArchived records that the body of conv's message at seq is under
// key, unless it already was (marked false) or its body was erased
// meanwhile (erased true: the blob put must be erased too).
func (d *data) markArchived(conv string, seq int64, key string) (marked, erased bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.convs[conv]
	if c.erased(seq) {
		return false, true
	}
	if _, done := c.archived[seq]; done {
		return false, false
	}
	if c.archived == nil {
		c.archived = map[int64]string{}
	}
	c.archived[seq] = key
	c.msgs[seq-1].Body = ""
	return true, false
}

// erased reports whether the body of the message at seq was erased (the
// message deleted, or an edit of a deleted one). Called under the lock.
func (c *conv) erased(seq int64) bool {
	st := c.states[seq]
	return st != nil && (st.Deleted || st.Erased)
}
