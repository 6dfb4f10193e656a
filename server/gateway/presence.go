package gateway

import (
	"context"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/hub"
)

// presence answers a presence request: its users become the connection's
// watch list, whose changes are pushed to it (package presence).
func (c *conn) presence(ctx context.Context, f *protocol.PresenceRequest) protocol.Frame {
	limit := c.g.cfg.MaxPresenceUsers
	if limit <= 0 {
		limit = protocol.DefaultMaxPresenceUsers
	}
	if perr := f.Validate(limit); perr != nil {
		return perr.Frame(f.ID)
	}
	t := c.g.cfg.Presence
	if t == nil {
		users := make([]protocol.Presence, len(f.Users))
		for i, u := range f.Users {
			users[i] = protocol.Stranger(u)
		}
		return &protocol.PresenceReply{Ref: f.Ref, Users: users}
	}
	if c.watch == nil {
		c.watch = t.NewWatch(c.user, func(frame []byte) { c.Deliver(hub.Push{Frame: frame}) })
	}
	users, perr := c.watch.Set(ctx, f.Users)
	if perr != nil {
		return perr.Frame(f.ID)
	}
	return &protocol.PresenceReply{Ref: f.Ref, Users: users}
}
