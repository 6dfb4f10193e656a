package dynamostore

import (
	"context"
	"encoding/json"
	"fmt"

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

// Person implements store.Backend.
func (s *Backend) Person(ctx context.Context, user string) (store.Person, error) {
	if err := s.checkOpen(); err != nil {
		return store.Person{}, err
	}
	p := store.Person{Settings: protocol.DefaultSettings()}
	it, err := s.getItem(ctx, tUsers, userItemKey(user, "settings"))
	if err != nil {
		return store.Person{}, fmt.Errorf("settings of %s: %w", user, err)
	}
	if raw := it.str(aSettings); raw != "" {
		if err := json.Unmarshal([]byte(raw), &p.Settings); err != nil {
			return store.Person{}, fmt.Errorf("settings of %s: %w", user, err)
		}
		if p.Settings.Blocked == nil {
			p.Settings.Blocked = []string{}
		}
	}
	seen, err := s.getItem(ctx, tUsers, userItemKey(user, "last_seen"))
	if err != nil {
		return store.Person{}, fmt.Errorf("last seen of %s: %w", user, err)
	}
	p.LastSeen = seen.num(aLastSeenAt)
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
