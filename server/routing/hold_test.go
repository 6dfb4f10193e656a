package routing

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/imcore/im/server/ownership"
	"github.com/imcore/im/server/store/memstore"
)

// trustedShards is a node's ownership whose leases are trusted until
// until, or not at all when lost is set.
type trustedShards struct {
	Placement
	until time.Time
	lost  bool
}

func (s *trustedShards) TrustedUntil(ownership.Shard) (time.Time, bool) {
	if s.lost {
		return time.Time{}, false
	}
	return s.until, true
}

// A write of a user's rows must be done when the node stops trusting its
// lease of the user's shard. A lease not trusted right now (a refresh
// late) gives a deadline already past, so that the write fails and is
// tried again, rather than dropped while the node still serves the shard
// from memory; a lease lost stops the shard's writing at once, before the
// drain that follows has sealed it.
func TestHoldWriteEndsWithTheLeasesTrust(t *testing.T) {
	shards := &trustedShards{until: time.Now().Add(3 * time.Second)}
	r, err := New(t.Context(), Config{Backend: memstore.New(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.Attach(shards)
	shard := ownership.ShardOfUser("alice")
	g := &r.gates[shard]
	g.open()
	o := owners{r}

	release, until, ok := o.HoldWrite("alice")
	if !ok {
		t.Fatal("a write of a served shard whose lease is trusted was refused")
	}
	if !until().Equal(shards.until) {
		t.Errorf("the write's deadline is %v, want the lease's trust end %v", until(), shards.until)
	}
	release()

	shards.lost = true // a refresh late
	release, until, ok = o.HoldWrite("alice")
	if !ok {
		t.Fatal("a write was refused, and its rows dropped, while the shard is still served")
	}
	if d := until(); d.IsZero() || time.Until(d) > 0 {
		t.Errorf("the write's deadline with the lease not trusted is %v, want one already past", d)
	}
	release()

	r.lost(shard) // drains in the background
	if _, _, ok := o.HoldWrite("alice"); ok {
		t.Fatal("a write was held for a shard whose lease is lost")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.writes != 0 {
		t.Errorf("%d writes left held; a seal would wait for them", g.writes)
	}
}
