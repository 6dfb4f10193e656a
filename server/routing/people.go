package routing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/imcore/im/server/nodelink"
)

// A user's settings change at its owner (frames route to the user's
// shard); every node keeps what it read of them (the conversations'
// owners check blocks and read receipts on every send and read), so the
// owner has every other live node forget them before the change is
// answered: a block is in force on every node once answered. A node that
// cannot be reached has lost its leases by the time it could act again,
// and forgets every kept setting when its shards move (engine.Drop).

// forgetArgs names the user whose settings changed.
type forgetArgs struct {
	User string `json:"user"`
}

// peopleChanged tells every other live node to forget user's settings
// and waits for their answers.
func (r *Router) peopleChanged(ctx context.Context, user string) error {
	s := r.ownership()
	if s == nil || r.pool == nil {
		return nil // alone: the engine's own memory is the only copy
	}
	req, err := request(barrierStream(), mForget, forgetArgs{User: user})
	if err != nil {
		return err
	}
	self := r.selfAddr()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, n := range s.Nodes() {
		if n.Addr == self {
			continue
		}
		wg.Go(func() {
			raw, err := r.pool.Forward(ctx, n.Addr, req)
			if err == nil {
				err = decodeAnswer(raw, nil)
			}
			if err != nil && !errors.Is(err, nodelink.ErrLinkDown) {
				mu.Lock()
				errs = append(errs, fmt.Errorf("node %s: %w", n.ID, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("settings of %s changed, not every node told: %w", user, errors.Join(errs...))
	}
	return nil
}

// forgetPerson serves mForget.
func (r *Router) forgetPerson(raw json.RawMessage) error {
	var a forgetArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return err
	}
	r.eng.ForgetPerson(a.User)
	return nil
}
