package server_test

// A randomised, concurrent end-to-end test of the session model
// (PROTOCOL.md "Sessions" and "Receipts and ticks"; the source design's
// session model, a stored session per user and conversation): two devices
// of bob and four other users, each device driven by its own goroutine with
// its own fixed random seed, send, read, acknowledge and apply every
// session operation at once. Every session any device is shown is checked
// on the spot, everything is recorded, and once all is quiet the records
// are checked against each other and against a fresh full sync:
//
//   - every session: unread_count == write_seq - read_seq, and the rest of
//     its shape;
//   - total_unread == the sum of unread_count over sessions neither muted
//     (as returned) nor deleted, at every full sync during the run and at
//     the end;
//   - per user, an active_ts names one change: two observations with the
//     same active_ts are the same session in the same state; a write_ts is
//     never shared by two sessions;
//   - per user, timestamps never go back: an answer received before a
//     request was sent never shows a session newer than that request's
//     answer does, and a session that changed after a full sync has an
//     active_ts above everything that sync returned;
//   - sync pages come in strictly increasing active_ts, and a device that
//     syncs incrementally from its cursor, at random moments, ends with
//     exactly what a fresh full sync returns;
//   - a session_sync nudge is never ahead of what a sync then returns, and
//     every device of a user receives the same nudges.
//
// The second variant steps the server's clock back by ten seconds in the
// middle of the run.

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server"
	"github.com/imcore/im/server/servertest"
)

const (
	invBob       = "bob"
	invLonely    = "zed" // never connects: bob's d:bob:zed has operations but no message
	invBobOps    = 700   // operations per device of bob
	invSenderOps = 400   // operations per other user
	invMaxPages  = 50    // a sync round under load gives up after this many pages
	invHour      = int64(time.Hour / time.Millisecond)
)

// invSenders are the users besides bob, each with one device. Each has a
// direct chat with bob and with its two neighbours in this ring.
var invSenders = []string{"alice", "carol", "dave", "erin"}

// invCategories are the categories set_category chooses from.
var invCategories = []string{"", "work", "promotions"}

func TestSessionInvariantsUnderConcurrency(t *testing.T) {
	t.Run("clock", func(t *testing.T) { invRunScenario(t, nil) })
	t.Run("clock_steps_back", func(t *testing.T) {
		invRunScenario(t, &invClock{now: time.UnixMilli(1763800000000)})
	})
}

// invClock is a controllable server clock: it moves one millisecond on
// every reading (so timestamps never collide by accident and the test does
// not depend on the machine's speed) and can be stepped back.
type invClock struct {
	mu        sync.Mutex
	now       time.Time
	stepped   bool
	maxBefore time.Time // the latest time returned before the step
	minAfter  time.Time // the earliest time returned after it
}

func (c *invClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(time.Millisecond)
	if !c.stepped {
		c.maxBefore = c.now
	} else if c.minAfter.IsZero() || c.now.Before(c.minAfter) {
		c.minAfter = c.now
	}
	return c.now
}

func (c *invClock) stepBack(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(-d)
	c.stepped = true
}

// peek returns the last time read, without reading the clock.
func (c *invClock) peek() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// setNext makes the next reading return next.
func (c *invClock) setNext(next time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = next.Add(-time.Millisecond)
}

// invRun is what the devices of one scenario share.
type invRun struct {
	env    *servertest.Env
	clock  *invClock // nil: the real clock
	stamps atomic.Int64
	ops    atomic.Int64
	stepAt int64 // the operation after which the clock steps back
	// convsOf lists the conversations each user may have a session of.
	convsOf map[string][]string
}

// serverNow is the server's time in ms, for mute ends.
func (r *invRun) serverNow() int64 {
	if r.clock != nil {
		return r.clock.Now().UnixMilli()
	}
	return time.Now().UnixMilli()
}

// invObs is one session as a device was shown it, with the stamps taken
// just before its request was written and just after its answer arrived.
type invObs struct {
	send, recv int64
	where      string
	s          protocol.Session
}

// invSnap is a full sync: every session of the user at one moment.
type invSnap struct {
	send, recv int64
	ts         map[string]int64
	max        int64
}

// invDevice is one client and everything it saw. Only its goroutine uses
// it until the run is over; then the test's goroutine does.
type invDevice struct {
	t         testing.TB
	c         *servertest.Client
	run       *invRun
	user      string
	name      string
	rng       *rand.Rand
	convs     []string // conversations it operates on
	sendConvs []string // conversations it sends in
	nextID    int
	lastMsgID map[string]string

	cursor int64
	inc    map[string]protocol.Session // the list as built from incremental syncs
	seen   map[string]int64            // the newest seq known per conversation
	obs    []invObs
	snaps  []invSnap
	nudges []int64 // every session_sync cursor received
	nudged int64   // the highest of them
	sent   map[string][]int64
	logs   []string
}

