package storetest

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/session"
)

// RoundRobin returns a store whose every call goes to the next of stores
// in turn, as the nodes of a cluster behind a load balancer: run on
// engines sharing one backend, the suite then checks that what one
// changed, the others see. Close closes them all.
func RoundRobin(stores ...store.Store) store.Store {
	return &roundRobin{stores: stores}
}

type roundRobin struct {
	stores []store.Store
	next   atomic.Uint64
}

func (r *roundRobin) pick() store.Store {
	return r.stores[r.next.Add(1)%uint64(len(r.stores))]
}

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
	var errs []error
	for _, s := range r.stores {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}
