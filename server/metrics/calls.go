package metrics

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	smithymiddleware "github.com/aws/smithy-go/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// Calls counts what a node of the scaled-out deployment asks of the
// services the nodes share: Redis round trips and commands, DynamoDB calls
// by operation. Divided by the messages sent, they are the cost of a
// message.
type Calls struct {
	redisTrips    prometheus.Counter
	redisCommands *prometheus.CounterVec
	dynamo        *prometheus.CounterVec
	writeUnits    prometheus.Counter
	readUnits     prometheus.Counter
	itemWrites    *prometheus.CounterVec
}

// NewCalls returns zeroed counters.
func NewCalls() *Calls {
	return &Calls{
		redisTrips: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "im_redis_round_trips_total",
			Help: "Round trips to Redis (a pipeline is one).",
		}),
		redisCommands: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "im_redis_commands_total",
			Help: "Redis commands sent, by command.",
		}, []string{"command"}),
		dynamo: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "im_dynamodb_calls_total",
			Help: "DynamoDB API calls, by operation (retries included).",
		}, []string{"operation"}),
		writeUnits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "im_dynamodb_write_units_total",
			Help: "DynamoDB write capacity units consumed, as DynamoDB reports them.",
		}),
		readUnits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "im_dynamodb_read_units_total",
			Help: "DynamoDB read capacity units consumed, as DynamoDB reports them.",
		}),
		itemWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "im_dynamodb_item_writes_total",
			Help: "DynamoDB single-item writes (PutItem, UpdateItem, DeleteItem) by table and outcome: written, condition_failed (the row was already as new), error.",
		}, []string{"table", "outcome"}),
	}
}

// Collectors returns the counters, to register.
func (c *Calls) Collectors() []prometheus.Collector {
	return []prometheus.Collector{c.redisTrips, c.redisCommands, c.dynamo, c.writeUnits, c.readUnits, c.itemWrites}
}

// RedisHook counts a client's round trips and commands (redis.Client's
// AddHook).
func (c *Calls) RedisHook() redis.Hook { return redisHook{c} }

type redisHook struct{ c *Calls }

func (h redisHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h redisHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.c.redisTrips.Inc()
		h.c.redisCommands.WithLabelValues(cmd.Name()).Inc()
		return next(ctx, cmd)
	}
}

func (h redisHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.c.redisTrips.Inc()
		for _, cmd := range cmds {
			h.c.redisCommands.WithLabelValues(cmd.Name()).Inc()
		}
		return next(ctx, cmds)
	}
}

// DynamoDBOption counts a DynamoDB client's calls by operation
// (dynamodb.NewFromConfig's options), every attempt of a retried call,
// and the capacity units the calls consumed (each call is asked to report
// them).
func (c *Calls) DynamoDBOption() func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *smithymiddleware.Stack) error {
			return stack.Finalize.Add(smithymiddleware.FinalizeMiddlewareFunc("imCountCalls",
				func(ctx context.Context, in smithymiddleware.FinalizeInput, next smithymiddleware.FinalizeHandler) (smithymiddleware.FinalizeOutput, smithymiddleware.Metadata, error) {
					c.dynamo.WithLabelValues(middleware.GetOperationName(ctx)).Inc()
					return next.HandleFinalize(ctx, in)
				}), smithymiddleware.After)
		})
		o.APIOptions = append(o.APIOptions, func(stack *smithymiddleware.Stack) error {
			return stack.Initialize.Add(c.capacityMiddleware(), smithymiddleware.After)
		})
	}
}