func invRunScenario(t *testing.T, clock *invClock) {
	total := int64(2*invBobOps + len(invSenders)*invSenderOps)
	run := &invRun{clock: clock, stepAt: total / 2, convsOf: map[string][]string{}}
	run.env = servertest.Start(t, func(c *server.Config) {
		c.Gateway.RateLimit = rate.Inf // thousands of frames in a few seconds
		if clock != nil {
			c.Now = clock.Now
		}
	})
	async := servertest.Async{TB: t}

	bobMsgConvs := []string{}
	for i, u := range invSenders {
		next := invSenders[(i+1)%len(invSenders)]
		prev := invSenders[(i+len(invSenders)-1)%len(invSenders)]
		withBob := servertest.Direct(u, invBob)
		bobMsgConvs = append(bobMsgConvs, withBob)
		run.convsOf[u] = []string{withBob, servertest.Direct(u, next), servertest.Direct(u, prev)}
	}
	run.convsOf[invBob] = append(slices.Clone(bobMsgConvs), servertest.Direct(invBob, invLonely))

	var devices []*invDevice
	newDevice := func(user, name string, seed uint64, sendConvs []string) *invDevice {
		c := run.env.Dial(async, user, name)
		d := &invDevice{
			t: async, c: c, run: run, user: user, name: user + "/" + name,
			rng:       rand.New(rand.NewPCG(seed, 0x5e55)),
			convs:     run.convsOf[user],
			sendConvs: sendConvs,
			lastMsgID: map[string]string{},
			inc:       map[string]protocol.Session{},
			seen:      map[string]int64{},
			sent:      map[string][]int64{},
		}
		// Registered for pushes once a request is answered (the welcome is
		// written before the device is registered).
		d.request(&protocol.Sync{Ref: protocol.Ref{ID: d.id()}, Limit: 1})
		devices = append(devices, d)
		return d
	}
	bobPhone := newDevice(invBob, "phone", 1, bobMsgConvs)
	bobLaptop := newDevice(invBob, "laptop", 2, bobMsgConvs)
	var senders []*invDevice
	for i, u := range invSenders {
		senders = append(senders, newDevice(u, "laptop", uint64(10+i), run.convsOf[u]))
	}

	var wg sync.WaitGroup
	for _, d := range devices {
		n := invSenderOps
		if d.user == invBob {
			n = invBobOps
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				if d.user == invBob {
					d.bobStep()
				} else {
					d.senderStep()
				}
				if d.run.ops.Add(1) == d.run.stepAt && d.run.clock != nil {
					d.stepClockBack()
				}
			}
		}()
	}
	wg.Wait()
	for _, d := range devices {
		for _, l := range d.logs {
			t.Log(l)
		}
	}
	if t.Failed() {
		return
	}
	if clock != nil {
		clock.mu.Lock()
		stepped, before, after := clock.stepped, clock.maxBefore, clock.minAfter
		clock.mu.Unlock()
		if !stepped || after.IsZero() || !after.Before(before) {
			t.Fatalf("the server clock did not step back under the server: stepped %v, latest before %v, earliest after %v", stepped, before, after)
		}
	}

	// Everything is quiet now; the devices belong to this goroutine.
	sendCounts := map[string]int64{}
	ownSeqs := map[string]map[string][]int64{} // user -> conv -> seqs it sent
	for _, d := range devices {
		if ownSeqs[d.user] == nil {
			ownSeqs[d.user] = map[string][]int64{}
		}
		for conv, seqs := range d.sent {
			sendCounts[conv] += int64(len(seqs))
			ownSeqs[d.user][conv] = append(ownSeqs[d.user][conv], seqs...)
		}
	}
	invVerify(t, invBob, []*invDevice{bobPhone, bobLaptop}, sendCounts, ownSeqs[invBob])
	for _, d := range senders {
		invVerify(t, d.user, []*invDevice{d}, sendCounts, ownSeqs[d.user])
	}
	var nObs, nNudges int
	for _, d := range devices {
		nObs += len(d.obs)
		nNudges += len(d.nudges)
	}
	t.Logf("%d operations, %d sessions observed, %d session_sync nudges, %d request stamps",
		run.ops.Load(), nObs, nNudges, run.stamps.Load())
}

func (d *invDevice) id() string {
	d.nextID++
	return fmt.Sprintf("%s-%d", d.name, d.nextID)
}

func (d *invDevice) sawSeq(conv string, seq int64) {
	d.seen[conv] = max(d.seen[conv], seq)
}

// request writes f (whose id is id) and returns its answer with the stamps
// taken before the write and after the answer. Every frame received
// meanwhile is looked at and dropped, so nothing piles up.
func (d *invDevice) request(f protocol.Frame) (protocol.Frame, int64, int64) {
	d.t.Helper()
	id := servertest.RequestID(f)
	if id == "" {
		panic("request without id")
	}
	send := d.run.stamps.Add(1)
	d.c.Write(f)
	for {
		g := d.c.Expect("answer to "+id, func(protocol.Frame) bool { return true })
		switch g := g.(type) {
		case *protocol.SessionSync:
			d.nudges = append(d.nudges, g.Cursor)
			d.nudged = max(d.nudged, g.Cursor)
		case *protocol.MsgPush:
			d.sawSeq(g.Msg.Conv, g.Msg.Seq)
		}
		if servertest.RequestID(g) != id {
			continue
		}
		recv := d.run.stamps.Add(1)
		if e, ok := g.(*protocol.ErrorFrame); ok {
			d.t.Fatalf("%s: %s answered error %s: %s", d.name, servertest.Describe(f), e.Code, e.Message)
		}
		return g, send, recv
	}
}

