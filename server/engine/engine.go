// Package engine is the messaging domain's state, written once above
// storage: it implements chat.Engine on any store.Backend.
//
// A send is one atomic append to the log (Backend.Append: the message, its
// seq, its idempotency key). Everything the message implies for each member
// — the sender's implicit read, the other members' pending-delivery rows,
// every member's session with its timestamps and unread totals, the
// conversation's tick minimum and its rise in every member's session — is
// derived by the engine from the message, in memory, and written behind as
// idempotent rows (Backend.Apply), many operations' rows coalesced into one
// write per (user, conversation). Marks, session operations and group
// changes work the same way; a mark or an operation is answered once its
// rows are written.
//
// # Hot state
//
// The engine keeps what it needs in memory, hydrated from the backend on
// first use: each conversation's head (newest seq, tick minimum, members
// with their boundaries and pending rows) and each user's clock, unread
// totals and sessions. In one process this cache is the truth and the
// backend its durable copy; nothing in the hot path reads the backend.
//
// # Owners
//
// Each conversation and each user has one owner at a time (Options.Owners,
// owned.go): the engine keeps in memory, as the truth, what its node owns,
// gives the seqs of the conversations it owns (ownedappend.go), and has
// what an operation does to a member's session applied by that member's
// owner — itself, or another node of a scaled-out deployment. The
// embedded server owns everything, a node of several the shards it holds;
// the engine runs the same way on both. A node that takes a shard derives
// again what its previous owner stored but did not derive (RepairConvs).
//
// # Locks
//
// Every write to a user's sessions, clock or totals happens in that user's
// critical section (users.go), and every write to a conversation's members'
// boundaries and pending rows in that conversation's (convs.go); no code
// holds one while taking another, and none holds one across I/O. Users are
// spread over 64 shards and a shard's lock is the critical section of its
// users: a message to a group of a thousand takes each shard's lock once
// to load and once to change the sessions, never a lock per member. The
// rows one critical section changes (a session, its unread totals, its
// sub-business gateway) are handed to the writer as one, so no backend
// snapshot holds one without the others.
//
// # Sessions and ticks
//
// A session stores the conversation's ticks as of its last change, and
// every rise of the tick minimum reaches every member's session: the
// members whose own messages it covers get a new version (active_ts
// moves, so their offline devices learn it by sync); the others take it in
// place, under the same active_ts. So every session shows the
// conversation's ticks, and one active_ts always shows the same ticks of
// the user's own messages. A group's membership is read under a gate that sends
// share and changes hold alone, so a member removed while it sends is
// either in before the removal or refused after it.
//
// # Crash repair
//
// Each conversation's derived watermark (ConvRecord.DerivedSeq) says up to
// which seq every message's derived rows are written; it is written with
// those rows, never ahead of them. A crash between an append and the write
// of its derived rows leaves the watermark behind the newest seq. The
// owner of a conversation's shard repairs it as it takes the shard
// (RepairConvs): it derives each message after the watermark again from
// the log — group changes from the change recorded with their system
// message — and writes the rows. Every derived row is idempotent (max-merges, put-if-absent,
// newer-wins), so deriving a message twice changes nothing the first time
// did not.
package engine

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/imcore/im/server/store"
)

// Engine is the domain state over a backend. Its methods are safe for
// concurrent use.
type Engine struct {
	closed atomic.Bool
	be     store.Backend
	now    func() time.Time
	log    *slog.Logger
	users  *userTable
	convs  *convTable
	// hydrating shares the backend reads of loads missing the same
	// users and sessions at once (hydrateShared).
	hydrating singleflight.Group
	flush     *flusher
	owners    Owners
	// editWindow bounds edits and deletions (Options.EditWindow).
	editWindow time.Duration
	// appendSlots bounds the owner's appends in flight (ownedappend.go).
	appendSlots chan struct{}
	// people keeps users' settings (people.go); peopleChanged is
	// Options.PeopleChanged.
	people        *people
	peopleChanged func(ctx context.Context, user string) error

	// boot names this engine's life in WriteTickets (a node restarted
	// holds none of the rows its earlier life had put). It changes too
	// when the writer drops rows of users this node no longer owns
	// (fenceRows): every ticket given before then is unconfirmable, and
	// the effects it names are applied again where their users are now.
	boot atomic.Pointer[string]
	// settling counts the derivations waiting for other nodes to write
	// their rows (settle.go); stop ends their wait at Close.
	settling sync.WaitGroup
	stopCtx  context.Context
	stop     context.CancelFunc
}

