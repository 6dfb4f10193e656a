package dynamostore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
)

// deploymentUser holds, in the users table, what the deployment's nodes
// share (not a valid user id, so never a user's).
const deploymentUser = "#deployment"

// aSecret is the attribute of a shared secret.
const aSecret = "secret"

// SharedSecret returns the deployment's secret called name, made (from
// fresh random bytes) by the first node that asks: nodes that share the
// tables share it, and it outlives everything Redis loses.
func (s *Backend) SharedSecret(ctx context.Context, name string) (string, error) {
	if err := s.checkOpen(); err != nil {
		return "", err
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	it := userItemKey(deploymentUser, "secret#"+name)
	it[aSecret] = strV(hex.EncodeToString(b[:]))
	if _, err := s.put(ctx, tUsers, it, "attribute_not_exists(#u)", map[string]string{"#u": aUser}, nil); err != nil {
		return "", fmt.Errorf("the secret %s: %w", name, err)
	}
	got, err := s.getItem(ctx, tUsers, userItemKey(deploymentUser, "secret#"+name))
	if err != nil || got == nil {
		return "", errors.Join(fmt.Errorf("the secret %s: not stored", name), err)
	}
	return got.str(aSecret), nil
}

// FirstUse reports whether the deployment never used what before, and
// records that it now does: durable, it tells a fresh deployment from one
// whose Redis lost its keys (ownership.Config.FirstUse).
func (s *Backend) FirstUse(ctx context.Context, what string) (bool, error) {
	if err := s.checkOpen(); err != nil {
		return false, err
	}
	first, err := s.put(ctx, tUsers, userItemKey(deploymentUser, "used#"+what), "attribute_not_exists(#u)", map[string]string{"#u": aUser}, nil)
	if err != nil {
		return false, fmt.Errorf("record the use of %s: %w", what, err)
	}
	return first, nil
}
