package gateway

import (
	"context"
	"runtime/debug"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// dispatch runs one request and returns its answer (nil for none). A panic
// in a handler is a bug, not a reason to take every other connection down:
// it is logged and answered internal.
func (c *conn) dispatch(ctx context.Context, frame protocol.Frame) (answer protocol.Frame) {
	defer func() {
		if r := recover(); r != nil {
			c.g.log.Error("request handler panicked", "type", frame.FrameType(), "user", c.user, "panic", r, "stack", string(debug.Stack()))
			answer = protocol.Errorf(protocol.CodeInternal, "the server failed on this %s", frame.FrameType()).Frame(requestID(frame))
		}
	}()
	switch f := frame.(type) {
	case *protocol.Delivered:
		if f.ID == "" {
			return c.markWithoutID(ctx, f, store.MarkDelivered, f.Marks)
		}
	case *protocol.Read:
		if f.ID == "" {
			return c.markWithoutID(ctx, f, store.MarkRead, f.Marks)
		}
	}
	// Marks without id held back (marks.go) apply before any other frame.
	c.applyHeldMarks(ctx)
	switch frame.(type) {
	case *protocol.Send, *protocol.Delivered, *protocol.Read, *protocol.Typing:
		// Pipelined (inflight.go), or answered by nobody.
	default:
		c.settle(ctx)
		c.settleMarks()
	}
	svc := c.g.svc
	switch f := frame.(type) {
	case *protocol.Send:
		return c.send(ctx, f)
	case *protocol.History:
		page, perr := svc.History(ctx, c.caller(), f)
		return resultOrError(page, perr, f.ID)
	case *protocol.ReceiptsRequest:
		receipts, perr := svc.Receipts(ctx, c.caller(), f)
		return resultOrError(receipts, perr, f.ID)
	case *protocol.Delivered:
		return c.mark(ctx, f, f.ID, store.MarkDelivered, f.Marks)
	case *protocol.Read:
		return c.mark(ctx, f, f.ID, store.MarkRead, f.Marks)
	case *protocol.Typing:
		if perr := svc.Typing(ctx, c.caller(), f); perr != nil {
			return perr.Frame("")
		}
		return nil
	case *protocol.Sync:
		page, perr := svc.Sync(ctx, c.caller(), f)
		return resultOrError(page, perr, f.ID)
	case *protocol.SessionOp:
		ok, perr := svc.SessionOp(ctx, c.caller(), f)
		return resultOrError(ok, perr, f.ID)
	case *protocol.CreateGroup:
		group, perr := svc.CreateGroup(ctx, c.caller(), f)
		return resultOrError(group, perr, f.ID)
	case *protocol.GroupOp:
		group, perr := svc.GroupOp(ctx, c.caller(), f)
		return resultOrError(group, perr, f.ID)
	case *protocol.SettingsRequest:
		set, perr := svc.Settings(ctx, c.caller(), f)
		return resultOrError(set, perr, f.ID)
	case *protocol.Block:
		ok, perr := svc.Block(ctx, c.caller(), f)
		return resultOrError(ok, perr, f.ID)
	case *protocol.Unblock:
		ok, perr := svc.Unblock(ctx, c.caller(), f)
		return resultOrError(ok, perr, f.ID)
	case *protocol.PresenceRequest:
		return c.presence(ctx, f)
	case *protocol.Hello:
		return protocol.Errorf(protocol.CodeInvalid, "hello was already said on this connection").Frame(f.ID)
	}
	return protocol.Errorf(protocol.CodeInvalid, "%s is not supported by this server yet", frame.FrameType()).Frame(requestID(frame))
}

// requestID returns the id a frame carries, "" for none.
func requestID(frame protocol.Frame) string {
	if r, ok := frame.(interface{ RequestID() string }); ok {
		return r.RequestID()
	}
	return ""
}

// resultOrError is the frame answering a request: its result, or its error
// echoing the request id.
func resultOrError(result protocol.Frame, perr *protocol.Error, id string) protocol.Frame {
	if perr != nil {
		return perr.Frame(id)
	}
	return result
}
