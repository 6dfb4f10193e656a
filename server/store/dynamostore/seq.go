package dynamostore

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/redis/go-redis/v9"
)

// seqKey is the Redis counter of conv's seqs.
func (s *Backend) seqKey(conv string) string { return s.prefix + "seq:" + conv }

// reseedScript raises the counter to at least ARGV[1], then increments
// it: a counter Redis lost (or rolled back) resumes above the newest
// stored seq, and one already higher is left alone.
var reseedScript = redis.NewScript(`
local c = tonumber(redis.call('GET', KEYS[1]) or '0')
local floor = tonumber(ARGV[1])
if c < floor then redis.call('SET', KEYS[1], floor) end
return redis.call('INCR', KEYS[1])`)

// nextSeq returns a fresh seq candidate for conv. A counter that starts
// again at 1 may have been lost: when seq 1 is stored already, the counter
// is re-seeded from the table (a conversation's first appends, racing,
// find seq 1 free and keep it).
func (s *Backend) nextSeq(ctx context.Context, conv string) (int64, error) {
	n, err := s.redis.Incr(ctx, s.seqKey(conv)).Result()
	if err != nil {
		return 0, fmt.Errorf("sequence %s: %w", conv, err)
	}
	if n != 1 {
		return n, nil
	}
	first, err := s.messageItemAt(ctx, conv, 1)
	if err != nil || first == nil {
		return n, err
	}
	return s.reseed(ctx, conv)
}

// reseed returns a seq candidate above the newest stored seq of conv (the
// newest message, or the conversation's max seq when a group change has
// claimed a seq before its message is written).
func (s *Backend) reseed(ctx context.Context, conv string) (int64, error) {
	floor, err := s.storedNewest(ctx, conv)
	if err != nil {
		return 0, err
	}
	return s.reseedFrom(ctx, conv, floor)
}

// reseedFrom returns a seq candidate above floor.
func (s *Backend) reseedFrom(ctx context.Context, conv string, floor int64) (int64, error) {
	n, err := reseedScript.Run(ctx, s.redis, []string{s.seqKey(conv)}, floor).Int64()
	if err != nil {
		return 0, fmt.Errorf("sequence %s: reseed from %d: %w", conv, floor, err)
	}
	return n, nil
}

// storedNewest is the newest seq conv's tables know of.
func (s *Backend) storedNewest(ctx context.Context, conv string) (int64, error) {
	items, err := s.query(ctx, &dynamodb.QueryInput{
		TableName:                 s.table(tMessages),
		KeyConditionExpression:    aws.String("#c = :c"),
		ProjectionExpression:      aws.String("#s"),
		ExpressionAttributeNames:  map[string]string{"#c": aConv, "#s": aSeq},
		ExpressionAttributeValues: item{":c": strV(conv)},
		ScanIndexForward:          aws.Bool(false),
	}, 1)
	if err != nil {
		return 0, fmt.Errorf("newest seq of %s: %w", conv, err)
	}
	var newest int64
	if len(items) > 0 {
		newest = items[0].num(aSeq)
	}
	c, err := s.getItem(ctx, tConvs, convKey(conv))
	if err != nil {
		return 0, err
	}
	return max(newest, c.num(aMaxSeq)), nil
}
