package dynamostore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/imcore/im/internal/testservices"
)

// BenchmarkDynamoDBCeiling measures the DynamoDB service alone (dynalite in
// the tests), on a table of its own: what it answers at most, to set the
// scaled-out deployment's figures against on the same day.
//
//	go test -run '^$' -bench DynamoDBCeiling -benchtime 5s ./server/store/dynamostore/
//
// conditional-update: 16 callers each doing conditional UpdateItems;
// batch-write: 16 callers each writing 25 items per BatchWriteItem.
func BenchmarkDynamoDBCeiling(b *testing.B) {
	e := testServices(b)
	table := testservices.Prefix(b) + "ceiling"
	ctx := context.Background()
	_, err := e.db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("k"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("k"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		e.db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	if err := dynamodb.NewTableExistsWaiter(e.db).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, time.Minute); err != nil {
		b.Fatal(err)
	}
	const callers = 16
	parallelism := max(1, callers/runtime.GOMAXPROCS(0))

	b.Run("conditional-update", func(b *testing.B) {
		b.SetParallelism(parallelism)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_, err := e.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
					TableName:                 aws.String(table),
					Key:                       item{"k": strV(fmt.Sprint("u", rand.IntN(10_000)))},
					UpdateExpression:          aws.String("SET n = if_not_exists(n, :zero) + :one"),
					ConditionExpression:       aws.String("attribute_not_exists(n) OR n >= :zero"),
					ExpressionAttributeValues: item{":zero": numV(0), ":one": numV(1)},
				})
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
	})

	b.Run("batch-write", func(b *testing.B) {
		const perCall = 25
		b.SetParallelism(parallelism)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				base := rand.IntN(1_000_000) * perCall // distinct keys in one call
				reqs := make([]types.WriteRequest, perCall)
				for i := range reqs {
					reqs[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: item{
						"k": strV(fmt.Sprint("b", base+i)), "n": numV(int64(i)),
					}}}
				}
				in := map[string][]types.WriteRequest{table: reqs}
				for len(in) > 0 {
					out, err := e.db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: in})
					if err != nil {
						b.Error(err)
						return
					}
					in = out.UnprocessedItems
				}
			}
		})
		b.ReportMetric(float64(b.N*perCall)/b.Elapsed().Seconds(), "items/s")
	})
}
