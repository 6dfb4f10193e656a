package server

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/imcore/im/server/presence"
	"github.com/imcore/im/server/routing"
)

// watchRegistry is what the relay keeps of presence across nodes.
type watchRegistry interface {
	OnlineElsewhere(ctx context.Context, users []string) (map[string]bool, error)
	Watch(ctx context.Context, user string, on bool) error
	Watchers(ctx context.Context, user string) ([]string, error)
}

// clusterPresence is presence.Elsewhere on a node of several: where
// devices are and who watches whom in Redis (the relay), the news over
// the node links (the Router).
type clusterPresence struct {
	watchRegistry
	router *routing.Router
	log    *slog.Logger
}

var _ presence.Elsewhere = clusterPresence{}

// tellTimeout bounds telling the watching nodes of one change.
const tellTimeout = 2 * time.Second

// Tell implements presence.Elsewhere: the nodes watching user hear of it.
func (c clusterPresence) Tell(ctx context.Context, user string, online bool, lastSeen int64) {
	ctx, cancel := context.WithTimeout(ctx, tellTimeout)
	defer cancel()
	nodes, err := c.Watchers(ctx, user)
	if err != nil {
		c.log.Warn("presence: the watching nodes unread", "user", user, "err", err)
		return
	}
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Go(func() {
			if err := c.router.SendPresence(ctx, n, user, online, lastSeen); err != nil {
				c.log.Debug("presence: a watching node not told", "user", user, "node", n, "err", err)
			}
		})
	}
	wg.Wait()
}
