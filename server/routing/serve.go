package routing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/chat"
	"github.com/imcore/im/server/engine"
	"github.com/imcore/im/server/hub"
	"github.com/imcore/im/server/nodelink"
	"github.com/imcore/im/server/ownership"
)

var (
	_ nodelink.Handler = (*Router)(nil)
	_ nodelink.Starter = (*Router)(nil)
)

// ServeForwarded implements nodelink.Handler (StartForwarded, finished).
func (r *Router) ServeForwarded(ctx context.Context, req nodelink.Request) (json.RawMessage, error) {
	return r.StartForwarded(ctx, req)()
}

// StartForwarded serves what another node sent this one: a client's frame
// this node owns (see frames.go), and the requests the nodes make of each
// other (session effects, their rows written, pushes). The part that must
// keep the stream's order runs now, the rest in what it returns. A frame
// on a shard this node does not serve is refused, and the asking node
// looks for the owner again.
func (r *Router) StartForwarded(ctx context.Context, req nodelink.Request) func() (json.RawMessage, error) {
	answered := func(result any, err error) func() (json.RawMessage, error) {
		raw, encErr := encodeAnswer(result, err)
		return func() (json.RawMessage, error) { return raw, encErr }
	}
	switch req.Method {
	case "":
		return r.startFrame(ctx, req)
	case mCheckMarks:
		var a checkArgs
		if err := json.Unmarshal(req.Frame, &a); err != nil || len(a.Marks) == 0 {
			return answered(nil, errors.Join(err, errors.New("a mark check without marks")))
		}
		shard := ownership.ShardOfConv(a.Marks[0].Conv)
		if !r.enter(shard) {
			return refused(shard)
		}
		defer r.gates[shard].exit()
		return answered(r.svc.CheckMarks(ctx, chat.Caller{User: a.User}, a.Marks), nil)
	case mResync:
		var a resyncArgs
		if err := json.Unmarshal(req.Frame, &a); err != nil || len(a.Users) == 0 {
			return answered(nil, errors.Join(err, errors.New("a resync without users")))
		}
		shard := ownership.ShardOfUser(a.Users[0])
		if !r.enter(shard) {
			return refused(shard)
		}
		defer r.gates[shard].exit()
		r.svc.Resync(ctx, a.Users)
		return answered(struct{}{}, nil)
	case mRows:
		var a rowsArgs
		if err := json.Unmarshal(req.Frame, &a); err != nil {
			return answered(nil, err)
		}
		shard := ownership.ShardOfUser(a.User)
		if !r.enter(shard) {
			return refused(shard)
		}
		defer r.gates[shard].exit()
		tickets := r.eng.RowsOf(a.User)
		for i := range tickets {
			if tickets[i].Node == "" {
				tickets[i].Node = r.selfAddr() // this node's own rows
			}
		}
		return answered(tickets, nil)
	case mPushes:
		var batch []hub.Delivery
		if err := json.Unmarshal(req.Frame, &batch); err != nil {
			return answered(nil, err)
		}
		r.deliver(batch)
		return answered(struct{}{}, nil)
	case mPresence:
		return answered(struct{}{}, r.presenceTold(req.Frame))
	case mForget:
		return answered(struct{}{}, r.forgetPerson(req.Frame))
	case mWake:
		if s := r.ownership(); s != nil {
			s.Wake()
		}
		return answered(struct{}{}, nil)
	case mBarrier:
		return func() (json.RawMessage, error) { return encodeAnswer(struct{}{}, r.eng.Barrier(ctx)) }
	case mWritten:
		var t engine.WriteTicket
		if err := json.Unmarshal(req.Frame, &t); err != nil {
			return answered(nil, err)
		}
		return func() (json.RawMessage, error) { return encodeAnswer(struct{}{}, r.eng.WaitWritten(ctx, t)) }
	case mEffects:
		var a effectsArgs
		if err := json.Unmarshal(req.Frame, &a); err != nil {
			return answered(nil, err)
		}
		return r.serveEffects(ctx, a.Effects)
	}
	return answered(nil, fmt.Errorf("unknown method %q", req.Method))
}

// refused is the refusal of a request on a shard this node does not serve.
func refused(shard ownership.Shard) func() (json.RawMessage, error) {
	return func() (json.RawMessage, error) { return nil, fmt.Errorf("%s %d", notOwner, shard) }
}

// startFrame starts a client's frame another node forwarded, on behalf of
// its device there, and answers it with the frame the client gets.
func (r *Router) startFrame(ctx context.Context, req nodelink.Request) func() (json.RawMessage, error) {
	f, _, perr := protocol.DecodeClientFrame(req.Frame)
	if perr != nil {
		raw, err := protocol.Encode(perr.Frame(""))
		return func() (json.RawMessage, error) { return raw, err }
	}
	c := chat.Caller{User: req.User, Device: hub.Elsewhere{UserID: req.User, DeviceName: req.Device, Node: req.Node}, Repeat: req.Again}
	shard, _ := routeOf(f, req.User, req.Conv)
	finish, ok := r.startHere(ctx, shard, c, f, req.Conv)
	if !ok {
		return refused(shard)
	}
	return func() (json.RawMessage, error) {
		answer := finish()
		switch answer {
		case moved:
			return nil, fmt.Errorf("%s %d", notOwner, shard) // the asking node runs it again at the new owner
		case nil:
			return nil, nil
		}
		return protocol.Encode(answer)
	}
}

// serveEffects applies session effects sent by a conversation's owner, if
// this node serves every one of their users, and answers once they are
// applied, with the tickets of their rows.
func (r *Router) serveEffects(ctx context.Context, effects []engine.Effect) func() (json.RawMessage, error) {
	var shards []ownership.Shard
	for _, ef := range effects {
		shards = append(shards, ownership.ShardOfUser(ef.User))
	}
	shards = slices.Compact(slices.Sorted(slices.Values(shards)))
	for i, s := range shards {
		// A step of an operation in flight on another node: admitted
		// while the shard drains too, as the drains of both nodes would
		// otherwise wait on each other (each for operations waiting on
		// a shard the other is draining).
		if !r.enterWithin(s) {
			for _, entered := range shards[:i] {
				r.gates[entered].exit()
			}
			return refused(s)
		}
	}
	results, err := r.eng.ApplyEffects(ctx, effects)
	for _, s := range shards {
		r.gates[s].exit()
	}
	raw, err := encodeAnswer(results, err)
	return func() (json.RawMessage, error) { return raw, err }
}
