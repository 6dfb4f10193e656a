package main

import (
	"flag"
	"fmt"

	"github.com/imcore/im/server"
)

// Storage kinds of -store.
const (
	storeSQLite   = "sqlite"
	storeDynamoDB = "dynamodb"
)

// storeFlags choose and reach the storage. serve, migrate, token and
// archive take them (migrate ignores every other flag of serve).
type storeFlags struct {
	kind           string
	dynamoEndpoint string
	region         string
	tablePrefix    string
	blobs          *blobFlags
}

// addStoreFlags registers the storage flags on fs.
func addStoreFlags(fs *flag.FlagSet) *storeFlags {
	f := &storeFlags{}
	fs.StringVar(&f.kind, "store", storeSQLite, `"sqlite" (embedded, in the data directory) or "dynamodb" (scaled out: DynamoDB, with -redis)`)
	fs.StringVar(&f.dynamoEndpoint, "dynamodb-endpoint", "", "DynamoDB endpoint URL for a local or compatible engine (empty: AWS's for -region)")
	fs.StringVar(&f.region, "region", "us-east-1", "AWS region of the DynamoDB tables and the S3 bucket (credentials from the standard AWS chain)")
	fs.StringVar(&f.tablePrefix, "table-prefix", "im_", "prefix of every DynamoDB table name (and of the Redis keys), so deployments can share an account")
	f.blobs = addBlobFlags(fs)
	return f
}

// scaledOut reports whether the storage is the scaled-out one.
func (f *storeFlags) scaledOut() bool { return f.kind == storeDynamoDB }

// check refuses a -store that is not known.
func (f *storeFlags) check() error {
	if f.kind != storeSQLite && f.kind != storeDynamoDB {
		return fmt.Errorf("-store %q: want %q or %q", f.kind, storeSQLite, storeDynamoDB)
	}
	return nil
}

// scaleOut is what a node of the scaled-out deployment connects to.
func (f *storeFlags) scaleOut(redisURL, nodeID string) server.ScaleOut {
	return server.ScaleOut{
		DynamoDBEndpoint: f.dynamoEndpoint,
		Region:           f.region,
		TablePrefix:      f.tablePrefix,
		RedisURL:         redisURL,
		NodeID:           nodeID,
		Blob:             f.blobs.spec,
		S3Endpoint:       f.blobs.endpoint,
	}
}
