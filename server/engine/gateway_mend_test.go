package engine

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/server/store/memstore"
	"github.com/imcore/im/session"
)

// gatewayCut is a backend that, once cut is set, drops every gateway
// session from what it is asked to write, as DynamoDB does when a process
// dies between a session and its gateway (two items); and whose totals,
// as DynamoDB's, are the sums of the sessions stored.
type gatewayCut struct {
	seqLog
	cut atomic.Bool
}

func (b *gatewayCut) Apply(ctx context.Context, d store.Derived) error {
	if b.cut.Load() {
		var kept []session.State
		for _, st := range d.Sessions {
			if _, gw := protocol.IsGateway(st.Conv); !gw {
				kept = append(kept, st)
			}
		}
		d.Sessions = kept
	}
	return b.seqLog.Apply(ctx, d)
}

func (b *gatewayCut) User(ctx context.Context, user string) (store.UserRecord, error) {
	rec, err := b.seqLog.User(ctx, user)
	if err != nil {
		return rec, err
	}
	sums := map[string]int64{}
	for list := range rec.Totals {
		rows, _, err := b.seqLog.SessionPage(ctx, user, store.SyncQuery{SubBiz: list, Limit: 1000})
		if err != nil {
			return rec, err
		}
		for _, r := range rows {
			sums[list] += r.State.UnreadContribution()
		}
	}
	rec.Totals = sums
	return rec, nil
}

// Close leaves the store open: the tests start a second engine on it.
func (b *gatewayCut) Close() error { return nil }

// gatewayRig is bob's direct chat with shop-orders, an account filed
// under the sub-business shop, on a gatewayCut, with engines that own
// every conversation and user.
type gatewayRig struct {
	be            *gatewayCut
	ctx           context.Context
	conv, gateway string
	owners        ownerOfAll
}

func newGatewayRig(t *testing.T) *gatewayRig {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	r := &gatewayRig{be: &gatewayCut{seqLog: seqLog{memstore.New()}}, ctx: ctx, gateway: protocol.GatewayConv("shop"), owners: ownerOfAll{newOtherNode()}}
	close(r.owners.written)
	r.conv, _ = protocol.DirectConv("shop-orders", "bob")
	if err := r.be.SetAccount(ctx, "shop-orders", "", "shop"); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *gatewayRig) engine(t *testing.T) *Engine {
	t.Helper()
	e, err := New(r.ctx, r.be, Options{Owners: r.owners, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (r *gatewayRig) send(t *testing.T, e *Engine, id string) {
	t.Helper()
	if _, err := e.Append(r.ctx, store.AppendRequest{Msg: protocol.Message{Conv: r.conv, MsgID: id, From: "shop-orders", Body: id}, Members: []string{"shop-orders", "bob"}}); err != nil {
		t.Fatal(err)
	}
}

// stored returns bob's session of conv as the backend holds it.
func (r *gatewayRig) stored(t *testing.T, conv string) session.State {
	t.Helper()
	got, err := r.be.Sessions(r.ctx, conv, []string{"bob"})
	if err != nil {
		t.Fatal(err)
	}
	return got["bob"]
}

// A sub-business's gateway left behind its list by a cut write is set
// right by the next owner as soon as it reads the user, before it shows a
// page: the gateway's unread count is its list's total again.
func TestNewOwnerMendsAGatewayLeftBehindItsSubBusiness(t *testing.T) {
	r := newGatewayRig(t)
	first := r.engine(t)
	r.send(t, first, "o1")
	if err := first.flush.barrier(r.ctx); err != nil {
		t.Fatal(err)
	}
	r.be.cut.Store(true)
	r.send(t, first, "o2")
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	r.be.cut.Store(false)
	if member, gw := r.stored(t, r.conv), r.stored(t, r.gateway); member.UnreadCount != 2 || gw.UnreadCount != 1 {
		t.Fatalf("the cut left bob's session at %d unread and the gateway at %d; the test needs 2 and 1", member.UnreadCount, gw.UnreadCount)
	}

	second := r.engine(t)
	t.Cleanup(func() { second.Close() })
	page, err := second.Sync(r.ctx, "bob", store.SyncQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var shown *protocol.Session
	for i, s := range page.Sessions {
		if s.Conv == r.gateway {
			shown = &page.Sessions[i]
		}
	}
	switch {
	case shown == nil:
		t.Fatalf("bob's main list has no gateway of shop: %+v", page.Sessions)
	case shown.UnreadCount != 2:
		t.Errorf("the page shows the gateway of shop at %d unread; its list holds 2", shown.UnreadCount)
	}
	if page.TotalUnread != 2 {
		t.Errorf("bob's main list's total_unread is %d, want 2 (the gateway's count)", page.TotalUnread)
	}
	if err := second.flush.barrier(r.ctx); err != nil {
		t.Fatal(err)
	}
	if gw := r.stored(t, r.gateway); gw.UnreadCount != 2 {
		t.Errorf("the gateway stored after the mend holds %d unread, want 2", gw.UnreadCount)
	}
}

// A gateway its user deleted holds no unread count while its list still
// does: that is the delete, not a cut, and the next owner leaves it so.
func TestNewOwnerLeavesADeletedGatewayAlone(t *testing.T) {
	r := newGatewayRig(t)
	first := r.engine(t)
	r.send(t, first, "o1")
	if _, err := first.SessionOp(r.ctx, "bob", r.gateway, session.OpDelete, session.OpArgs{}); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second := r.engine(t)
	t.Cleanup(func() { second.Close() })
	if _, err := second.Sync(r.ctx, "bob", store.SyncQuery{Limit: 10}); err != nil {
		t.Fatal(err)
	}
	if err := second.flush.barrier(r.ctx); err != nil {
		t.Fatal(err)
	}
	if gw := r.stored(t, r.gateway); !gw.Deleted || gw.UnreadCount != 0 {
		t.Errorf("the deleted gateway is stored as deleted=%v with %d unread after the new owner read bob; want deleted with 0", gw.Deleted, gw.UnreadCount)
	}
}
