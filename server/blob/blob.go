// Package blob is cold storage for message bodies (the s3_ref of the
// source design's messages table): a directory when embedded, an S3 bucket
// when scaled out. A backend that
// archives keeps a message's seq, sender and timestamps in its table and
// its body here, under a key it records with the message.
package blob

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
)

// ErrNotFound says no object is stored under a key.
var ErrNotFound = errors.New("blob: not found")

// Store keeps objects by key. Put of a key already stored replaces it with
// the same bytes (archiving a body twice is harmless). Safe for concurrent
// use.
type Store interface {
	// Put stores body under key; durable when it returns.
	Put(ctx context.Context, key string, body []byte) error
	// Get returns the object under key, or ErrNotFound.
	Get(ctx context.Context, key string) ([]byte, error)
}

// Key is where a message's body is archived: one object per message, under
// its conversation.
func Key(conv string, seq int64) string {
	return "bodies/" + url.PathEscape(conv) + "/" + strconv.FormatInt(seq, 10)
}

// Erase rewrites the objects under keys as empty: a message deleted for
// everyone keeps no body in cold storage. A nil store holds nothing to
// erase only when keys is empty; otherwise it is an error, since the
// bodies named were archived somewhere.
func Erase(ctx context.Context, st Store, keys []string) error {
	for _, key := range keys {
		if st == nil {
			return fmt.Errorf("erase archived body %s: no blob store is configured", key)
		}
		if err := st.Put(ctx, key, nil); err != nil {
			return fmt.Errorf("erase archived body %s: %w", key, err)
		}
	}
	return nil
}
