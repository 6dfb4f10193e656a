package relay

import (
	"github.com/redis/go-redis/v9"
)

// subscribeLoop delivers the pushes other nodes publish to this node's
// channel to the local devices of their user. The client reconnects and
// resubscribes by itself after Redis was unreachable, and pings to find a
// connection that died silently; the loop ends when Close closes the
// subscription.
func (r *Relay) subscribeLoop() {
	defer r.wg.Done()
	messages := r.pubsub.Channel(redis.WithChannelSize(1024))
	for m := range messages {
		user, p, err := decode([]byte(m.Payload))
		if err != nil {
			r.log.Warn("relay: dropped a message from another node", "err", err)
			continue
		}
		r.received.Add(1)
		r.local.Push(user, p, nil)
	}
}
