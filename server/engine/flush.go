package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/imcore/im/server/store"
	"github.com/imcore/im/session"
)

// errFlusherClosed is returned by a barrier after Close.
var errFlusherClosed = fmt.Errorf("engine: %w", store.ErrClosed)

// flushRetry is the wait before writing again a batch the backend refused.
const flushRetry = 100 * time.Millisecond

// failingWriteWait is how long a barrier waits on writes that keep failing
// before it gives up with their error: a shard's lease (a node that
// cannot write for that long has lost it anyway).
const failingWriteWait = 5 * time.Second

// flusher writes derived rows behind: the engine puts rows as it derives
// them, coalesced by key into the current batch; one goroutine hands each
// batch to Backend.Apply, while the next one fills. A batch the backend
// refuses is merged back under the rows put since and written again.
type flusher struct {
	be     store.Backend
	log    *slog.Logger
	gather time.Duration // see Options.FlushGather
	// fence, when set, fences each batch's rows before they are written
	// (Engine.fenceRows).
	fence func(d *store.Derived, staged *batch)

	mu      sync.Mutex
	cur     *batch
	gen     uint64        // generation of cur
	done    uint64        // every generation up to it is written
	failed  uint64        // the newest generation whose write failed (and err)
	err     error         // the failure reported to that generation's waiters
	changed chan struct{} // closed and replaced when done or failed moves
	kick    chan struct{}
	hurry   chan struct{} // a barrier waits: cut the gather short
	closing chan struct{}
	stopped chan struct{}
	closed  bool
	// after are the functions to run once their generation is written
	// (afterDone), in the writer's goroutine.
	after []afterWrite
}

// afterWrite is a function to run once generation gen is written.
type afterWrite struct {
	gen uint64
	fn  func()
}

func newFlusher(be store.Backend, log *slog.Logger, gather time.Duration, fence func(*store.Derived, *batch)) *flusher {
	f := &flusher{
		be:      be,
		log:     log,
		gather:  gather,
		fence:   fence,
		cur:     newBatch(),
		gen:     1,
		changed: make(chan struct{}),
		kick:    make(chan struct{}, 1),
		hurry:   make(chan struct{}, 1),
		closing: make(chan struct{}),
		stopped: make(chan struct{}),
	}
	go f.loop()
	return f
}

// put adds rows to the current batch (fn runs under the flusher's lock)
// and wakes the writer; it returns the batch's generation.
func (f *flusher) put(fn func(b *batch)) uint64 {
	f.mu.Lock()
	fn(f.cur)
	g := f.gen
	f.mu.Unlock()
	select {
	case f.kick <- struct{}{}:
	default:
	}
	return g
}

// written returns the newest generation written (every one up to it is).
func (f *flusher) written() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.done
}

// barrier returns once every row put before the call is written, or the
// write that carried them failed. A read waits on it, so the writer does
// not gather first.
func (f *flusher) barrier(ctx context.Context) error {
	select {
	case f.hurry <- struct{}{}:
	default:
	}
	return f.wait(ctx, f.current())
}

// barrierOf is barrier for the rows of the conversations and users picked:
// it takes them out of the current batch and writes them at once, beside
// the batch in flight, then waits for that one (it may hold some of them
// too). A shard handed over waits for its own rows, not for every row the
// node put (under load the write-behind is seconds deep). Writing them
// beside the batch is safe as every derived row is an idempotent update
// valid in whatever order rows are applied (store.Derived). Rows whose
// write fails go back under the current batch, to be written with it.
func (f *flusher) barrierOf(ctx context.Context, conv func(string) bool, user func(string) bool) error {
	f.mu.Lock()
	part := f.cur.split(conv, user)
	inFlight := f.gen - 1
	f.mu.Unlock()
	if !part.empty() {
		d := part.derived()
		if f.fence != nil {
			f.fence(&d, part)
		}
		if err := f.be.Apply(ctx, d); err != nil {
			f.mu.Lock()
			part.merge(f.cur) // what was put since is newer
			f.cur = part
			f.mu.Unlock()
			select {
			case f.kick <- struct{}{}:
			default:
			}
			return err
		}
	}
	return f.wait(ctx, inFlight)
}

// current returns the generation that holds every row put so far.
func (f *flusher) current() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gen
}