func (d *invDevice) pick(list []string) string { return list[d.rng.IntN(len(list))] }

// bobStep is one random operation of a device of bob.
func (d *invDevice) bobStep() {
	switch r := d.rng.IntN(100); {
	case r < 15:
		d.send(d.pick(d.sendConvs))
	case r < 32:
		d.mark(true)
	case r < 42:
		d.mark(false)
	case r < 78:
		d.sessionOp(d.pick(d.convs))
	case r < 96:
		d.syncRound()
	default:
		d.snapshot()
	}
}

// senderStep is one random operation of another user: mostly messages to
// bob, some to its neighbours, and a little of everything else.
func (d *invDevice) senderStep() {
	switch r := d.rng.IntN(100); {
	case r < 50:
		d.send(d.convs[0])
	case r < 60:
		d.send(d.pick(d.convs[1:]))
	case r < 70:
		d.mark(true)
	case r < 77:
		d.mark(false)
	case r < 85:
		d.sessionOp(d.pick(d.convs))
	case r < 96:
		d.syncRound()
	default:
		d.snapshot()
	}
}

// send sends a message, now and then repeating the last msg_id (a retry),
// which must be answered with the original seq and change nothing.
func (d *invDevice) send(conv string) *protocol.Sent {
	d.t.Helper()
	return d.sendMaybeRetry(conv, true)
}

func (d *invDevice) sendMaybeRetry(conv string, mayRetry bool) *protocol.Sent {
	d.t.Helper()
	msgID, retry := d.lastMsgID[conv], true
	if msgID == "" || !mayRetry || d.rng.IntN(100) >= 3 {
		msgID, retry = d.id(), false
	}
	f := &protocol.Send{Ref: protocol.Ref{ID: d.id()}, Conv: conv, MsgID: msgID, Body: "hi from " + d.name, ClientTS: 1}
	ans, _, _ := d.request(f)
	sent, ok := ans.(*protocol.Sent)
	if !ok || sent.Conv != conv || sent.MsgID != msgID || sent.Seq <= 0 {
		d.t.Fatalf("%s: send in %s answered %s", d.name, conv, servertest.Describe(ans))
	}
	if retry {
		seqs := d.sent[conv]
		if seqs[len(seqs)-1] != sent.Seq {
			d.t.Fatalf("%s: retry of %s in %s got seq %d, the original has %d", d.name, msgID, conv, sent.Seq, seqs[len(seqs)-1])
		}
		return sent
	}
	d.lastMsgID[conv] = msgID
	d.sent[conv] = append(d.sent[conv], sent.Seq)
	d.sawSeq(conv, sent.Seq)
	return sent
}

// mark sends a read (or delivered) frame of one or two marks at random
// seqs around what the device knows of each conversation: below, at, just
// above (clamped), or far above.
func (d *invDevice) mark(read bool) {
	d.t.Helper()
	var marks []protocol.Mark
	for range 1 + d.rng.IntN(2) {
		conv := d.pick(d.convs)
		seq := d.rng.Int64N(d.seen[conv] + 3)
		if d.rng.IntN(20) == 0 {
			seq = 1 << 40
		}
		marks = append(marks, protocol.Mark{Conv: conv, Seq: seq})
	}
	var f protocol.Frame
	if read {
		f = &protocol.Read{Ref: protocol.Ref{ID: d.id()}, Marks: marks}
	} else {
		f = &protocol.Delivered{Ref: protocol.Ref{ID: d.id()}, Marks: marks}
	}
	if ans, _, _ := d.request(f); ans.FrameType() != "ok" {
		d.t.Fatalf("%s: %s answered %s", d.name, servertest.Describe(f), servertest.Describe(ans))
	}
}

