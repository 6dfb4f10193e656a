package dynamostore

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/imcore/im/server/auth"
)

// revocationsUser holds the revision counter of token revocations in the
// users table (not a valid user id, so never a user's).
const revocationsUser = "#revocations"

// revPart is the one partition of the sparse by_rev index.
const revPart = "r"

// TokenEpoch implements auth.Epochs.
func (s *Backend) TokenEpoch(ctx context.Context, user string) (int64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	it, err := s.getItem(ctx, tUsers, userItemKey(user, "epoch"))
	if err != nil {
		return 0, fmt.Errorf("token epoch of %s: %w", user, err)
	}
	return it.num(aEpoch), nil
}

// RevokeTokens moves user's token epoch on, so that every token minted
// before refuses, and returns the new epoch. It takes a revision from the
// revocation counter first, then moves the epoch with that revision.
func (s *Backend) RevokeTokens(ctx context.Context, user string) (int64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	rev, err := s.addOne(ctx, userItemKey(revocationsUser, "counter"), aRev, nil)
	if err != nil {
		return 0, fmt.Errorf("revoke the tokens of %s: %w", user, err)
	}
	epoch, err := s.addOne(ctx, userItemKey(user, "epoch"), aEpoch, map[string]int64{aRev: rev})
	if err != nil {
		return 0, fmt.Errorf("revoke the tokens of %s: %w", user, err)
	}
	return epoch, nil
}

// addOne adds one to a number attribute (also setting set) and returns
// the new value.
func (s *Backend) addOne(ctx context.Context, key item, attr string, set map[string]int64) (int64, error) {
	names := map[string]string{"#a": attr}
	values := item{":one": numV(1)}
	expr := "ADD #a :one"
	if len(set) > 0 {
		expr = "SET #p = :p"
		names["#p"], values[":p"] = aRevPart, strV(revPart)
		for name, v := range set {
			expr += ", #" + name + " = :" + name
			names["#"+name], values[":"+name] = name, numV(v)
		}
		expr += " ADD #a :one"
	}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: s.table(tUsers), Key: key, UpdateExpression: aws.String(expr),
		ExpressionAttributeNames: names, ExpressionAttributeValues: values, ReturnValues: types.ReturnValueUpdatedNew,
	})
	if err != nil {
		return 0, err
	}
	return item(out.Attributes).num(attr), nil
}

// RevokedSince implements auth.Revocations through the by_rev index.
func (s *Backend) RevokedSince(ctx context.Context, since int64) ([]auth.Revocation, int64, error) {
	if err := s.checkOpen(); err != nil {
		return nil, since, err
	}
	items, err := s.query(ctx, &dynamodb.QueryInput{
		TableName: s.table(tUsers), IndexName: aws.String(ixByRev),
		KeyConditionExpression:    aws.String("#p = :p AND #r > :since"),
		ExpressionAttributeNames:  map[string]string{"#p": aRevPart, "#r": aRev},
		ExpressionAttributeValues: item{":p": strV(revPart), ":since": numV(since)},
	}, 0)
	if err != nil {
		return nil, since, fmt.Errorf("revocations since %d: %w", since, err)
	}
	var out []auth.Revocation
	newest := since
	for _, it := range items {
		out = append(out, auth.Revocation{User: it.str(aUser), Epoch: it.num(aEpoch)})
		newest = max(newest, it.num(aRev))
	}
	return out, newest, nil
}
