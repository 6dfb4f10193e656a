package engine

import (
	"context"
	"errors"
	"hash/maphash"
	"slices"
	"sync"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// convShards spread the conversation map over locks.
const convShards = 64

// maxOwnSeqs bounds the seqs kept per member of a conversation to find
// whose messages a tick rise covers; older ones are asked of the backend.
const maxOwnSeqs = 4096

// convTable holds the conversations the engine has touched.
type convTable struct {
	seed   maphash.Seed
	shards [convShards]convShard
}

type convShard struct {
	mu sync.Mutex
	m  map[string]*convState
}

func newConvTable() *convTable {
	t := &convTable{seed: maphash.MakeSeed()}
	for i := range t.shards {
		t.shards[i].m = map[string]*convState{}
	}
	return t
}

// convState is what the engine keeps of one conversation. gate orders a
// group's sends (shared) against its membership changes (alone); mu guards
// the rest: the conversation's critical section, in which its members'
// boundaries and pending rows change.
type convState struct {
	conv   string
	parsed protocol.Conv
	gate   sync.RWMutex
	// related orders the conversation's replies and relation entries:
	// each is checked against its target and stored alone
	// (relations.go). Plain messages do not take it.
	related sync.Mutex

	mu       sync.Mutex
	exists   bool
	title    string
	version  int64
	maxSeq   int64
	ticks    protocol.Ticks
	members  map[string]*member
	sorted   []string           // member ids, sorted
	own      map[string][]int64 // each member's own seqs above ownFloor, ascending
	ownFloor int64              // own seqs at or below it are the backend's to find
	derived  int64              // the derived watermark
	done     map[int64]bool     // seqs above the watermark already derived
	// assigned is the newest seq an owner gave (ownedappend.go); holes
	// are seqs below it that no message took, to give again.
	assigned int64
	holes    []int64
	// recent maps the msg_ids of the conversation's latest messages to
	// their seqs (an owner's, filled from the log before its first seq
	// is given, under recentLoad): a send repeated takes no seq.
	recent     recentIDs
	recentLoad sync.Mutex
	// inflight holds, by msg_id, the appends given a seq here whose write
	// and derivation are not done: closed when they are. A repeat waits
	// for its first attempt rather than race it to the backend.
	inflight     map[string]chan struct{}
	recentLoaded bool // guarded by mu
	// events are the seqs of the latest messages that do not count as
	// unread (events.go), for the session effects computed here.
	events convEvents
}

// member is one member's place in a conversation.
type member struct {
	joined          int64
	delivered, read int64
	// unshown is, in a direct chat, the member's read boundary while it
	// is above read, the shown one (PROTOCOL.md, "Read receipts off"):
	// reads made while either member has receipts off move it alone.
	// It is kept in memory only; the stored boundary is the shown one,
	// and the member's own session holds its read.
	unshown int64
	pending bool
	first   int64 // first undelivered seq of the pending row
}

// get returns conv's state, hydrated from the backend on first use.
func (t *convTable) get(ctx context.Context, be store.Backend, conv string) (*convState, error) {
	sh := t.shard(conv)
	sh.mu.Lock()
	cs := sh.m[conv]
	sh.mu.Unlock()
	if cs != nil {
		return cs, nil
	}
	fresh, err := t.read(ctx, be, conv)
	if err != nil {
		return nil, err
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if cs := sh.m[conv]; cs != nil {
		return cs, nil // hydrated meanwhile by another request
	}
	sh.m[conv] = fresh
	return fresh, nil
}

// read returns conv's state as the backend holds it, without keeping it.
func (t *convTable) read(ctx context.Context, be store.Backend, conv string) (*convState, error) {
	parsed, ok := protocol.ParseConv(conv)
	if !ok || parsed.Kind == protocol.ConvBiz {
		return nil, errors.New("not a conversation id: " + conv)
	}
	fresh := &convState{conv: conv, parsed: parsed}
	rec, err := be.Conversation(ctx, conv)
	switch {
	case errors.Is(err, store.ErrNotFound):
		fresh.load(store.ConvRecord{Conv: conv, Kind: parsed.Kind})
	case err != nil:
		return nil, err
	default:
		fresh.load(rec)
		fresh.exists = true
	}
	return fresh, nil
}

func (t *convTable) shard(conv string) *convShard {
	return &t.shards[maphash.String(t.seed, conv)%convShards]
}

// load fills the state from a record. A direct chat's members are its two
// users, whether or not it has messages yet.
func (cs *convState) load(rec store.ConvRecord) {
	cs.title, cs.version = rec.Title, rec.Version
	cs.maxSeq, cs.ticks, cs.derived = rec.MaxSeq, rec.Ticks, rec.DerivedSeq
	cs.ownFloor = rec.MaxSeq
	// The messages after the derived watermark are derived again (repair)
	// and noted then; of those before it nothing is known.
	cs.events = convEvents{from: rec.DerivedSeq}
	cs.members = map[string]*member{}
	cs.own = map[string][]int64{}
	cs.done = map[int64]bool{}
	for _, m := range rec.Members {
		cs.members[m.User] = &member{joined: m.JoinedSeq, delivered: m.DeliveredSeq, read: m.ReadSeq, pending: m.IsPending, first: m.FirstUndelivered}
	}
	if cs.parsed.Kind == protocol.ConvDirect {
		for _, u := range []string{cs.parsed.A, cs.parsed.B} {
			if cs.members[u] == nil {
				cs.members[u] = &member{joined: 1}
			}
		}
	}
	cs.resort()
}

// resort refreshes the sorted member list.
func (cs *convState) resort() {
	cs.sorted = cs.sorted[:0]
	for u := range cs.members {
		cs.sorted = append(cs.sorted, u)
	}
	slices.Sort(cs.sorted)
}

// isGroup reports whether the conversation is a group.
func (cs *convState) isGroup() bool { return cs.parsed.Kind == protocol.ConvGroup }

// minimum is the tick minimum over the members' boundaries.
func (cs *convState) minimum() protocol.Ticks {
	var t protocol.Ticks
	first := true
	for _, m := range cs.members {
		if first {
			t = protocol.Ticks{DeliveredSeq: m.delivered, ReadSeq: m.read}
			first = false
			continue
		}
		t.DeliveredSeq = min(t.DeliveredSeq, m.delivered)
		t.ReadSeq = min(t.ReadSeq, m.read)
	}
	return t
}

// rise is a rise of the tick minimum and whose messages it covers.
type rise struct {
	conv       string
	prev, next protocol.Ticks
	covered    []string // members with own messages in the risen ranges
	// floor, when not 0, says that the senders of the risen ranges' seqs
	// at or below it are the backend's to find (older than the state's
	// memory); members are the members to keep of them.
	floor   int64
	members []string
}

// ranges are the risen ranges of seqs, (from, to] each.
func (r *rise) ranges() [][2]int64 {
	var out [][2]int64
	if r.next.DeliveredSeq > r.prev.DeliveredSeq {
		out = append(out, [2]int64{r.prev.DeliveredSeq, r.next.DeliveredSeq})
	}
	if r.next.ReadSeq > r.prev.ReadSeq {
		out = append(out, [2]int64{r.prev.ReadSeq, r.next.ReadSeq})
	}
	return out
}

// raiseTicks recomputes the minimum and, when it rose, stores it and
// returns the rise; the caller holds mu.
func (cs *convState) raiseTicks() *rise {
	next := cs.ticks.Merge(cs.minimum())
	if next == cs.ticks {
		return nil
	}
	r := &rise{conv: cs.conv, prev: cs.ticks, next: next}
	cs.ticks = next
	if min(r.prev.DeliveredSeq, r.prev.ReadSeq) < cs.ownFloor {
		r.floor, r.members = cs.ownFloor, slices.Clone(cs.sorted)
	}
	for _, u := range cs.sorted {
		for _, seq := range cs.own[u] {
			if covers(r.prev, r.next, seq) {
				r.covered = append(r.covered, u)
				break
			}
		}
	}
	// Every member has read what is at or below the read minimum: no later
	// rise can cover it.
	for u, seqs := range cs.own {
		i, _ := slices.BinarySearch(seqs, next.ReadSeq+1)
		if i > 0 {
			cs.own[u] = slices.Delete(seqs, 0, i)
		}
	}
	return r
}

// covers reports whether a rise from prev to next covers seq: seq is in
// one of the risen ranges.
func covers(prev, next protocol.Ticks, seq int64) bool {
	return (seq > prev.DeliveredSeq && seq <= next.DeliveredSeq) || (seq > prev.ReadSeq && seq <= next.ReadSeq)
}

// recordOwn remembers that user sent seq, for later rises.
func (cs *convState) recordOwn(user string, seq int64) {
	seqs := append(cs.own[user], seq)
	if len(seqs) > maxOwnSeqs {
		cs.ownFloor = max(cs.ownFloor, seqs[0])
		seqs = slices.Delete(seqs, 0, 1)
	}
	cs.own[user] = seqs
}

// markDerived records that seq's derived rows are all put, advancing the
// watermark over every seq derived in a row; the caller holds mu.
func (cs *convState) markDerived(seq int64) {
	if seq <= cs.derived {
		return
	}
	cs.done[seq] = true
	for cs.done[cs.derived+1] {
		delete(cs.done, cs.derived+1)
		cs.derived++
	}
}

// head is the conversation's derived row as it stands; the caller holds
// mu.
func (cs *convState) head() store.ConvDerived {
	return store.ConvDerived{Conv: cs.conv, Ticks: cs.ticks, DerivedSeq: cs.derived}
}

// receipts lists the members' boundaries, by user; the caller holds mu.
func (cs *convState) receipts() []protocol.MemberReceipt {
	out := make([]protocol.MemberReceipt, 0, len(cs.sorted))
	for _, u := range cs.sorted {
		m := cs.members[u]
		out = append(out, protocol.MemberReceipt{User: u, DeliveredSeq: m.delivered, ReadSeq: m.read})
	}
	return out
}

// groupState is the group as the store shows it; the caller holds mu.
func (cs *convState) groupState() store.GroupState {
	return store.GroupState{Conv: cs.conv, Title: cs.title, Members: slices.Clone(cs.sorted), Version: cs.version}
}