// sessionOp applies a random session operation to conv and checks that
// the session in the answer shows its effect.
func (d *invDevice) sessionOp(conv string) {
	d.t.Helper()
	ops := []string{"pin", "unpin", "mute", "mute", "unmute", "mark_unread", "delete", "set_category"}
	f := &protocol.SessionOp{Ref: protocol.Ref{ID: d.id()}, Conv: conv, Op: d.pick(ops)}
	pastMute, shortMute := false, false
	switch f.Op {
	case "mute":
		switch d.rng.IntN(4) {
		case 1:
			f.Until = d.run.serverNow() + invHour
		case 2:
			f.Until = d.run.serverNow() - invHour
			pastMute = true
		case 3:
			// Runs out during the run, perhaps before the answer.
			f.Until = d.run.serverNow() + 1 + d.rng.Int64N(300)
			shortMute = true
		}
	case "set_category":
		f.Category = d.pick(invCategories)
	}
	ans, send, recv := d.request(f)
	ok, isOK := ans.(*protocol.OK)
	if !isOK || ok.Session == nil {
		d.t.Fatalf("%s: %s answered %s", d.name, servertest.Describe(f), servertest.Describe(ans))
	}
	s := *ok.Session
	where := "ok to " + f.Op + " " + conv
	if s.Conv != conv {
		d.t.Fatalf("%s: %s: the session is %s", d.name, where, s.Conv)
	}
	d.checkSession(where, s)
	bad := ""
	switch f.Op {
	case "pin", "unpin":
		if want := map[string]int64{"pin": 1, "unpin": 0}[f.Op]; s.Priority != want {
			bad = fmt.Sprintf("priority %d", s.Priority)
		}
	case "mute":
		// A mute until a time already past mutes nothing (the session is
		// shown as it was); a short one may have run out by the answer.
		// One that took effect clears marked_unread.
		took := s.Muted && s.MuteUntil == f.Until
		switch {
		case pastMute && took:
			bad = "muted until a time already past"
		case !pastMute && !shortMute && !took:
			bad = fmt.Sprintf("muted %v until %d, want until %d", s.Muted, s.MuteUntil, f.Until)
		case took && s.MarkedUnread:
			bad = "muted, yet still marked unread"
		}
	case "unmute":
		if s.Muted || s.MuteUntil != 0 {
			bad = fmt.Sprintf("muted %v until %d", s.Muted, s.MuteUntil)
		}
	case "mark_unread":
		if !s.MarkedUnread {
			bad = "not marked unread"
		}
	case "delete":
		if !s.Deleted || s.UnreadCount != 0 || s.ReadSeq != s.WriteSeq {
			bad = fmt.Sprintf("deleted %v unread %d read_seq %d write_seq %d", s.Deleted, s.UnreadCount, s.ReadSeq, s.WriteSeq)
		}
	case "set_category":
		if s.Category != f.Category {
			bad = fmt.Sprintf("category %q, want %q", s.Category, f.Category)
		}
	}
	if bad != "" {
		d.t.Errorf("%s: %s: %s: %+v", d.name, where, bad, s)
	}
	d.obs = append(d.obs, invObs{send, recv, where, s})
	if (pastMute || shortMute) && d.rng.IntN(2) == 0 {
		d.snapshot() // a mute that ran out is turned off by the sync
	}
}

// syncPage asks for one page and checks it: at most limit sessions, all
// changed after since, in strictly increasing active_ts, the cursor the
// last of them.
func (d *invDevice) syncPage(since int64, limit int) (*protocol.Sessions, int64, int64) {
	d.t.Helper()
	ans, send, recv := d.request(&protocol.Sync{Ref: protocol.Ref{ID: d.id()}, Since: since, Limit: limit})
	p, ok := ans.(*protocol.Sessions)
	if !ok {
		d.t.Fatalf("%s: sync since %d answered %s", d.name, since, servertest.Describe(ans))
	}
	where := fmt.Sprintf("sync since %d limit %d", since, limit)
	if len(p.Sessions) > limit || (p.HasMore && len(p.Sessions) != limit) {
		d.t.Errorf("%s: %s: %d sessions, has_more %v", d.name, where, len(p.Sessions), p.HasMore)
	}
	last := since
	for _, s := range p.Sessions {
		if s.ActiveTS <= last {
			d.t.Errorf("%s: %s: %s has active_ts %d after %d: not strictly increasing (or not after since)", d.name, where, s.Conv, s.ActiveTS, last)
		}
		last = s.ActiveTS
		d.checkSession(where, s)
		d.obs = append(d.obs, invObs{send, recv, where, s})
	}
	if p.Cursor != last {
		d.t.Errorf("%s: %s: cursor %d, want %d (the last active_ts returned, or since)", d.name, where, p.Cursor, last)
	}
	if p.TotalUnread < 0 {
		d.t.Errorf("%s: %s: total_unread %d", d.name, where, p.TotalUnread)
	}
	return p, send, recv
}

// syncRound syncs from the device's cursor until has_more is false,
// applying every page to its list. A nudge received before the round must
// be covered by the cursor the round ends at.
func (d *invDevice) syncRound() {
	d.t.Helper()
	d.syncRoundPages(invMaxPages, []int{1, 2, 5, 200}[d.rng.IntN(4)])
}

func (d *invDevice) syncRoundPages(maxPages, limit int) {
	d.t.Helper()
	nudged := d.nudged
	for pages := 0; ; pages++ {
		if pages == maxPages {
			return // the list changes faster than this limit pages it
		}
		p, _, _ := d.syncPage(d.cursor, limit)
		for _, s := range p.Sessions {
			if old, ok := d.inc[s.Conv]; ok && s.ActiveTS <= old.ActiveTS {
				d.t.Errorf("%s: incremental sync returned %s at active_ts %d, already held at %d", d.name, s.Conv, s.ActiveTS, old.ActiveTS)
			}
			d.inc[s.Conv] = s
			d.sawSeq(s.Conv, s.WriteSeq)
		}
		d.cursor = p.Cursor
		if !p.HasMore {
			break
		}
	}
	if d.cursor < nudged {
		d.t.Errorf("%s: session_sync announced cursor %d, but a complete sync from the cursor ended at %d", d.name, nudged, d.cursor)
	}
}

