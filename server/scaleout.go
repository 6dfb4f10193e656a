package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/redis/go-redis/v9"

	"github.com/imcore/im/server/blob"
	"github.com/imcore/im/server/hub"
	"github.com/imcore/im/server/metrics"
	"github.com/imcore/im/server/relay"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/server/store/dynamostore"
)

// ScaleOut names what the nodes of the scaled-out deployment share:
// DynamoDB tables, a Redis, and optionally a blob store for archived
// bodies.
type ScaleOut struct {
	// DynamoDBEndpoint is a local or compatible service's URL; empty for
	// AWS's endpoint of Region.
	DynamoDBEndpoint, Region string
	// TablePrefix prefixes every table name and Redis key.
	TablePrefix string
	// RedisURL is a redis:// or rediss:// URL (password and TLS through
	// it).
	RedisURL string
	// NodeID names this node in presence; unique per process.
	NodeID string
	// Blob is "" (no archive), a directory or s3://BUCKET; S3Endpoint a
	// compatible server's URL (path-style addressing).
	Blob, S3Endpoint string
	// NodeSecret guards the links between the nodes (empty: one the
	// nodes share in the tables); Advertise is where the other nodes
	// reach this one (empty: the address it listens on).
	NodeSecret, Advertise string
	// LeaseTTL is how long a node's lease of its shards lasts unless
	// renewed (ownership.DefaultLeaseTTL when zero): how long the shards
	// of a node that died or froze wait for another owner, and how long
	// a request waits on a node that cannot answer.
	LeaseTTL time.Duration
}

// OpenBlobs opens the blob store so names (nil when Blob is empty).
func (so ScaleOut) OpenBlobs(ctx context.Context) (blob.Store, error) {
	if so.Blob == "" {
		return nil, nil
	}
	return blob.Open(ctx, so.Blob, so.S3Endpoint, so.Region)
}

// Migrate creates what the deployment needs and is missing — the tables
// and, for an s3:// blob store, the bucket — and returns what it created.
// Running it again creates nothing.
func (so ScaleOut) Migrate(ctx context.Context) ([]string, error) {
	db, err := dynamostore.NewClient(ctx, so.DynamoDBEndpoint, so.Region)
	if err != nil {
		return nil, err
	}
	created, err := dynamostore.Migrate(ctx, db, so.TablePrefix)
	if err != nil {
		return created, err
	}
	if strings.HasPrefix(so.Blob, "s3://") {
		blobs, err := so.OpenBlobs(ctx)
		if err != nil {
			return created, err
		}
		if b, ok := blobs.(interface{ EnsureBucket(context.Context) error }); ok {
			if err := b.EnsureBucket(ctx); err != nil {
				return created, err
			}
		}
	}
	return created, nil
}