// wait returns once generation g is written. A write that fails is
// retried by the writer (a lease not yet renewed, a request timed out):
// wait returns the write's error only once writes have failed for
// failingWriteWait on end, storage that is down rather than refusing for
// a moment, or when ctx ends first.
func (f *flusher) wait(ctx context.Context, g uint64) error {
	select {
	case f.kick <- struct{}{}:
	default:
	}
	var failingSince time.Time
	for {
		f.mu.Lock()
		done, failed, err, changed, closed := f.done, f.failed, f.err, f.changed, f.closed
		f.mu.Unlock()
		switch {
		case done >= g:
			return nil
		case closed:
			return errFlusherClosed
		case failed >= g && failingSince.IsZero():
			failingSince = time.Now()
		case failed >= g && time.Since(failingSince) >= failingWriteWait:
			return err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			if failed >= g {
				return fmt.Errorf("%w (the last write: %w)", ctx.Err(), err)
			}
			return ctx.Err()
		case <-f.stopped:
		}
	}
}

// waitDone returns once generation g is written: a write that failed is
// retried, and waited for again.
func (f *flusher) waitDone(ctx context.Context, g uint64) error {
	for {
		err := f.wait(ctx, g)
		if err == nil || ctx.Err() != nil || errors.Is(err, errFlusherClosed) {
			return err
		}
		f.mu.Lock()
		done, failed, changed := f.done, f.failed, f.changed
		f.mu.Unlock()
		if done < g && failed >= g {
			// Wait for the retry's outcome.
			select {
			case <-changed:
			case <-ctx.Done():
				return ctx.Err()
			case <-f.stopped:
				return errFlusherClosed
			}
		}
	}
}

// afterDone runs fn in the writer's goroutine once generation g is
// written (at once, here, when it is already): what a derivation does
// once its rows are written, without a goroutine waiting for each.
func (f *flusher) afterDone(g uint64, fn func()) {
	f.mu.Lock()
	if f.done >= g {
		f.mu.Unlock()
		fn()
		return
	}
	f.after = append(f.after, afterWrite{gen: g, fn: fn})
	f.mu.Unlock()
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// runDue runs the functions whose generation is written; the caller does
// not hold mu.
func (f *flusher) runDue() {
	f.mu.Lock()
	var due []func()
	keep := f.after[:0]
	for _, a := range f.after {
		if a.gen <= f.done {
			due = append(due, a.fn)
		} else {
			keep = append(keep, a)
		}
	}
	clear(f.after[len(keep):])
	f.after = keep
	f.mu.Unlock()
	for _, fn := range due {
		fn()
	}
}

// loop writes batches until closed, then writes what is left.
func (f *flusher) loop() {
	defer close(f.stopped)
	for {
		select {
		case <-f.kick:
		case <-f.closing:
			for f.writeOne() {
			}
			return
		}
		if f.gather > 0 {
			// Woken after being idle: let the rows that follow the first
			// join it. Busy, the writes follow one another at once below.
			select {
			case <-time.After(f.gather):
			case <-f.hurry:
			case <-f.closing:
			}
		}
		for f.writeOne() {
		}
	}
}

// writeOne writes the current batch and reports whether there was one.
func (f *flusher) writeOne() bool {
	f.mu.Lock()
	b, g := f.cur, f.gen
	if b.empty() {
		// Nothing put since: this generation is written as it is; what is
		// put from now on belongs to the next.
		moved := f.done < g
		if moved {
			f.done, f.gen = g, g+1
			close(f.changed)
			f.changed = make(chan struct{})
		}
		f.mu.Unlock()
		if moved {
			f.runDue()
			// What they put is written next.
			f.mu.Lock()
			more := !f.cur.empty()
			f.mu.Unlock()
			return more
		}
		return false
	}
	f.cur, f.gen = newBatch(), g+1
	f.mu.Unlock()

	d := b.derived()
	if f.fence != nil {
		f.fence(&d, b)
	}
	err := f.be.Apply(context.Background(), d)

	f.mu.Lock()
	if err != nil {
		f.log.Error("writing derived state failed; retrying", "err", err)
		b.merge(f.cur) // what was put since is newer
		f.cur = b
		f.failed, f.err = g, err
	} else {
		f.done = g
	}
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
	if err != nil {
		select {
		case <-time.After(flushRetry):
		case <-f.closing:
			return false
		}
		return true
	}
	f.runDue()
	return true
}

// close writes what is left and stops the writer.
func (f *flusher) close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.mu.Unlock()
	close(f.closing)
	<-f.stopped
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	close(f.changed)
	f.changed = make(chan struct{})
	if !f.cur.empty() {
		return errors.New("engine closed with derived state not written: it is repaired from the log at the next start")
	}
	return nil
}

