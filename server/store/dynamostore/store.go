package dynamostore

import (
	"context"
	"errors"
	"fmt"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/redis/go-redis/v9"

	"github.com/imcore/im/server/auth"
	"github.com/imcore/im/server/blob"
	"github.com/imcore/im/server/store"
)

var (
	_ store.Backend  = (*Backend)(nil)
	_ store.Archiver = (*Backend)(nil)
	_ auth.Epochs    = (*Backend)(nil)
)

// NewClient returns a DynamoDB client for region, talking to endpoint when
// not empty (a local service), credentials from the standard AWS chain.
func NewClient(ctx context.Context, endpoint, region string, optFns ...func(*dynamodb.Options)) (*dynamodb.Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(region),
		config.WithHTTPClient(awshttp.NewBuildableClient().WithTimeout(RequestTimeout)))
	if err != nil {
		return nil, fmt.Errorf("AWS configuration: %w", err)
	}
	return dynamodb.NewFromConfig(cfg, append([]func(*dynamodb.Options){func(o *dynamodb.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	}}, optFns...)...), nil
}

// RequestTimeout bounds each attempt of a DynamoDB call, so that a service
// that stops answering (a partition, a hung endpoint) fails the call and
// has it retried instead of holding it, and what waits on it — the
// write-behind, a shard's drain, a node's shutdown — forever.
const RequestTimeout = 10 * time.Second

// Options configures Open.
type Options struct {
	DynamoDB *dynamodb.Client
	// Redis sequences messages (one INCR counter per conversation).
	Redis redis.UniversalClient
	// Prefix starts every table name and every Redis key.
	Prefix string
	// Blobs is cold storage for archived bodies; nil: Archive refuses (and
	// reading an archived message fails).
	Blobs blob.Store
}

// Backend is a store.Backend on DynamoDB tables with Redis sequencing. Safe
// for concurrent use; several processes may share the same tables.
type Backend struct {
	db     *dynamodb.Client
	redis  redis.UniversalClient
	prefix string
	blobs  blob.Store
	closed atomic.Bool
	// groups caches the groups known to exist (a group is never deleted).
	groups sync.Map
	// raises coalesces AppendAt's max-seq raises per conversation.
	raises maxRaises
}

// Open returns a Backend on the tables under o.Prefix; ErrNoTables when one
// is missing.
func Open(ctx context.Context, o Options) (*Backend, error) {
	if o.DynamoDB == nil || o.Redis == nil {
		return nil, errors.New("dynamostore: a DynamoDB client and a Redis client are required")
	}
	if err := checkTables(ctx, o.DynamoDB, o.Prefix); err != nil {
		return nil, err
	}
	return &Backend{db: o.DynamoDB, redis: o.Redis, prefix: o.Prefix, blobs: o.Blobs}, nil
}

// Close implements store.Backend: later calls fail with store.ErrClosed.
// Every write has returned by then (none is queued); the clients belong
// to the caller.
func (s *Backend) Close() error {
	s.closed.Store(true)
	return nil
}

func (s *Backend) checkOpen() error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return nil
}

// table returns a table's full name.
func (s *Backend) table(t string) *string { return aws.String(s.prefix + t) }

// conditionFailed reports a conditional write whose condition did not
// hold.
func conditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// getItem reads one item with a strongly consistent read; nil when
// absent.
func (s *Backend) getItem(ctx context.Context, t string, key item) (item, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: s.table(t), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", t, err)
	}
	if out.Item == nil {
		return nil, nil
	}
	return item(out.Item), nil
}

// query runs q to the end of its pages or until max items (0: no bound)
// and returns the items.
func (s *Backend) query(ctx context.Context, q *dynamodb.QueryInput, max int) ([]item, error) {
	var out []item
	q.ConsistentRead = aws.Bool(q.IndexName == nil || isLocalIndex(*q.IndexName))
	for {
		if max > 0 {
			q.Limit = aws.Int32(int32(max - len(out)))
		}
		page, err := s.db.Query(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("query %s: %w", aws.ToString(q.TableName), err)
		}
		for _, it := range page.Items {
			out = append(out, item(it))
		}
		if page.LastEvaluatedKey == nil || (max > 0 && len(out) >= max) {
			return out, nil
		}
		q.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

func isLocalIndex(name string) bool {
	return name == ixByList || name == ixTimedMutes
}

// batchKey is one key of a batch read.
type batchKey struct {
	table string
	key   item
	id    string // identifies the key among the batch's (deduplicated)
}

// batchGet reads many items with strongly consistent reads, 100 keys a
// request, and returns them by batchKey.id (absent keys missing).
func (s *Backend) batchGet(ctx context.Context, keys []batchKey) (map[string]item, error) {
	out := map[string]item{}
	seen := map[string]bool{}
	var uniq []batchKey
	for _, k := range keys {
		if !seen[k.table+"\x00"+k.id] {
			seen[k.table+"\x00"+k.id] = true
			uniq = append(uniq, k)
		}
	}
	// A response item is matched to its key by the key's attributes.
	names := map[string][]string{}
	ids := map[string]string{}
	for _, k := range uniq {
		if names[k.table] == nil {
			for n := range k.key {
				names[k.table] = append(names[k.table], n)
			}
			slices.Sort(names[k.table])
		}
		ids[keyString(k.table, names[k.table], k.key)] = k.id
	}
	for len(uniq) > 0 {
		chunk := uniq[:min(100, len(uniq))]
		req := map[string]types.KeysAndAttributes{}
		for _, k := range chunk {
			ka := req[s.prefix+k.table]
			ka.ConsistentRead = aws.Bool(true)
			ka.Keys = append(ka.Keys, k.key)
			req[s.prefix+k.table] = ka
		}
		for attempt := 0; len(req) > 0; attempt++ {
			if attempt > 8 {
				return nil, errors.New("batch read: keys left unprocessed (throttled)")
			}
			res, err := s.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
			if err != nil {
				return nil, fmt.Errorf("batch read: %w", err)
			}
			for table, items := range res.Responses {
				t := table[len(s.prefix):]
				for _, it := range items {
					out[ids[keyString(t, names[t], it)]] = it
				}
			}
			req = res.UnprocessedKeys
		}
		uniq = uniq[len(chunk):]
	}
	return out, nil
}

// keyString identifies an item of table by its key attributes names.
func keyString(table string, names []string, it item) string {
	var b strings.Builder
	b.WriteString(table)
	for _, n := range names {
		b.WriteByte(0)
		switch v := it[n].(type) {
		case *types.AttributeValueMemberS:
			b.WriteString(v.Value)
		case *types.AttributeValueMemberN:
			b.WriteString(v.Value)
		}
	}
	return b.String()
}

// Keys of the tables.
func convKey(conv string) item             { return item{aConv: strV(conv)} }
func msgKey(conv string, seq int64) item   { return item{aConv: strV(conv), aSeq: numV(seq)} }
func msgIDKey(conv, msgID string) item     { return item{aConv: strV(conv), aMsgID: strV(msgID)} }
func userConvKey(user, conv string) item   { return item{aUser: strV(user), aConv: strV(conv)} }
func pendingKey(user, conv string) item    { return item{aReceiver: strV(user), aConv: strV(conv)} }
func userItemKey(user, what string) item   { return item{aUser: strV(user), aItem: strV(what)} }
func groupKeyKey(creator, key string) item { return item{aCreator: strV(creator), aKey: strV(key)} }
func seqID(conv string, seq int64) string  { return conv + "\x00" + fmt.Sprint(seq) }