// snapshot makes a full sync in one page and checks the unread total of
// that snapshot.
func (d *invDevice) snapshot() []protocol.Session {
	d.t.Helper()
	p, send, recv := d.syncPage(0, 1000)
	if p.HasMore {
		d.t.Fatalf("%s: a full sync of %d sessions says has_more", d.name, len(p.Sessions))
	}
	snap := invSnap{send: send, recv: recv, ts: map[string]int64{}}
	var sum int64
	for _, s := range p.Sessions {
		if !s.Muted && !s.Deleted {
			sum += s.UnreadCount
		}
		snap.ts[s.Conv] = s.ActiveTS
		snap.max = max(snap.max, s.ActiveTS)
		d.sawSeq(s.Conv, s.WriteSeq)
	}
	if p.TotalUnread != sum {
		d.t.Errorf("%s: full sync: total_unread %d, but the sessions neither muted nor deleted hold %d unread: %s",
			d.name, p.TotalUnread, sum, invDescribe(p.Sessions))
	}
	d.snaps = append(d.snaps, snap)
	return p.Sessions
}

// stepClockBack sets the server's clock back by ten seconds between two
// operations of this device, with the others running.
func (d *invDevice) stepClockBack() {
	d.t.Helper()
	conv := d.pick(d.sendConvs)
	before := d.sendMaybeRetry(conv, false)
	d.run.clock.stepBack(10 * time.Second)
	after := d.sendMaybeRetry(conv, false)
	d.logs = append(d.logs, fmt.Sprintf("%s stepped the clock back 10s after operation %d: server_ts %d before, %d after",
		d.name, d.run.stepAt, before.ServerTS, after.ServerTS))
}

// checkSession checks what holds of any session at any moment.
func (d *invDevice) checkSession(where string, s protocol.Session) {
	d.t.Helper()
	var bad []string
	c, ok := protocol.ParseConv(s.Conv)
	if !ok || !slices.Contains(d.run.convsOf[d.user], s.Conv) {
		d.t.Errorf("%s: %s: unexpected session %s", d.name, where, s.Conv)
		return
	}
	if s.Kind != "direct" || s.Title != c.Peer(d.user) || !slices.Equal(s.Members, []string{c.A, c.B}) {
		bad = append(bad, fmt.Sprintf("kind %q title %q members %v", s.Kind, s.Title, s.Members))
	}
	if s.UnreadCount != s.WriteSeq-s.ReadSeq {
		bad = append(bad, fmt.Sprintf("unread_count %d != write_seq %d - read_seq %d", s.UnreadCount, s.WriteSeq, s.ReadSeq))
	}
	if s.ReadSeq < 0 || s.ReadSeq > s.WriteSeq {
		bad = append(bad, fmt.Sprintf("read_seq %d outside 0..write_seq %d", s.ReadSeq, s.WriteSeq))
	}
	if s.Deleted && s.UnreadCount != 0 {
		bad = append(bad, fmt.Sprintf("deleted with %d unread", s.UnreadCount))
	}
	if s.ActiveTS <= 0 || s.WriteTS < 0 || s.WriteTS > s.ActiveTS {
		bad = append(bad, fmt.Sprintf("active_ts %d write_ts %d", s.ActiveTS, s.WriteTS))
	}
	if !s.Muted && s.MuteUntil != 0 {
		bad = append(bad, fmt.Sprintf("not muted, mute_until %d", s.MuteUntil))
	}
	if s.Priority != 0 && s.Priority != 1 {
		bad = append(bad, fmt.Sprintf("priority %d", s.Priority))
	}
	if !slices.Contains(invCategories, s.Category) || s.SubBiz != "" {
		bad = append(bad, fmt.Sprintf("category %q sub_biz %q", s.Category, s.SubBiz))
	}
	switch {
	case s.WriteSeq == 0 && s.LastMsg != nil:
		bad = append(bad, "a last_msg with write_seq 0")
	case s.WriteSeq > 0 && (s.LastMsg == nil || s.LastMsg.Conv != s.Conv || s.LastMsg.Seq != s.WriteSeq):
		bad = append(bad, fmt.Sprintf("last_msg %+v with write_seq %d", s.LastMsg, s.WriteSeq))
	}
	if s.Ticks.ReadSeq < 0 || s.Ticks.ReadSeq > s.Ticks.DeliveredSeq || s.Ticks.DeliveredSeq > s.WriteSeq {
		bad = append(bad, fmt.Sprintf("ticks %+v with write_seq %d", s.Ticks, s.WriteSeq))
	}
	if len(bad) > 0 {
		d.t.Errorf("%s: %s: %s: %v: %+v", d.name, where, s.Conv, bad, s)
	}
}

// invState is a session without its ticks, which are the conversation's
// and may rise without the session changing (see invSameForOwner).
func invState(s protocol.Session) protocol.Session {
	s.Ticks = protocol.Ticks{}
	return s
}