// batch is a set of derived rows coalesced by key.
type batch struct {
	members  map[store.MemberKey]*memberOp
	pending  map[store.MemberKey]*pendingOp
	sessions map[store.MemberKey]session.State
	totals   map[[2]string]store.TotalRow
	convs    map[string]store.ConvDerived
	former   map[store.MemberKey]store.FormerRow
	// sessionEpochs and totalEpochs hold, for the sessions and totals of
	// an owner's users, the epoch of the user's shard the rows were
	// computed under (userState.epoch): a row computed from memory of an
	// earlier time here is never written under a later one (fenceRows).
	// The embedded engine's rows are at 0.
	sessionEpochs map[store.MemberKey]int64
	totalEpochs   map[[2]string]int64
}

// pendingOp is what a batch does to one pending row. fresh: the batch
// began with the put of a row the owner knew absent (its member had no
// pending row, every earlier clear of it in an earlier batch); a clear
// that covers it then leaves nothing to write.
type pendingOp struct {
	row   store.PendingRow
	fresh bool
}

// memberOp is what a batch does to one boundary row: merge (or join) it,
// or delete it.
type memberOp struct {
	row  store.BoundaryRow
	gone int64 // > 0: delete the row if its joined seq is below this
}

func newBatch() *batch {
	return &batch{
		members:  map[store.MemberKey]*memberOp{},
		pending:  map[store.MemberKey]*pendingOp{},
		sessions: map[store.MemberKey]session.State{},
		totals:   map[[2]string]store.TotalRow{},
		convs:    map[string]store.ConvDerived{},
		former:   map[store.MemberKey]store.FormerRow{},

		sessionEpochs: map[store.MemberKey]int64{},
		totalEpochs:   map[[2]string]int64{},
	}
}

func (b *batch) empty() bool {
	return len(b.members)+len(b.pending)+len(b.sessions)+len(b.totals)+len(b.convs)+len(b.former) == 0
}

// boundary merges a boundary row (Join replacing what came before).
func (b *batch) boundary(r store.BoundaryRow) {
	k := store.MemberKey{User: r.User, Conv: r.Conv}
	op := b.members[k]
	if op == nil || r.Join || op.gone > 0 {
		if op != nil && op.gone > 0 && !r.Join {
			// A merge after a delete of the old row: keep the delete, the
			// merge belongs to a row that no longer exists.
			return
		}
		b.members[k] = &memberOp{row: r}
		return
	}
	op.row.DeliveredSeq = max(op.row.DeliveredSeq, r.DeliveredSeq)
	op.row.ReadSeq = max(op.row.ReadSeq, r.ReadSeq)
}

// gone deletes a member's boundary row for a membership that ended at
// seq before.
func (b *batch) gone(user, conv string, before int64) {
	b.members[store.MemberKey{User: user, Conv: conv}] = &memberOp{gone: before}
}

// putPending puts a pending row if absent. The engine puts one only for
// a member it knows has none (or whose clear comes before, in this batch
// or an earlier one).
func (b *batch) putPending(user, conv string, first int64) {
	k := store.MemberKey{User: user, Conv: conv}
	p := b.pending[k]
	if p == nil {
		b.pending[k] = &pendingOp{row: store.PendingRow{User: user, Conv: conv, FirstUndelivered: first}, fresh: true}
		return
	}
	if p.row.FirstUndelivered == 0 || p.row.FirstUndelivered <= p.row.Clear {
		p.row.FirstUndelivered = first
	}
}

// clearPending deletes a pending row whose first undelivered seq is at most
// upTo. A row this batch put and nothing stored clears to nothing at all:
// its put and the delete would both be calls that leave the table as it was.
func (b *batch) clearPending(user, conv string, upTo int64) {
	k := store.MemberKey{User: user, Conv: conv}
	p := b.pending[k]
	if p == nil {
		b.pending[k] = &pendingOp{row: store.PendingRow{User: user, Conv: conv, Clear: upTo}}
		return
	}
	p.row.Clear = max(p.row.Clear, upTo)
	if p.row.FirstUndelivered <= p.row.Clear {
		p.row.FirstUndelivered = 0
		if p.fresh {
			delete(b.pending, k)
		}
	}
}

// sessionAt puts st, computed under epoch (see batch.sessionEpochs), by
// the rule of session.Newest.
func (b *batch) sessionAt(st session.State, epoch int64) {
	k := store.MemberKey{User: st.User, Conv: st.Conv}
	next := session.Written{State: st, Epoch: epoch}
	if old, ok := b.sessions[k]; ok {
		next = session.Newest(session.Written{State: old, Epoch: b.sessionEpochs[k]}, next)
	}
	b.sessions[k] = next.State
	b.sessionEpochs[k] = next.Epoch
}

