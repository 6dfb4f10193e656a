package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"
)

// The tables, by their names after the prefix (see doc.go for each
// layout).
const (
	tMessages   = "messages"
	tMessageIDs = "message_ids"
	tConvs      = "conversations"
	tStatus     = "message_status"
	tPending    = "pending_deliveries"
	tSessions   = "sessions"
	tUsers      = "users"
	tFormer     = "former_members"
	tGroupKeys  = "group_keys"
)

// The secondary indexes.
const (
	ixUnrepaired = "unrepaired"    // conversations: sparse on behind
	ixByList     = "by_list"       // sessions LSI: list_active
	ixTimedMutes = "by_timed_mute" // sessions LSI: sparse on timed_mute
	ixByRev      = "by_rev"        // users GSI: sparse on rev_part, rev
)

// Attribute names.
const (
	aConv     = "conversation_id"
	aSeq      = "seq"
	aMsgID    = "msg_id"
	aSender   = "sender"
	aBody     = "body"
	aClientTS = "client_ts"
	aServerTS = "server_ts"
	aKind     = "kind"
	aS3Ref    = "s3_ref"
	aChange   = "group_change"
	aReplyTo  = "reply_to"
	aRefSeq   = "ref"
	aState    = "state"

	aReservedAt = "reserved_at"

	aTitle      = "title"
	aVersion    = "version"
	aMaxSeq     = "max_seq"
	aDerivedSeq = "derived_seq"
	aTickDeliv  = "tick_delivered"
	aTickRead   = "tick_read"
	aMembers    = "members"
	aBehind     = "behind"
	aPendingCh  = "pending_change"

	aUser      = "user_id"
	aDelivered = "last_delivered_seq"
	aRead      = "last_read_seq"
	aJoined    = "joined_seq"
	aReceiver  = "receiver_id"
	aFirst     = "first_undelivered_seq"

	aActiveTS   = "active_ts"
	aListActive = "list_active"
	aTimedMute  = "timed_mute"

	aItem     = "item"
	aCategory = "category"
	aSubBiz   = "sub_biz"
	aEpoch    = "epoch"
	aFence    = "fence_epoch" // the lease epoch a session was written under
	aRev      = "rev"
	aRevPart  = "rev_part"

	aCreator = "creator"
	aKey     = "group_key"
)

// allTables lists the tables in creation order.
var allTables = []string{tMessages, tMessageIDs, tConvs, tStatus, tPending, tSessions, tUsers, tFormer, tGroupKeys}

// TableNames returns every table name under prefix.
func TableNames(prefix string) []string {
	out := make([]string, len(allTables))
	for i, t := range allTables {
		out[i] = prefix + t
	}
	return out
}

// ErrNoTables says a table is missing: run "imserver migrate".
var ErrNoTables = errors.New(`DynamoDB tables missing: run "imserver migrate" with the same store flags`)

// Migrate creates the tables under prefix that do not exist, waits until
// each is ACTIVE, and returns the names it created. It is idempotent.
func Migrate(ctx context.Context, db *dynamodb.Client, prefix string) ([]string, error) {
	var created []string
	for _, t := range allTables {
		name := prefix + t
		exists, err := tableExists(ctx, db, name)
		if err != nil {
			return created, err
		}
		if exists {
			continue
		}
		in := tableDefinition(t)
		in.TableName = aws.String(name)
		in.BillingMode = types.BillingModePayPerRequest
		if _, err := db.CreateTable(ctx, in); err != nil {
			var inUse *types.ResourceInUseException
			if !errors.As(err, &inUse) {
				return created, fmt.Errorf("create table %s: %w", name, err)
			}
		} else {
			created = append(created, name)
		}
	}
	waiter := dynamodb.NewTableExistsWaiter(db, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 100*time.Millisecond, 2*time.Second
	})
	for _, name := range TableNames(prefix) {
		if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 5*time.Minute); err != nil {
			return created, fmt.Errorf("wait for table %s: %w", name, err)
		}
	}
	return created, nil
}

