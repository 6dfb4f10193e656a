package engine_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/distlock"
	"github.com/imcore/im/server/engine"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/server/store/memstore"
	"github.com/imcore/im/server/store/storetest"
	"github.com/imcore/im/session"
)

// TestConformanceOfEnginesSharingABackend runs the engine's conformance
// suite on two engines over one backend, each call going to the next
// engine in turn, as the nodes of a cluster behind a load balancer: what
// one engine changed, the other must see.
func TestConformanceOfEnginesSharingABackend(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return alternating(t, memstore.New(), distlock.NewMemory())
	})
}

// alternating opens two engines over be sharing locker, and returns a
// store that sends each call to the next of them.
func alternating(t *testing.T, be store.Backend, locker engine.Locker) store.Store {
	t.Helper()
	var engines [2]*engine.Engine
	shared := &refCounted{Backend: be}
	shared.refs.Store(2)
	for i := range engines {
		e, err := engine.New(t.Context(), shared, engine.Options{Locker: locker})
		if err != nil {
			t.Fatal(err)
		}
		engines[i] = e
	}
	t.Cleanup(func() {
		engines[0].Close()
		engines[1].Close()
	})
	return &roundRobin{engines: engines}
}

// refCounted closes a shared backend when the last engine closes it.
type refCounted struct {
	store.Backend
	refs atomic.Int32
}

func (r *refCounted) Close() error {
	if r.refs.Add(-1) == 0 {
		return r.Backend.Close()
	}
	return nil
}

// roundRobin is a store.Store whose every call goes to the next engine.
type roundRobin struct {
	engines [2]*engine.Engine
	next    atomic.Uint64
}

func (r *roundRobin) pick() *engine.Engine { return r.engines[r.next.Add(1)%2] }

func (r *roundRobin) Append(ctx context.Context, req store.AppendRequest) (store.AppendResult, error) {
	return r.pick().Append(ctx, req)
}

func (r *roundRobin) StartAppend(ctx context.Context, req store.AppendRequest) func() (store.AppendResult, error) {
	return r.pick().StartAppend(ctx, req)
}

func (r *roundRobin) History(ctx context.Context, conv string, q store.HistoryQuery) ([]protocol.Message, bool, error) {
	return r.pick().History(ctx, conv, q)
}

func (r *roundRobin) Mark(ctx context.Context, user string, kind store.MarkKind, marks []protocol.Mark) (store.MarkResult, error) {
	return r.pick().Mark(ctx, user, kind, marks)
}

func (r *roundRobin) SessionOp(ctx context.Context, user, conv string, op session.Op, args session.OpArgs) (store.SessionResult, error) {
	return r.pick().SessionOp(ctx, user, conv, op, args)
}

func (r *roundRobin) Sync(ctx context.Context, user string, q store.SyncQuery) (store.SyncPage, error) {
	return r.pick().Sync(ctx, user, q)
}

func (r *roundRobin) SetAccount(ctx context.Context, user, category, subBiz string) error {
	return r.pick().SetAccount(ctx, user, category, subBiz)
}

func (r *roundRobin) Pending(ctx context.Context, user string) ([]store.PendingDelivery, error) {
	return r.pick().Pending(ctx, user)
}

func (r *roundRobin) Receipts(ctx context.Context, conv string) ([]protocol.MemberReceipt, error) {
	return r.pick().Receipts(ctx, conv)
}

func (r *roundRobin) Group(ctx context.Context, conv string) (store.GroupState, error) {
	return r.pick().Group(ctx, conv)
}

func (r *roundRobin) Membership(ctx context.Context, conv, user string) (store.Membership, error) {
	return r.pick().Membership(ctx, conv, user)
}

func (r *roundRobin) ChangeGroup(ctx context.Context, req store.GroupChange) (store.GroupResult, error) {
	return r.pick().ChangeGroup(ctx, req)
}

func (r *roundRobin) Close() error {
	return errors.Join(r.engines[0].Close(), r.engines[1].Close())
}