// totalAt puts r, computed under epoch, as sessionAt does.
func (b *batch) totalAt(r store.TotalRow, epoch int64) {
	k := [2]string{r.User, r.List}
	if old, ok := b.totals[k]; ok {
		if oldEpoch := b.totalEpochs[k]; oldEpoch > epoch || oldEpoch == epoch && old.At > r.At {
			return
		}
	}
	b.totals[k] = r
	b.totalEpochs[k] = epoch
}

func (b *batch) conv(c store.ConvDerived) {
	old := b.convs[c.Conv]
	c.Ticks = old.Ticks.Merge(c.Ticks)
	c.DerivedSeq = max(old.DerivedSeq, c.DerivedSeq)
	b.convs[c.Conv] = c
}

func (b *batch) formerView(r store.FormerRow) {
	b.former[store.MemberKey{User: r.User, Conv: r.Conv}] = r
}

// split moves the rows of the conversations and users picked out of b into
// a batch of their own, and returns it.
func (b *batch) split(conv func(string) bool, user func(string) bool) *batch {
	out := newBatch()
	picked := func(k store.MemberKey) bool { return conv(k.Conv) || user(k.User) }
	for k, op := range b.members {
		if picked(k) {
			out.members[k] = op
			delete(b.members, k)
		}
	}
	for k, p := range b.pending {
		if picked(k) {
			out.pending[k] = p
			delete(b.pending, k)
		}
	}
	for k, st := range b.sessions {
		if picked(k) {
			out.sessions[k], out.sessionEpochs[k] = st, b.sessionEpochs[k]
			delete(b.sessions, k)
			delete(b.sessionEpochs, k)
		}
	}
	for k, t := range b.totals {
		if user(k[0]) {
			out.totals[k], out.totalEpochs[k] = t, b.totalEpochs[k]
			delete(b.totals, k)
			delete(b.totalEpochs, k)
		}
	}
	for k, c := range b.convs {
		if conv(k) {
			// The ticks go now; the derived watermark stays with the
			// batch, behind the rows of the users it implies (those of
			// other shards may still be unwritten: a crash before them
			// must leave the message to be derived again).
			early := c
			early.DerivedSeq = 0
			out.convs[k] = early
		}
	}
	for k, r := range b.former {
		if picked(k) {
			out.former[k] = r
			delete(b.former, k)
		}
	}
	return out
}

// merge applies newer's rows after b's.
func (b *batch) merge(newer *batch) {
	for k, op := range newer.members {
		if op.gone > 0 {
			b.gone(k.User, k.Conv, op.gone)
		} else {
			b.boundary(op.row)
		}
	}
	for k, p := range newer.pending {
		if b.pending[k] == nil {
			b.pending[k] = p // nothing of b's before it: it stays as it was
			continue
		}
		if p.row.Clear > 0 {
			b.clearPending(p.row.User, p.row.Conv, p.row.Clear)
		}
		if p.row.FirstUndelivered > 0 {
			b.putPending(p.row.User, p.row.Conv, p.row.FirstUndelivered)
		}
	}
	for k, st := range newer.sessions {
		b.sessionAt(st, newer.sessionEpochs[k])
	}
	for k, t := range newer.totals {
		b.totalAt(t, newer.totalEpochs[k])
	}
	for _, c := range newer.convs {
		b.conv(c)
	}
	for _, f := range newer.former {
		b.formerView(f)
	}
}

// derived is the batch as the backend takes it.
func (b *batch) derived() store.Derived {
	var d store.Derived
	for k, op := range b.members {
		if op.gone > 0 {
			d.Gone = append(d.Gone, store.MemberGone{User: k.User, Conv: k.Conv, Before: op.gone})
		} else {
			d.Boundaries = append(d.Boundaries, op.row)
		}
	}
	for _, p := range b.pending {
		d.Pending = append(d.Pending, p.row)
	}
	for _, st := range b.sessions {
		d.Sessions = append(d.Sessions, st)
	}
	for _, t := range b.totals {
		d.Totals = append(d.Totals, t)
	}
	for _, c := range b.convs {
		d.Convs = append(d.Convs, c)
	}
	for _, f := range b.former {
		d.Former = append(d.Former, f)
	}
	return d
}

// dropUsers takes the sessions and totals of the users picked out of the
// current batch, unwritten, and returns how many rows it took.
func (f *flusher) dropUsers(user func(string) bool) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for k := range f.cur.sessions {
		if user(k.User) {
			delete(f.cur.sessions, k)
			delete(f.cur.sessionEpochs, k)
			n++
		}
	}
	for k := range f.cur.totals {
		if user(k[0]) {
			delete(f.cur.totals, k)
			delete(f.cur.totalEpochs, k)
			n++
		}
	}
	return n
}