// checkTables returns ErrNoTables (wrapped, naming them) when a table
// under prefix is missing.
func checkTables(ctx context.Context, db *dynamodb.Client, prefix string) error {
	names := TableNames(prefix)
	found := make([]bool, len(names))
	g, gctx := errgroup.WithContext(ctx)
	for i, name := range names {
		g.Go(func() error {
			ok, err := tableExists(gctx, db, name)
			found[i] = ok
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	var missing []string
	for i, ok := range found {
		if !ok {
			missing = append(missing, names[i])
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w (%v)", ErrNoTables, missing)
	}
	return nil
}

func tableExists(ctx context.Context, db *dynamodb.Client, name string) (bool, error) {
	_, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	var notFound *types.ResourceNotFoundException
	switch {
	case errors.As(err, &notFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("describe table %s: %w", name, err)
	}
	return true, nil
}

func attrDef(name string, t types.ScalarAttributeType) types.AttributeDefinition {
	return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: t}
}

func keySchema(hash, rangeKey string) []types.KeySchemaElement {
	ks := []types.KeySchemaElement{{AttributeName: aws.String(hash), KeyType: types.KeyTypeHash}}
	if rangeKey != "" {
		ks = append(ks, types.KeySchemaElement{AttributeName: aws.String(rangeKey), KeyType: types.KeyTypeRange})
	}
	return ks
}

// tableDefinition is the key schema and indexes of one table.
func tableDefinition(t string) *dynamodb.CreateTableInput {
	s, n := types.ScalarAttributeTypeS, types.ScalarAttributeTypeN
	keysOnly := &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}
	all := &types.Projection{ProjectionType: types.ProjectionTypeAll}
	in := &dynamodb.CreateTableInput{}
	switch t {
	case tMessages:
		in.AttributeDefinitions = []types.AttributeDefinition{attrDef(aConv, s), attrDef(aSeq, n)}
		in.KeySchema = keySchema(aConv, aSeq)
	case tMessageIDs:
		in.AttributeDefinitions = []types.AttributeDefinition{attrDef(aConv, s), attrDef(aMsgID, s)}
		in.KeySchema = keySchema(aConv, aMsgID)
	case tConvs:
		in.AttributeDefinitions = []types.AttributeDefinition{attrDef(aConv, s), attrDef(aBehind, s)}
		in.KeySchema = keySchema(aConv, "")
		in.GlobalSecondaryIndexes = []types.GlobalSecondaryIndex{{
			IndexName: aws.String(ixUnrepaired), KeySchema: keySchema(aBehind, aConv), Projection: keysOnly,
		}}
	case tStatus, tSessions, tFormer:
		in.AttributeDefinitions = []types.AttributeDefinition{attrDef(aUser, s), attrDef(aConv, s)}
		in.KeySchema = keySchema(aUser, aConv)
		if t == tSessions {
			in.AttributeDefinitions = append(in.AttributeDefinitions,
				attrDef(aListActive, s), attrDef(aTimedMute, n))
			in.LocalSecondaryIndexes = []types.LocalSecondaryIndex{
				{IndexName: aws.String(ixByList), KeySchema: keySchema(aUser, aListActive), Projection: all},
				{IndexName: aws.String(ixTimedMutes), KeySchema: keySchema(aUser, aTimedMute), Projection: keysOnly},
			}
		}
	case tPending:
		in.AttributeDefinitions = []types.AttributeDefinition{attrDef(aReceiver, s), attrDef(aConv, s)}
		in.KeySchema = keySchema(aReceiver, aConv)
	case tUsers:
		in.AttributeDefinitions = []types.AttributeDefinition{attrDef(aUser, s), attrDef(aItem, s), attrDef(aRevPart, s), attrDef(aRev, n)}
		in.KeySchema = keySchema(aUser, aItem)
		in.GlobalSecondaryIndexes = []types.GlobalSecondaryIndex{{
			IndexName: aws.String(ixByRev), KeySchema: keySchema(aRevPart, aRev), Projection: all,
		}}
	case tGroupKeys:
		in.AttributeDefinitions = []types.AttributeDefinition{attrDef(aCreator, s), attrDef(aKey, s)}
		in.KeySchema = keySchema(aCreator, aKey)
	}
	return in
}