// invSameForOwner reports whether ticks a and b (a the older) put every
// message the user sent (own) in the same state: a rise that covers none
// of them need not move the user's session.
func invSameForOwner(a, b protocol.Ticks, own []int64) bool {
	if a.DeliveredSeq > b.DeliveredSeq || a.ReadSeq > b.ReadSeq {
		return false
	}
	for _, seq := range own {
		if (seq > a.DeliveredSeq && seq <= b.DeliveredSeq) || (seq > a.ReadSeq && seq <= b.ReadSeq) {
			return false
		}
	}
	return true
}

func invDescribe(sessions []protocol.Session) string {
	out := ""
	for _, s := range sessions {
		out += fmt.Sprintf("[%s unread %d muted %v deleted %v] ", s.Conv, s.UnreadCount, s.Muted, s.Deleted)
	}
	return out
}

// invVerify checks one user's records once everything is quiet.
func invVerify(t *testing.T, user string, devs []*invDevice, sendCounts map[string]int64, own map[string][]int64) {
	t.Helper()
	// A sync first, so that mutes that have run out are turned off (a
	// change) before each device's last incremental sync; then the fresh
	// full sync the lists are compared with.
	devs[0].snapshot()
	for _, d := range devs {
		d.syncRoundPages(-1, 200)
	}
	full := devs[0].snapshot()
	fullByConv := map[string]protocol.Session{}
	for _, s := range full {
		fullByConv[s.Conv] = s
	}

	// The same list paged two at a time.
	var paged []protocol.Session
	for since, more := int64(0), true; more; {
		p, _, _ := devs[len(devs)-1].syncPage(since, 2)
		paged = append(paged, p.Sessions...)
		since, more = p.Cursor, p.HasMore
	}
	if !reflect.DeepEqual(paged, full) {
		t.Errorf("%s: a full sync paged by 2 differs from one page:\n%+v\n%+v", user, paged, full)
	}

	// The final state: one session per conversation with a message or an
	// operation, each holding every message sent there.
	var maxTS int64
	for _, s := range full {
		maxTS = max(maxTS, s.ActiveTS)
		if s.WriteSeq != sendCounts[s.Conv] {
			t.Errorf("%s: %s has write_seq %d, %d messages were sent there", user, s.Conv, s.WriteSeq, sendCounts[s.Conv])
		}
		if seqs := own[s.Conv]; len(seqs) > 0 && s.ReadSeq < slices.Max(seqs) {
			t.Errorf("%s: %s has read_seq %d below its own message %d (sending implies reading)", user, s.Conv, s.ReadSeq, slices.Max(seqs))
		}
	}
	for conv, n := range sendCounts {
		if _, ok := fullByConv[conv]; n > 0 && slices.Contains(devs[0].run.convsOf[user], conv) && !ok {
			t.Errorf("%s: no session of %s, where %d messages were sent", user, conv, n)
		}
	}

	// Every incremental list equals the full sync; the ticks may lag where
	// they cover none of the user's own messages.
	for _, d := range devs {
		lagging := 0
		if len(d.inc) != len(full) {
			t.Errorf("%s: incremental list has %d sessions, full sync %d", d.name, len(d.inc), len(full))
		}
		for conv, f := range fullByConv {
			s, ok := d.inc[conv]
			switch {
			case !ok:
				t.Errorf("%s: incremental list lacks %s: %+v", d.name, conv, f)
			case !reflect.DeepEqual(invState(s), invState(f)):
				t.Errorf("%s: %s differs:\nincremental %+v\nfull        %+v", d.name, conv, s, f)
			case s.Ticks != f.Ticks:
				if invSameForOwner(s.Ticks, f.Ticks, own[conv]) {
					lagging++
				} else {
					t.Errorf("%s: %s: incremental ticks %+v, full %+v: a rise over %s's own messages %v did not move the session",
						d.name, conv, s.Ticks, f.Ticks, user, own[conv])
				}
			}
		}
		if lagging > 0 {
			t.Logf("%s: %d sessions with ticks behind the full sync's, over none of %s's own messages", d.name, lagging, user)
		}
	}

	// Every device of the user got the same nudges, each once, none beyond
	// the user's newest timestamp.
	for _, d := range devs {
		sorted := slices.Clone(d.nudges)
		slices.Sort(sorted)
		if len(slices.Compact(slices.Clone(sorted))) != len(sorted) {
			t.Errorf("%s: the same session_sync cursor twice: two changes shared a timestamp, or one nudge came twice", d.name)
		}
		if len(sorted) > 0 && sorted[len(sorted)-1] > maxTS {
			t.Errorf("%s: session_sync cursor %d beyond the newest active_ts %d", d.name, sorted[len(sorted)-1], maxTS)
		}
		if d.cursor > maxTS {
			t.Errorf("%s: sync cursor %d beyond the newest active_ts %d", d.name, d.cursor, maxTS)
		}
		other := slices.Clone(devs[0].nudges)
		slices.Sort(other)
		if !slices.Equal(sorted, other) {
			t.Errorf("%s got %d session_sync nudges, %s got %d: not the same", d.name, len(sorted), devs[0].name, len(other))
		}
	}

	var all []invObs
	var snaps []invSnap
	for _, d := range devs {
		all = append(all, d.obs...)
		snaps = append(snaps, d.snaps...)
	}
	invCheckUnique(t, user, all, maxTS, own)
	invCheckMonotonic(t, user, all)
	invCheckWriteMoves(t, user, all)
	invCheckAfterSnapshots(t, user, all, snaps)
}

