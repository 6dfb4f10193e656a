package metrics

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	smithymiddleware "github.com/aws/smithy-go/middleware"
)

// askCapacity asks a DynamoDB call to report the capacity it consumed
// (ReturnConsumedCapacity TOTAL) unless its caller asked already; the
// calls that cannot report it are left alone.
func askCapacity(params any) {
	const total = types.ReturnConsumedCapacityTotal
	switch in := params.(type) {
	case *dynamodb.PutItemInput:
		if in.ReturnConsumedCapacity == "" {
			in.ReturnConsumedCapacity = total
		}
	case *dynamodb.UpdateItemInput:
		if in.ReturnConsumedCapacity == "" {
			in.ReturnConsumedCapacity = total
		}
	case *dynamodb.DeleteItemInput:
		if in.ReturnConsumedCapacity == "" {
			in.ReturnConsumedCapacity = total
		}
	case *dynamodb.BatchWriteItemInput:
		if in.ReturnConsumedCapacity == "" {
			in.ReturnConsumedCapacity = total
		}
	case *dynamodb.GetItemInput:
		if in.ReturnConsumedCapacity == "" {
			in.ReturnConsumedCapacity = total
		}
	case *dynamodb.BatchGetItemInput:
		if in.ReturnConsumedCapacity == "" {
			in.ReturnConsumedCapacity = total
		}
	case *dynamodb.QueryInput:
		if in.ReturnConsumedCapacity == "" {
			in.ReturnConsumedCapacity = total
		}
	}
}

// consumed returns the write and read capacity units a call's output
// reports.
func consumed(result any) (write, read float64) {
	switch out := result.(type) {
	case *dynamodb.PutItemOutput:
		write += units(out.ConsumedCapacity)
	case *dynamodb.UpdateItemOutput:
		write += units(out.ConsumedCapacity)
	case *dynamodb.DeleteItemOutput:
		write += units(out.ConsumedCapacity)
	case *dynamodb.BatchWriteItemOutput:
		for i := range out.ConsumedCapacity {
			write += units(&out.ConsumedCapacity[i])
		}
	case *dynamodb.GetItemOutput:
		read += units(out.ConsumedCapacity)
	case *dynamodb.BatchGetItemOutput:
		for i := range out.ConsumedCapacity {
			read += units(&out.ConsumedCapacity[i])
		}
	case *dynamodb.QueryOutput:
		read += units(out.ConsumedCapacity)
	}
	return write, read
}

// units is a call's consumed capacity units on one table and its indexes.
func units(cc *types.ConsumedCapacity) float64 {
	if cc == nil {
		return 0
	}
	return deref(cc.CapacityUnits)
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// capacityMiddleware asks every call for its consumed capacity and counts
// it.
func (c *Calls) capacityMiddleware() smithymiddleware.InitializeMiddleware {
	return smithymiddleware.InitializeMiddlewareFunc("imCountCapacity",
		func(ctx context.Context, in smithymiddleware.InitializeInput, next smithymiddleware.InitializeHandler) (smithymiddleware.InitializeOutput, smithymiddleware.Metadata, error) {
			askCapacity(in.Parameters)
			out, md, err := next.HandleInitialize(ctx, in)
			if table := writtenTable(in.Parameters); table != "" {
				c.itemWrites.WithLabelValues(table, writeOutcome(err)).Inc()
			}
			if err == nil {
				w, r := consumed(out.Result)
				if w > 0 {
					c.writeUnits.Add(w)
				}
				if r > 0 {
					c.readUnits.Add(r)
				}
			}
			return out, md, err
		})
}

// writtenTable is the table a single-item write goes to ("" for any other
// call).
func writtenTable(params any) string {
	var t *string
	switch in := params.(type) {
	case *dynamodb.PutItemInput:
		t = in.TableName
	case *dynamodb.UpdateItemInput:
		t = in.TableName
	case *dynamodb.DeleteItemInput:
		t = in.TableName
	}
	if t == nil {
		return ""
	}
	return *t
}

// writeOutcome names how a single-item write ended: written, refused by
// its condition (the row was already as new: a call that changed
// nothing), or failed.
func writeOutcome(err error) string {
	var cond *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return "written"
	case errors.As(err, &cond):
		return "condition_failed"
	default:
		return "error"
	}
}
