package relay

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/imcore/im/server/hub"
)

// publishBatch bounds the pushes routed in one pass: one pipelined round
// trip looks up their users' nodes, then one request to each node carries
// its share.
const publishBatch = 256

// outgoing is a push queued for the other nodes of user, but the device
// skip of one of them; a non-nil done marks a flush instead, closed once
// everything queued before it is routed.
type outgoing struct {
	user string
	push hub.Push
	skip hub.Elsewhere
	done chan struct{}
}

// publishLoop routes the queued pushes in batches, in queue order.
func (r *Relay) publishLoop() {
	defer r.wg.Done()
	batch := make([]outgoing, 0, publishBatch)
	for {
		select {
		case <-r.stop:
			return
		case o := <-r.queue:
			batch = append(batch, o)
		}
	more:
		for len(batch) < publishBatch {
			select {
			case o := <-r.queue:
				batch = append(batch, o)
			default:
				break more
			}
		}
		for _, o := range batch {
			r.queuedBytes.Add(-int64(len(o.push.Frame)))
		}
		r.route(batch)
		clear(batch)
		batch = batch[:0]
	}
}

// route publishes each push of batch to every other node listed for its
// user. A push whose lookup or publish fails is dropped and counted.
func (r *Relay) route(batch []outgoing) {
	var pushes []outgoing
	for _, o := range batch {
		if o.done == nil {
			pushes = append(pushes, o)
		}
	}
	if len(pushes) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
		if err := r.publish(ctx, pushes); err != nil {
			r.log.Warn("relay: pushes to other nodes dropped", "pushes", len(pushes), "err", err)
		}
		cancel()
	}
	for _, o := range batch {
		if o.done != nil {
			close(o.done)
		}
	}
}

func (r *Relay) publish(ctx context.Context, pushes []outgoing) error {
	lookups := make(map[string]*redis.StringSliceCmd, len(pushes))
	_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, o := range pushes {
			if lookups[o.user] == nil {
				lookups[o.user] = r.nodesCmd(ctx, p, o.user)
			}
		}
		return nil
	})
	r.routed.Add(int64(len(pushes)))
	if err != nil {
		r.dropped.Add(int64(len(pushes)))
		return fmt.Errorf("look up presence: %w", err)
	}
	byNode := map[string][]hub.Delivery{}
	for _, o := range pushes {
		for _, node := range lookups[o.user].Val() {
			if node == r.node {
				continue
			}
			d := hub.Delivery{User: o.user, Conv: o.push.Conv, Seq: o.push.Seq, Frame: o.push.Frame}
			if o.skip.Node == node && o.skip.UserID == o.user {
				d.Skip = o.skip.DeviceName
			}
			byNode[node] = append(byNode[node], d)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(byNode))
	for node, batch := range byNode {
		wg.Go(func() {
			if err := r.send(ctx, node, batch); err != nil {
				r.dropped.Add(int64(len(batch)))
				errs <- err
				return
			}
			r.published.Add(int64(len(batch)))
		})
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

// flush waits until every push queued before it has been routed.
func (r *Relay) flush(ctx context.Context) error {
	done := make(chan struct{})
	select {
	case r.queue <- outgoing{done: done}:
	case <-ctx.Done():
		return fmt.Errorf("relay: flush: %w", ctx.Err())
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("relay: flush: %w", ctx.Err())
	}
}