// invCheckUnique: an active_ts names one change of one session, so every
// observation carrying it shows the same session in the same state, with
// ticks that may differ only over messages of others; a write_ts names one
// change too, so it belongs to one session.
func invCheckUnique(t *testing.T, user string, all []invObs, maxTS int64, own map[string][]int64) {
	t.Helper()
	byActive := map[int64]invObs{}
	writeOwner := map[int64]string{}
	errs := 0
	report := func(format string, args ...any) {
		if errs++; errs <= 10 {
			t.Errorf(format, args...)
		}
	}
	for _, o := range all {
		s := o.s
		if s.ActiveTS > maxTS || s.WriteTS > maxTS {
			report("%s: %s shown by %s at active_ts %d write_ts %d, beyond the newest active_ts %d", user, s.Conv, o.where, s.ActiveTS, s.WriteTS, maxTS)
		}
		if prev, ok := byActive[s.ActiveTS]; ok {
			lo, hi := prev.s.Ticks, s.Ticks
			if lo.DeliveredSeq > hi.DeliveredSeq || lo.ReadSeq > hi.ReadSeq {
				lo, hi = hi, lo
			}
			onlyMute := invState(prev.s)
			onlyMute.Muted, onlyMute.MuteUntil = s.Muted, s.MuteUntil
			switch {
			case reflect.DeepEqual(onlyMute, invState(s)) && prev.s.Muted != s.Muted:
				report("%s: %s shown muted %v (until %d) [request stamps %d-%d, %s] and muted %v (until %d) [%d-%d, %s] under one active_ts %d: "+
					"a timed mute ran out without being recorded as a change (see TestSessionInvariantMuteRunsOutDuringSync)",
					user, s.Conv, prev.s.Muted, prev.s.MuteUntil, prev.send, prev.recv, prev.where, s.Muted, s.MuteUntil, o.send, o.recv, o.where, s.ActiveTS)
			case !reflect.DeepEqual(invState(prev.s), invState(s)):
				report("%s: active_ts %d names two different changes:\n%s: %+v\n%s: %+v", user, s.ActiveTS, prev.where, prev.s, o.where, s)
			case !invSameForOwner(lo, hi, own[s.Conv]):
				report("%s: %s at active_ts %d shown with ticks %+v (%s) and %+v (%s): a rise over %s's own messages %v did not move the session",
					user, s.Conv, s.ActiveTS, prev.s.Ticks, prev.where, s.Ticks, o.where, user, own[s.Conv])
			}
		}
		byActive[s.ActiveTS] = o
		if s.WriteTS != 0 {
			if conv, ok := writeOwner[s.WriteTS]; ok && conv != s.Conv {
				report("%s: write_ts %d shared by %s and %s", user, s.WriteTS, conv, s.Conv)
			}
			writeOwner[s.WriteTS] = s.Conv
		}
	}
	for ts, conv := range writeOwner {
		if o, ok := byActive[ts]; ok && o.s.Conv != conv {
			report("%s: %d is write_ts of %s and active_ts of %s (%s)", user, ts, conv, o.s.Conv, o.where)
		}
	}
	if errs > 10 {
		t.Errorf("%s: %d more timestamp collisions", user, errs-10)
	}
}

// invCheckWriteMoves: write_ts moves only with a new message, a pin or a
// mark_unread. A session shown with write_ts == active_ts is shown right
// after such a change; unless an earlier version had a lower write_seq (a
// new message), it must be pinned or marked unread.
func invCheckWriteMoves(t *testing.T, user string, all []invObs) {
	t.Helper()
	type key struct {
		conv     string
		writeSeq int64
	}
	first := map[key]int64{} // the lowest active_ts seen with this write_seq
	for _, o := range all {
		k := key{o.s.Conv, o.s.WriteSeq}
		if ts, ok := first[k]; !ok || o.s.ActiveTS < ts {
			first[k] = o.s.ActiveTS
		}
	}
	errs := 0
	for _, o := range all {
		s := o.s
		if s.WriteTS != s.ActiveTS || s.Priority == 1 || s.MarkedUnread {
			continue
		}
		if first[key{s.Conv, s.WriteSeq}] < s.ActiveTS {
			if errs++; errs <= 10 {
				t.Errorf("%s: %s shown by %s with write_ts == active_ts %d, neither pinned nor marked unread, and no new message since active_ts %d: write_ts moved on a change that must not move it",
					user, s.Conv, o.where, s.ActiveTS, first[key{s.Conv, s.WriteSeq}])
			}
		}
	}
	if errs > 10 {
		t.Errorf("%s: %d more sessions whose write_ts moved wrongly", user, errs-10)
	}
}

