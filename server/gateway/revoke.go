package gateway

import (
	"context"
	"time"

	"github.com/gorilla/websocket"

	"github.com/imcore/im/server/auth"
	"github.com/imcore/im/server/metrics"
)

// revokedReason is the close reason of a connection whose token was
// revoked while it was connected.
const revokedReason = "token revoked"

// watchRevocations closes, every RevokeCheck, the connections whose token
// was revoked since they said hello, until Shutdown. A revocation made by
// another process (imserver token revoke) thus ends live sessions too, not
// only the next hello. The first look reads every revocation ever made,
// which closes nothing (a hello checks the epoch) but finds the newest.
func (g *Gateway) watchRevocations(r auth.Revocations) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tick := time.NewTicker(g.cfg.RevokeCheck)
	defer tick.Stop()
	var since int64
	for {
		revoked, newest, err := r.RevokedSince(ctx, since)
		if err != nil {
			g.log.Error("reading token revocations failed", "err", err)
		} else {
			since = newest
			for _, rev := range revoked {
				g.closeRevoked(rev)
			}
		}
		select {
		case <-g.stop:
			return
		case <-tick.C:
		}
	}
}

// closeRevoked closes the user's connections authenticated by a token of
// an epoch before rev's.
func (g *Gateway) closeRevoked(rev auth.Revocation) {
	for _, d := range g.hub.DevicesOf(rev.User) {
		c, ok := d.(*conn)
		if !ok || c.id.TokenEpoch >= rev.Epoch {
			continue
		}
		g.metrics.Disconnect(metrics.TokenRevoked)
		g.log.Info("closing a connection whose token was revoked", "user", c.user, "device", c.device)
		c.close(websocket.ClosePolicyViolation, revokedReason)
	}
}
