package rediscache

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/imcore/im/internal/testengines"
	"github.com/imcore/im/server/store/memstore"
)

// testRedis returns a client of the test Redis and a prefix no other test
// uses; the test's keys are deleted when it ends.
func testRedis(t testing.TB) (*redis.Client, string) {
	t.Helper()
	opt, err := redis.ParseURL(testengines.Redis(t))
	if err != nil {
		t.Fatalf("redis url: %v", err)
	}
	rdb := redis.NewClient(opt)
	prefix := testengines.Prefix(t)
	t.Cleanup(func() {
		ctx := context.Background()
		iter := rdb.Scan(ctx, 0, prefix+"*", 500).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
		rdb.Close()
	})
	return rdb, prefix
}

// newTestCache returns a cache over a fresh memstore, and the memstore.
func newTestCache(t testing.TB, opts ...Option) (*Cache, *memstore.Store, *redis.Client) {
	t.Helper()
	rdb, prefix := testRedis(t)
	inner := memstore.New()
	c := New(inner, rdb, prefix, opts...)
	t.Cleanup(func() { c.Close() })
	return c, inner, rdb
}
