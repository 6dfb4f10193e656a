package routing

import (
	"context"
	"fmt"

	"github.com/imcore/im/server/hub"
)

// Pushes between nodes travel on the node links, the one channel between
// nodes: the owner that made them sends each node holding devices of
// their users (presence, package relay, says which) one request per
// batch, and that node delivers them to its devices.

// SendPushes delivers batch to the devices of node (its id), over the
// link to it.
func (r *Router) SendPushes(ctx context.Context, node string, batch []hub.Delivery) error {
	addr := r.nodeAddr(node)
	if addr == "" {
		return fmt.Errorf("pushes to node %s: not a live node", node)
	}
	req, err := request(barrierStream(), mPushes, batch)
	if err != nil {
		return err
	}
	raw, err := r.pool.Forward(ctx, addr, req)
	if err != nil {
		return fmt.Errorf("pushes to node %s: %w", node, err)
	}
	return decodeAnswer(raw, nil)
}

// deliver pushes what another node sent to this node's devices.
func (r *Router) deliver(batch []hub.Delivery) {
	if r.local == nil {
		return
	}
	for _, d := range batch {
		r.local.Deliver(d)
	}
}