// invCheckMonotonic: if one answer arrived before another request was
// written, that request's answer shows each session at the same change or
// a later one: active_ts and write_ts never go back.
func invCheckMonotonic(t *testing.T, user string, all []invObs) {
	t.Helper()
	byConv := map[string][]invObs{}
	for _, o := range all {
		byConv[o.s.Conv] = append(byConv[o.s.Conv], o)
	}
	errs := 0
	for conv, list := range byConv {
		byRecv := slices.Clone(list)
		sort.Slice(byRecv, func(i, j int) bool { return byRecv[i].recv < byRecv[j].recv })
		bySend := slices.Clone(list)
		sort.Slice(bySend, func(i, j int) bool { return bySend[i].send < bySend[j].send })
		var maxActive, maxWrite invObs
		i := 0
		for _, b := range bySend {
			for ; i < len(byRecv) && byRecv[i].recv < b.send; i++ {
				if a := byRecv[i]; a.s.ActiveTS > maxActive.s.ActiveTS {
					maxActive = a
				}
				if a := byRecv[i]; a.s.WriteTS > maxWrite.s.WriteTS {
					maxWrite = a
				}
			}
			if b.s.ActiveTS < maxActive.s.ActiveTS || b.s.WriteTS < maxWrite.s.WriteTS {
				if errs++; errs <= 10 {
					t.Errorf("%s: %s went back: %s showed active_ts %d write_ts %d, after %s had shown active_ts %d and %s write_ts %d",
						user, conv, b.where, b.s.ActiveTS, b.s.WriteTS, maxActive.where, maxActive.s.ActiveTS, maxWrite.where, maxWrite.s.WriteTS)
				}
			}
		}
	}
	if errs > 10 {
		t.Errorf("%s: %d more sessions went back", user, errs-10)
	}
}

// invCheckAfterSnapshots: a full sync shows the user's newest timestamp (its
// highest active_ts); a session shown later in a state that sync did not
// show changed after it, so its active_ts is above that newest timestamp,
// whatever the clock did.
func invCheckAfterSnapshots(t *testing.T, user string, all []invObs, snaps []invSnap) {
	t.Helper()
	sort.Slice(snaps, func(i, j int) bool { return snaps[i].recv < snaps[j].recv })
	errs := 0
	for _, b := range all {
		// The latest snapshot whose answer arrived before b's request.
		k := sort.Search(len(snaps), func(i int) bool { return snaps[i].recv >= b.send }) - 1
		if k < 0 {
			continue
		}
		a := snaps[k]
		if ts, ok := a.ts[b.s.Conv]; ok && ts == b.s.ActiveTS {
			continue
		}
		if b.s.ActiveTS <= a.max {
			if errs++; errs <= 10 {
				t.Errorf("%s: %s shown by %s at active_ts %d: changed after a full sync whose newest active_ts was %d (it showed it at %d)",
					user, b.s.Conv, b.where, b.s.ActiveTS, a.max, a.ts[b.s.Conv])
			}
		}
	}
	if errs > 10 {
		t.Errorf("%s: %d more changes below an earlier newest timestamp", user, errs-10)
	}
}

// A timed mute that runs out is a change of its session: Sync turns it off
// (a new active_ts, the unread total restored) before answering. The page
// must be one consistent view: a session it shows unmuted counts in its
// total_unread, and a session shown unmuted after being shown muted has a
// new active_ts. The controllable clock makes the mute run out exactly
// between the first and the second time the sync reads the clock (the
// server is otherwise idle, so no other reading intervenes).
func TestSessionInvariantMuteRunsOutDuringSync(t *testing.T) {
	clock := &invClock{now: time.UnixMilli(1763800000000)}
	env := servertest.Start(t, func(c *server.Config) { c.Now = clock.Now })
	alice := env.Dial(t, "alice", "laptop")
	bob := env.Dial(t, invBob, "phone")
	conv := servertest.Direct("alice", invBob)
	for i := range 3 {
		alice.Send(conv, "m"+itoa(i), "hello")
	}

	until := clock.peek().Add(time.Hour)
	f := bob.RequestOK(&protocol.SessionOp{Conv: conv, Op: "mute", Until: until.UnixMilli()})
	muted := f.(*protocol.OK).Session
	if !muted.Muted || muted.UnreadCount != 3 {
		t.Fatalf("after mute: %+v", muted)
	}

	// The sync's first reading of the clock is until - 1 ms: the mute has
	// not run out; its second reading is until: it has.
	clock.setNext(until.Add(-time.Millisecond))
	p := bob.RequestOK(&protocol.Sync{Since: 0, Limit: 1000}).(*protocol.Sessions)
	if len(p.Sessions) != 1 {
		t.Fatalf("sync: %+v", p)
	}
	s := p.Sessions[0]
	var sum int64
	if !s.Muted && !s.Deleted {
		sum = s.UnreadCount
	}
	if p.TotalUnread != sum {
		t.Errorf("the page shows %s muted %v (mute_until %d) with %d unread, but total_unread %d, want %d",
			conv, s.Muted, s.MuteUntil, s.UnreadCount, p.TotalUnread, sum)
	}
	if !s.Muted && s.ActiveTS == muted.ActiveTS {
		t.Errorf("%s shown unmuted under active_ts %d, the one it was shown muted with: the mute running out is a change, yet no new active_ts",
			conv, s.ActiveTS)
	}
}
