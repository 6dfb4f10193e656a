package routing

import (
	"testing"
	"time"

	"github.com/imcore/im/server/ownership"
)

// trustedShards is a node's ownership whose leases are trusted until
// until, or not at all when lost is set.
type trustedShards struct {
	Shards
	until time.Time
	lost  bool
}

func (s *trustedShards) TrustedUntil(ownership.Shard) (time.Time, bool) {
	if s.lost {
		return time.Time{}, false
	}
	return s.until, true
}

// A write of a user's rows is held only while the node trusts its lease
// of the user's shard, and must be done when that trust ends: a node that
// lost the lease writes nothing more of the shard, even before the drain
// that follows the loss has sealed it.
func TestHoldWriteNeedsTheLeaseStillTrusted(t *testing.T) {
	shards := &trustedShards{until: time.Now().Add(3 * time.Second)}
	r := &Router{}
	r.Attach(shards)
	g := &r.gates[ownership.ShardOfUser("alice")]
	g.open()
	o := owners{r}

	release, until, ok := o.HoldWrite("alice")
	if !ok {
		t.Fatal("a write of a served shard whose lease is trusted was refused")
	}
	if !until.Equal(shards.until) {
		t.Errorf("the write's deadline is %v, want the lease's trust end %v", until, shards.until)
	}
	release()

	shards.lost = true // writable still: the drain has not sealed it yet
	if _, _, ok := o.HoldWrite("alice"); ok {
		t.Fatal("a write was held for a shard whose lease is no longer trusted")
	}
	if g.writes != 0 {
		t.Errorf("%d writes left held after a refused hold; a seal would wait for them", g.writes)
	}
}
