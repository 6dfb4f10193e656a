package dynamostore

import (
	"context"
	"fmt"
)

// locksUser holds, in the users table, the record that the deployment's
// locks were used (not a valid user id, so never a user's).
const locksUser = "#locks"

// FirstLockUse reports whether the deployment's locks were never used
// before, and records that they now are. The locks live in Redis: when
// Redis lost them (a flush, a restart without persistence) they must not
// be granted again until every live holder took its own back, but a
// deployment that never held one need not wait (distlock.WithFirstUse).
func (s *Store) FirstLockUse(ctx context.Context) (bool, error) {
	if err := s.checkOpen(); err != nil {
		return false, err
	}
	first, err := s.put(ctx, tUsers, userItemKey(locksUser, "used"), "attribute_not_exists(#u)", map[string]string{"#u": aUser}, nil)
	if err != nil {
		return false, fmt.Errorf("record the use of the locks: %w", err)
	}
	return first, nil
}
