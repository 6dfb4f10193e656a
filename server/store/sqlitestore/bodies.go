package sqlitestore

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/imcore/im/protocol"
)

// archivedBody is a message read with its body archived: where it is in
// the read's result and the blob key its row recorded (s3_ref).
type archivedBody struct {
	msg *protocol.Message
	ref string
}

// bodyFetches bounds the blob reads one read of the store runs at once.
const bodyFetches = 8

// loadBodies fills the bodies of archived messages from the blob store.
// Reads call it after their rows are closed, and only when a row had an
// s3_ref: a read of nothing archived costs nothing more.
func (s *Backend) loadBodies(ctx context.Context, archived []archivedBody) error {
	if len(archived) == 0 {
		return nil
	}
	if s.blobs == nil {
		return fmt.Errorf("message %s/%d is archived (%s) but no blob store is configured",
			archived[0].msg.Conv, archived[0].msg.Seq, archived[0].ref)
	}
	if len(archived) == 1 {
		return s.loadBody(ctx, archived[0])
	}
	return eachAtOnce(archived, func(a archivedBody) error { return s.loadBody(ctx, a) })
}

// eachAtOnce runs fn on every item, bodyFetches at a time, and returns the
// first error once all are done.
func eachAtOnce[T any](items []T, fn func(T) error) error {
	var g errgroup.Group
	g.SetLimit(bodyFetches)
	for _, it := range items {
		g.Go(func() error { return fn(it) })
	}
	return g.Wait()
}

// loadBody reads one archived body into its message.
func (s *Backend) loadBody(ctx context.Context, a archivedBody) error {
	body, err := s.blobs.Get(ctx, a.ref)
	if err != nil {
		return fmt.Errorf("archived body of %s/%d: %w", a.msg.Conv, a.msg.Seq, err)
	}
	a.msg.Body = string(body)
	return nil
}
