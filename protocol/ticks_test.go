package protocol_test

import (
	"math/rand/v2"
	"testing"

	"github.com/imcore/im/protocol"
)

func TestTickOf(t *testing.T) {
	b := protocol.Ticks{DeliveredSeq: 44, ReadSeq: 42}
	tests := []struct {
		seq   int64
		ticks protocol.Ticks
		want  protocol.Tick
	}{
		{0, b, protocol.TickPending},
		{-1, b, protocol.TickPending},
		{0, protocol.Ticks{}, protocol.TickPending},
		{1, b, protocol.TickRead},
		{41, b, protocol.TickRead},
		{42, b, protocol.TickRead},
		{43, b, protocol.TickDelivered},
		{44, b, protocol.TickDelivered},
		{45, b, protocol.TickSent},
		{1 << 62, b, protocol.TickSent},
		{1, protocol.Ticks{}, protocol.TickSent},
		{1, protocol.Ticks{DeliveredSeq: 1}, protocol.TickDelivered},
		{2, protocol.Ticks{DeliveredSeq: 1}, protocol.TickSent},
		{5, protocol.Ticks{DeliveredSeq: 5, ReadSeq: 5}, protocol.TickRead},
		{6, protocol.Ticks{DeliveredSeq: 5, ReadSeq: 5}, protocol.TickSent},
	}
	for _, tt := range tests {
		if got := protocol.TickOf(tt.seq, tt.ticks); got != tt.want {
			t.Errorf("TickOf(%d, %+v) = %v, want %v", tt.seq, tt.ticks, got, tt.want)
		}
	}
}

func TestTickOrderAndNames(t *testing.T) {
	if !(protocol.TickPending < protocol.TickSent && protocol.TickSent < protocol.TickDelivered && protocol.TickDelivered < protocol.TickRead) {
		t.Errorf("ticks out of order: %d %d %d %d", protocol.TickPending, protocol.TickSent, protocol.TickDelivered, protocol.TickRead)
	}
	names := map[protocol.Tick]string{
		protocol.TickPending: "pending", protocol.TickSent: "sent",
		protocol.TickDelivered: "delivered", protocol.TickRead: "read",
	}
	for tick, want := range names {
		if got := tick.String(); got != want {
			t.Errorf("Tick(%d).String() = %q, want %q", int(tick), got, want)
		}
	}
}

func TestTicksMerge(t *testing.T) {
	tests := []struct {
		t, u, want protocol.Ticks
	}{
		{protocol.Ticks{}, protocol.Ticks{}, protocol.Ticks{}},
		{protocol.Ticks{DeliveredSeq: 44, ReadSeq: 42}, protocol.Ticks{}, protocol.Ticks{DeliveredSeq: 44, ReadSeq: 42}},
		{protocol.Ticks{}, protocol.Ticks{DeliveredSeq: 44, ReadSeq: 42}, protocol.Ticks{DeliveredSeq: 44, ReadSeq: 42}},
		// a lower status is ignored on both sides
		{protocol.Ticks{DeliveredSeq: 44, ReadSeq: 42}, protocol.Ticks{DeliveredSeq: 40, ReadSeq: 30}, protocol.Ticks{DeliveredSeq: 44, ReadSeq: 42}},
		// each side rises independently
		{protocol.Ticks{DeliveredSeq: 44, ReadSeq: 42}, protocol.Ticks{DeliveredSeq: 50, ReadSeq: 10}, protocol.Ticks{DeliveredSeq: 50, ReadSeq: 42}},
		{protocol.Ticks{DeliveredSeq: 44, ReadSeq: 10}, protocol.Ticks{DeliveredSeq: 20, ReadSeq: 43}, protocol.Ticks{DeliveredSeq: 44, ReadSeq: 43}},
		// read drags delivered up with it
		{protocol.Ticks{DeliveredSeq: 44, ReadSeq: 42}, protocol.Ticks{DeliveredSeq: 0, ReadSeq: 50}, protocol.Ticks{DeliveredSeq: 50, ReadSeq: 50}},
		{protocol.Ticks{DeliveredSeq: 3, ReadSeq: 9}, protocol.Ticks{}, protocol.Ticks{DeliveredSeq: 9, ReadSeq: 9}},
	}
	for _, tt := range tests {
		if got := tt.t.Merge(tt.u); got != tt.want {
			t.Errorf("%+v.Merge(%+v) = %+v, want %+v", tt.t, tt.u, got, tt.want)
		}
	}
}

func randomTicks(r *rand.Rand) protocol.Ticks {
	// Mostly well-formed boundaries, sometimes read above delivered (a
	// misbehaving peer): Merge must cope with both.
	d := r.Int64N(60)
	rd := r.Int64N(d + 1)
	if r.IntN(5) == 0 {
		rd = r.Int64N(60)
	}
	return protocol.Ticks{DeliveredSeq: d, ReadSeq: rd}
}

// A client merging every status it sees, in any order: ticks only move
// forward, read never passes delivered, and the result does not depend on
// the order the statuses arrived in.
func TestTicksMergeProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for run := range 2000 {
		var state protocol.Ticks
		var statuses []protocol.Ticks
		var maxD, maxR int64
		for range 1 + r.IntN(20) {
			u := randomTicks(r)
			statuses = append(statuses, u)
			maxD, maxR = max(maxD, u.DeliveredSeq), max(maxR, u.ReadSeq)
			next := state.Merge(u)
			if next.DeliveredSeq < state.DeliveredSeq || next.ReadSeq < state.ReadSeq {
				t.Fatalf("run %d: %+v.Merge(%+v) = %+v lowers a boundary", run, state, u, next)
			}
			if next.DeliveredSeq < u.DeliveredSeq || next.ReadSeq < u.ReadSeq {
				t.Fatalf("run %d: %+v.Merge(%+v) = %+v is below the status merged", run, state, u, next)
			}
			if next.ReadSeq > next.DeliveredSeq {
				t.Fatalf("run %d: %+v.Merge(%+v) = %+v has read above delivered", run, state, u, next)
			}
			if m := u.Merge(state); m != next {
				t.Fatalf("run %d: Merge not commutative: %+v vs %+v", run, next, m)
			}
			if again := next.Merge(u); again != next {
				t.Fatalf("run %d: merging %+v twice gives %+v then %+v", run, u, next, again)
			}
			for seq := int64(0); seq <= 61; seq++ {
				if before, after := protocol.TickOf(seq, state), protocol.TickOf(seq, next); after < before {
					t.Fatalf("run %d: seq %d went from %v to %v after merging %+v into %+v", run, seq, before, after, u, state)
				}
			}
			state = next
		}
		// Exactly the highest read, and the highest of delivered and read.
		want := protocol.Ticks{DeliveredSeq: max(maxD, maxR), ReadSeq: maxR}
		if state != want {
			t.Fatalf("run %d: merged %v into %+v, want %+v", run, statuses, state, want)
		}
		// Any arrival order gives the same boundaries.
		r.Shuffle(len(statuses), func(i, j int) { statuses[i], statuses[j] = statuses[j], statuses[i] })
		var shuffled protocol.Ticks
		for _, u := range statuses {
			shuffled = shuffled.Merge(u)
		}
		if shuffled != state {
			t.Fatalf("run %d: order matters: %+v vs %+v", run, shuffled, state)
		}
	}
}