// OpenScaledOut connects to what the nodes share and returns the backend
// and the cluster a node runs with (Config.Backend, Config.Cluster). The
// tables must exist: ErrNoTables says to run migrate.
func OpenScaledOut(ctx context.Context, so ScaleOut, log *slog.Logger) (store.Backend, *Cluster, error) {
	if so.RedisURL == "" {
		return nil, nil, errors.New("the scaled-out store needs -redis (a redis:// URL)")
	}
	if log == nil {
		log = slog.Default()
	}
	opts, err := redis.ParseURL(so.RedisURL)
	if err != nil {
		return nil, nil, fmt.Errorf("-redis: %w", err)
	}
	rdb := redis.NewClient(opts)
	calls := metrics.NewCalls()
	rdb.AddHook(calls.RedisHook())
	fail := func(err error) (store.Backend, *Cluster, error) {
		rdb.Close()
		return nil, nil, err
	}
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fail(fmt.Errorf("redis %s: %w", opts.Addr, err))
	}
	db, err := dynamostore.NewClient(ctx, so.DynamoDBEndpoint, so.Region, calls.DynamoDBOption())
	if err != nil {
		return fail(err)
	}
	blobs, err := so.OpenBlobs(ctx)
	if err != nil {
		return fail(err)
	}
	dyn, err := dynamostore.Open(ctx, dynamostore.Options{DynamoDB: db, Redis: rdb, Prefix: so.TablePrefix, Blobs: blobs})
	if err != nil {
		return fail(err)
	}
	// Each user's owner keeps its sessions in memory as the truth and
	// reads the tables only when it takes the user's shard: the nodes read
	// DynamoDB without a cache in front (see docs/SCALING.md).
	var be store.Backend = dyn
	nodeID := so.NodeID
	if nodeID == "" {
		nodeID = relay.DefaultNodeID()
	}
	table := dynamostore.TableNames(so.TablePrefix)[0]
	// What operators look at (heartbeats, /status, the leases' grace on
	// /metrics) goes through clients of its own, not counted in
	// im_redis_round_trips_total and im_dynamodb_calls_total: those
	// measure what serving messages costs.
	opsRedis := redis.NewClient(opts)
	opsDB, err := dynamostore.NewClient(ctx, so.DynamoDBEndpoint, so.Region)
	if err != nil {
		opsRedis.Close()
		return fail(err)
	}
	secret := so.NodeSecret
	if secret == "" {
		if secret, err = dyn.SharedSecret(ctx, "node-links"); err != nil {
			opsRedis.Close()
			return fail(err)
		}
	}
	owners := &Owners{Redis: opsRedis, Prefix: so.TablePrefix, Secret: secret, Advertise: so.Advertise, LeaseTTL: so.LeaseTTL,
		FirstUse: func(ctx context.Context) (bool, error) { return dyn.FirstUse(ctx, "shard-leases") }}
	cluster := &Cluster{
		NodeID:     nodeID,
		Inspector:  newInspector(so, opsRedis, opsDB, blobs),
		ScaleOut:   so,
		Collectors: calls.Collectors(),
		Owners:     owners,
		Devices: func(local *hub.Hub, send func(ctx context.Context, node string, batch []hub.Delivery) error, lost func(users []string)) (Devices, error) {
			return relay.New(context.Background(), relay.Options{Redis: rdb, NodeID: nodeID, Prefix: so.TablePrefix, Local: local, Send: send, Logger: log, Lost: lost})
		},
		Check: func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			if err := rdb.Ping(ctx).Err(); err != nil {
				return fmt.Errorf("redis: %w", err)
			}
			if _, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}); err != nil {
				return fmt.Errorf("dynamodb: %w", err)
			}
			return nil
		},
		Close: func() error { return errors.Join(opsRedis.Close(), rdb.Close()) },
	}
	return be, cluster, nil
}

// OpenStore opens the tables alone, for the tools that work on them
// beside the nodes (tokens, accounts, archiving): the DynamoDB store on
// its Redis sequencing, and the blob store Blob names. close releases both
// connections.
func (so ScaleOut) OpenStore(ctx context.Context) (st *dynamostore.Backend, close func() error, err error) {
	rdb, db, blobs, err := so.openServices(ctx)
	if err != nil {
		return nil, nil, err
	}
	st, err = dynamostore.Open(ctx, dynamostore.Options{DynamoDB: db, Redis: rdb, Prefix: so.TablePrefix, Blobs: blobs})
	if err != nil {
		rdb.Close()
		return nil, nil, err
	}
	return st, func() error { return errors.Join(st.Close(), rdb.Close()) }, nil
}

// openServices connects to what the deployment shares, for the tools that
// work beside the nodes: a Redis client (the caller closes it), a
// DynamoDB client and the blob store Blob names (nil when none).
func (so ScaleOut) openServices(ctx context.Context) (*redis.Client, *dynamodb.Client, blob.Store, error) {
	if so.RedisURL == "" {
		return nil, nil, nil, errors.New("the scaled-out store needs -redis (a redis:// URL)")
	}
	opts, err := redis.ParseURL(so.RedisURL)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("-redis: %w", err)
	}
	rdb := redis.NewClient(opts)
	db, err := dynamostore.NewClient(ctx, so.DynamoDBEndpoint, so.Region)
	if err != nil {
		rdb.Close()
		return nil, nil, nil, err
	}
	blobs, err := so.OpenBlobs(ctx)
	if err != nil {
		rdb.Close()
		return nil, nil, nil, err
	}
	return rdb, db, blobs, nil
}
