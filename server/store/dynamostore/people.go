package dynamostore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// A user's settings are one item of the users table ("settings": the
// protocol.UserSettings as JSON), and when its last device went away
// another ("last_seen"), so that neither write touches the other.
const (
	aSettings   = "settings"
	aLastSeenAt = "at"
)

// Person implements store.Backend: both items in one query of the
// user's partition of the users table.
func (s *Backend) Person(ctx context.Context, user string) (store.Person, error) {
	if err := s.checkOpen(); err != nil {
		return store.Person{}, err
	}
	p := store.Person{Settings: protocol.DefaultSettings()}
	items, err := s.query(ctx, &dynamodb.QueryInput{
		TableName:                 s.table(tUsers),
		KeyConditionExpression:    aws.String("#u = :u AND #i BETWEEN :a AND :z"),
		ExpressionAttributeNames:  map[string]string{"#u": aUser, "#i": aItem},
		ExpressionAttributeValues: item{":u": strV(user), ":a": strV("last_seen"), ":z": strV("settings")},
	}, 0)
	if err != nil {
		return store.Person{}, fmt.Errorf("settings of %s: %w", user, err)
	}
	for _, it := range items {
		switch it.str(aItem) {
		case "settings":
			if err := json.Unmarshal([]byte(it.str(aSettings)), &p.Settings); err != nil {
				return store.Person{}, fmt.Errorf("settings of %s: %w", user, err)
			}
			if p.Settings.Blocked == nil {
				p.Settings.Blocked = []string{}
			}
		case "last_seen":
			p.LastSeen = it.num(aLastSeenAt)
		}
	}
	return p, nil
}

// PutSettings implements store.Backend.
func (s *Backend) PutSettings(ctx context.Context, user string, set protocol.UserSettings) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	raw, err := json.Marshal(set)
	if err != nil {
		return err
	}
	it := userItemKey(user, "settings")
	it[aSettings] = strV(string(raw))
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: s.table(tUsers), Item: it}); err != nil {
		return fmt.Errorf("put the settings of %s: %w", user, err)
	}
	return nil
}

// PutLastSeen implements store.Backend.
func (s *Backend) PutLastSeen(ctx context.Context, user string, at int64) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	it := userItemKey(user, "last_seen")
	it[aLastSeenAt] = numV(at)
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: s.table(tUsers), Item: it}); err != nil {
		return fmt.Errorf("put the last seen of %s: %w", user, err)
	}
	return nil
}
