package relay

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/imcore/im/server/hub"
)

// publishBatch bounds the pushes routed in one pass: one pipelined round
// trip looks up their users' nodes, a second publishes them.
const publishBatch = 256

// outgoing is a push queued for the other nodes of user; a non-nil done
// marks a flush instead, closed once everything queued before it is routed.
type outgoing struct {
	user string
	push hub.Push
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
	var sent []*redis.IntCmd
	_, err = r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, o := range pushes {
			var msg []byte
			for _, node := range lookups[o.user].Val() {
				if node == r.node {
					continue
				}
				if msg == nil {
					msg = encode(o.user, o.push)
				}
				sent = append(sent, p.Publish(ctx, r.channel(node), msg))
			}
		}
		return nil
	})
	if len(sent) == 0 {
		return nil // an empty pipeline sends nothing
	}
	failed := 0
	for _, c := range sent {
		if c.Err() != nil {
			failed++
		}
	}
	r.published.Add(int64(len(sent) - failed))
	r.dropped.Add(int64(failed))
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	return nil
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
