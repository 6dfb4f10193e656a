// Package testservices finds the services the scaled-out deployment runs on
// (Redis, a DynamoDB endpoint, an S3-compatible endpoint) for tests.
// scripts/test.sh starts them on free loopback ports and names them in
// the environment:
//
//	IM_TEST_REDIS     a redis:// URL
//	IM_TEST_DYNAMODB  a DynamoDB endpoint (dynalite)
//	IM_TEST_S3        an S3 endpoint (s3rver), with AWS_ACCESS_KEY_ID and
//	                  AWS_SECRET_ACCESS_KEY set to what it accepts
//
// A test that needs an engine that is not named is skipped, unless
// IM_TEST_SERVICES_REQUIRED is set (as scripts/test.sh does), when it fails:
// the suite never passes by skipping what it was meant to run.
package testservices

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Redis returns the test Redis URL.
func Redis(t testing.TB) string { return endpoint(t, "IM_TEST_REDIS") }

// DynamoDB returns the test DynamoDB endpoint.
func DynamoDB(t testing.TB) string { return endpoint(t, "IM_TEST_DYNAMODB") }

// S3 returns the test S3 endpoint.
func S3(t testing.TB) string { return endpoint(t, "IM_TEST_S3") }

// Available reports whether every engine is named, for code that picks a
// backend rather than skipping.
func Available() bool {
	return os.Getenv("IM_TEST_REDIS") != "" && os.Getenv("IM_TEST_DYNAMODB") != "" && os.Getenv("IM_TEST_S3") != ""
}

// Prefix returns a name prefix no other test uses (tables, Redis keys,
// buckets): lower-case letters and digits, ending in "-".
func Prefix(t testing.TB) string {
	var b [5]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "t" + hex.EncodeToString(b[:]) + "-"
}

func endpoint(t testing.TB, name string) string {
	t.Helper()
	v := strings.TrimSpace(os.Getenv(name))
	if v != "" {
		return v
	}
	if os.Getenv("IM_TEST_SERVICES_REQUIRED") != "" {
		t.Fatalf("%s is not set but IM_TEST_SERVICES_REQUIRED is: start the services with scripts/services.sh", name)
	}
	t.Skipf("%s is not set: run scripts/test.sh (or scripts/services.sh) to start the services", name)
	return ""
}

// RedisClient returns a client of the test Redis, closed when the test
// ends, and a key prefix no other test uses.
func RedisClient(t testing.TB) (*redis.Client, string) {
	t.Helper()
	opts, err := redis.ParseURL(Redis(t))
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { rdb.Close() })
	return rdb, Prefix(t)
}
