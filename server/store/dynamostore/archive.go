package dynamostore

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/imcore/im/server/blob"
	"github.com/imcore/im/server/store"
)

// Archive implements store.Archiver: a Scan of the messages table,
// filtered to bodies older than cutoff and not archived yet; each body is
// put to the blob store, then its item updated (s3_ref set, body
// removed) on condition that s3_ref is still not set, so that two runs
// never move a body twice. A Scan reads the whole table: archival is a
// batch job, run rarely.
func (s *Backend) Archive(ctx context.Context, cutoff int64, progress func(moved int)) (int, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	if s.blobs == nil {
		return 0, errors.New("archive: no blob store configured")
	}
	in := &dynamodb.ScanInput{
		TableName:                 s.table(tMessages),
		FilterExpression:          aws.String("#ts < :cut AND attribute_exists(#b) AND attribute_not_exists(#r)"),
		ExpressionAttributeNames:  map[string]string{"#ts": aServerTS, "#b": aBody, "#r": aS3Ref},
		ExpressionAttributeValues: item{":cut": numV(cutoff)},
		ConsistentRead:            aws.Bool(true),
	}
	moved := 0
	for {
		page, err := s.db.Scan(ctx, in)
		if err != nil {
			return moved, fmt.Errorf("archive: scan messages: %w", err)
		}
		for _, raw := range page.Items {
			it := item(raw)
			conv, seq := it.str(aConv), it.num(aSeq)
			key := blob.Key(conv, seq)
			if err := s.blobs.Put(ctx, key, []byte(it.str(aBody))); err != nil {
				return moved, fmt.Errorf("archive %s/%d: %w", conv, seq, err)
			}
			ok, err := s.update(ctx, tMessages, msgKey(conv, seq), "SET #r = :r REMOVE #b",
				"attribute_exists(#b) AND attribute_not_exists(#r)",
				map[string]string{"#r": aS3Ref, "#b": aBody}, item{":r": strV(key)})
			if err != nil {
				return moved, fmt.Errorf("archive %s/%d: %w", conv, seq, err)
			}
			if ok {
				moved++
			} else if err := s.eraseIfDeleted(ctx, conv, seq, key); err != nil {
				return moved, fmt.Errorf("archive %s/%d: %w", conv, seq, err)
			}
		}
		if progress != nil {
			progress(moved)
		}
		if page.LastEvaluatedKey == nil {
			return moved, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// eraseIfDeleted rewrites as empty the blob just put for the body at
// (conv, seq) when a deletion erased that body after it was read (the
// item then has no body, and the archive's update did not hold): the
// deletion, finding no s3_ref, erased no blob.
func (s *Backend) eraseIfDeleted(ctx context.Context, conv string, seq int64, key string) error {
	it, err := s.messageItemAt(ctx, conv, seq)
	if err != nil || it == nil {
		return err
	}
	st, err := store.DecodeTargetState(it.str(aState))
	if err != nil {
		return err
	}
	if st != nil && (st.Deleted || st.Erased) && it.str(aS3Ref) == "" {
		return blob.Erase(ctx, s.blobs, []string{key})
	}
	return nil
}
