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

// presenceArgs is what a node tells the nodes watching a user: its
// devices there came (Online) or went (at LastSeen).
type presenceArgs struct {
	User     string `json:"user"`
	Online   bool   `json:"online"`
	LastSeen int64  `json:"last_seen,omitempty"`
}

// OnPresence has told called with what other nodes tell this one of the
// users watched here (mPresence).
func (r *Router) OnPresence(told func(user string, online bool, lastSeen int64)) {
	r.presenceMu.Lock()
	r.told = told
	r.presenceMu.Unlock()
}

// SendPresence tells node (its id) that user's devices here came or went.
func (r *Router) SendPresence(ctx context.Context, node, user string, online bool, lastSeen int64) error {
	addr := r.nodeAddr(node)
	if addr == "" {
		return fmt.Errorf("presence to node %s: not a live node", node)
	}
	req, err := request(barrierStream(), mPresence, presenceArgs{User: user, Online: online, LastSeen: lastSeen})
	if err != nil {
		return err
	}
	raw, err := r.pool.Forward(ctx, addr, req)
	if err != nil {
		return fmt.Errorf("presence to node %s: %w", node, err)
	}
	return decodeAnswer(raw, nil)
}

// presenceTold serves mPresence.
func (r *Router) presenceTold(raw json.RawMessage) error {
	var a presenceArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return err
	}
	r.presenceMu.Lock()
	told := r.told
	r.presenceMu.Unlock()
	if told != nil {
		told(a.User, a.Online, a.LastSeen)
	}
	return nil
}

// nodeAddr returns the address of live node id, "" when it is not one.
func (r *Router) nodeAddr(id string) string {
	s := r.ownership()
	if s == nil || r.pool == nil {
		return ""
	}
	for _, n := range s.Nodes() {
		if n.ID == id {
			return n.Addr
		}
	}
	return ""
}