// Options tune an Engine. The zero value is the production setting.
type Options struct {
	// Now is the clock for server timestamps; time.Now when nil.
	Now func() time.Time
	// Logger receives the engine's diagnostics; slog.Default when nil.
	Logger *slog.Logger
	// MaxSessions bounds the sessions kept in memory (clean ones beyond it
	// are forgotten, least recently used first); 200,000 when zero.
	MaxSessions int
	// FlushGather is how long the writer of derived rows waits, once woken
	// after being idle, for more rows to join the first: under light load
	// a message's rows and its receipts' rows then share one write. 0
	// means DefaultFlushGather; below 0, no wait.
	FlushGather time.Duration
	// Owners says which conversations and users the engine owns and
	// reaches the owners of the others (see Owners); nil: the engine owns
	// every one, alone (a tool, a test). The server runs its engine under
	// routing.Router, which repairs each shard as it takes it
	// (RepairConvs).
	Owners Owners
	// EditWindow, when positive, bounds how long after its server_ts a
	// message can be edited or deleted for everyone; 0 means no bound.
	EditWindow time.Duration
	// PeopleChanged, when set, is called after a user's settings changed
	// here and before the change is answered: on several nodes it has
	// every other node Forget them. An error fails the change (written,
	// but not answered: the client tries again).
	PeopleChanged func(ctx context.Context, user string) error
}

// closeSettle bounds how long Close lets derivations settle.
const closeSettle = 5 * time.Second

// DefaultFlushGather is the default Options.FlushGather.
const DefaultFlushGather = time.Millisecond

// New returns an engine over be. It repairs nothing: the owner of a
// shard repairs it as it takes it (RepairConvs), and an engine alone on a
// backend repairs it all with Repair.
func New(ctx context.Context, be store.Backend, opts Options) (*Engine, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = 200_000
	}
	if opts.FlushGather == 0 {
		opts.FlushGather = DefaultFlushGather
	}
	e := &Engine{
		be:     be,
		now:    opts.Now,
		log:    opts.Logger,
		users:  newUserTable(opts.MaxSessions),
		convs:  newConvTable(),
		owners: opts.Owners,

		editWindow: opts.EditWindow,

		appendSlots: make(chan struct{}, appendWriters(be)),

		people:        newPeople(),
		peopleChanged: opts.PeopleChanged,
	}
	if e.owners == nil {
		e.owners = alone{e}
	}
	e.stopCtx, e.stop = context.WithCancel(context.Background())
	e.newLife()
	e.flush = newFlusher(be, opts.Logger, opts.FlushGather, e.fenceRows)
	return e, nil
}

// Close writes what is not written yet and closes the backend. The
// derivations waiting for rows settle first, for a while: those waiting
// on this engine's own rows finish once the rows put so far are written,
// and a conversation is left behind its log (to be derived again by its
// next owner) only where other nodes cannot confirm theirs in time.
func (e *Engine) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeSettle)
	if err := e.flush.barrier(ctx); err == nil {
		settled := make(chan struct{})
		go func() {
			e.settling.Wait()
			close(settled)
		}()
		select {
		case <-settled:
		case <-ctx.Done():
		}
	}
	cancel()
	e.stop()
	e.settling.Wait()
	errFlush := e.flush.close()
	return errors.Join(errFlush, e.be.Close())
}

// begin starts an operation: it refuses one on a closed engine, or whose
// context is already done, and returns the context the operation goes on
// with once it has changed something — detached from the caller's, since a
// change made (a message stored, a mark applied in memory) is carried
// through to its end whatever becomes of the caller.
func (e *Engine) begin(ctx context.Context) (context.Context, error) {
	if e.closed.Load() {
		return nil, store.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return context.WithoutCancel(ctx), nil
}

// Backend returns the engine's backend (for tools that inspect it).
func (e *Engine) Backend() store.Backend { return e.be }

// appendWriters is how many appends the engine writes at once on be.
func appendWriters(be store.Backend) int {
	if w, ok := be.(store.AppendWriters); ok {
		return w.AppendWriters()
	}
	return defaultAppendWriters
}

// nowMS is the clock in Unix milliseconds.
func (e *Engine) nowMS() int64 { return e.now().UnixMilli() }
