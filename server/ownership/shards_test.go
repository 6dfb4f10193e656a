package ownership

import (
	"fmt"
	"testing"
)

func TestShardOfIsStableAndInRange(t *testing.T) {
	for i := range 1000 {
		id := fmt.Sprintf("user-%d", i)
		s := ShardOfUser(id)
		if s < 0 || s >= Shards {
			t.Fatalf("ShardOfUser(%q) = %d, out of range", id, s)
		}
		if again := ShardOfUser(id); again != s {
			t.Fatalf("ShardOfUser(%q) = %d then %d", id, s, again)
		}
	}
	// A conversation and a user of the same id are distinct keys.
	differ := 0
	for i := range 100 {
		id := fmt.Sprintf("x%d", i)
		if ShardOfConv(id) != ShardOfUser(id) {
			differ++
		}
	}
	if differ == 0 {
		t.Fatal("conversation and user ids of one spelling always share a shard")
	}
}

func TestPlaceIgnoresOrder(t *testing.T) {
	a := []string{"n1", "n2", "n3"}
	b := []string{"n3", "n1", "n2"}
	for s := range Shard(Shards) {
		if Place(s, a) != Place(s, b) {
			t.Fatalf("shard %d: placement depends on the order of the nodes", s)
		}
	}
	if got := Place(0, nil); got != "" {
		t.Fatalf("Place over no nodes = %q, want empty", got)
	}
}

// TestPlaceMovesOnlyWhatChanges: a node joining takes shards only for
// itself, and a node leaving gives away only its own.
func TestPlaceMovesOnlyWhatChanges(t *testing.T) {
	before := []string{"a", "b", "c"}
	after := []string{"a", "b", "c", "d"}
	moved := 0
	for s := range Shard(Shards) {
		was, is := Place(s, before), Place(s, after)
		if was != is {
			moved++
			if is != "d" {
				t.Fatalf("shard %d moved from %s to %s when d joined", s, was, is)
			}
		}
	}
	// Roughly a quarter of the shards go to the fourth node.
	if moved < Shards/8 || moved > Shards/2 {
		t.Fatalf("%d of %d shards moved to a fourth node; want about a quarter", moved, Shards)
	}
	for s := range Shard(Shards) {
		was, is := Place(s, after), Place(s, before)
		if was != "d" && was != is {
			t.Fatalf("shard %d moved from %s to %s when d left", s, was, is)
		}
	}
}

func TestPlacementSpreadsShards(t *testing.T) {
	nodes := []string{"node-a", "node-b", "node-c"}
	p := Placement(nodes)
	total := 0
	for _, n := range nodes {
		total += len(p[n])
		if len(p[n]) < Shards/6 {
			t.Errorf("node %s holds %d of %d shards", n, len(p[n]), Shards)
		}
	}
	if total != Shards {
		t.Fatalf("placement covers %d shards, want %d", total, Shards)
	}
}
