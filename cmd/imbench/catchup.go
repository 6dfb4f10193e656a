package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/imcore/im/protocol"
)

// catchupClient is one user reconnecting after being offline: it holds
// what the server pushes (checked seq by seq, as a client stores it),
// acknowledges with delivered as a client does — one delivered frame in
// flight, carrying a mark for every conversation that grew since the last
// — and loads its session list.
//
// "Stored everything" is taken as: every expected message received and
// acknowledged with a delivered mark the server answered ok (durable on
// the server). The generator holds messages in memory instead of a local
// database: a thousand client databases on the same two cores would
// measure the clients' SQLite, not the server.
type catchupClient struct {
	user   string
	expect map[string]int64 // conversation → its newest seq
	c      *conn
	errs   *errorLog

	// Touched on the read goroutine only.
	have       map[string]int64
	ahead      map[string]map[int64]bool
	acked      map[string]int64
	inflight   []protocol.Mark
	inflightID string

	mu                             sync.Mutex
	welcomeAt, receivedAt, ackedAt time.Duration
	syncedAt                       time.Duration
	received                       int64
	failed                         bool
	stored                         chan struct{} // closed once acknowledged or failed
}

func newCatchupClient(user string, expect map[string]int64, errs *errorLog) *catchupClient {
	return &catchupClient{user: user, expect: expect, errs: errs, have: map[string]int64{},
		ahead: map[string]map[int64]bool{}, acked: map[string]int64{}, stored: make(chan struct{})}
}

// run reconnects and waits until the client has stored everything.
func (cc *catchupClient) run(ctx context.Context, cfg *Config, d *websocket.Dialer, syncList bool) {
	c, err := dial(ctx, d, cfg.serverFor(0), cc.user, "bench", cc.errs)
	if err != nil {
		cc.errs.add("dial", err.Error())
		cc.fail()
		return
	}
	cc.mu.Lock()
	cc.c, cc.welcomeAt = c, now()
	cc.mu.Unlock()
	c.setHandler(cc.on)
	c.start()
	if syncList {
		var since int64
		for {
			data, at, err := c.call(ctx, &protocol.Sync{Since: since, Limit: 1000})
			var f protocol.Frame
			if err == nil {
				f, err = decode(data)
			}
			s, ok := f.(*protocol.Sessions)
			if err == nil && !ok {
				err = fmt.Errorf("sync answered %s", f.FrameType())
			}
			if err != nil {
				cc.errs.add("sync", err.Error())
				cc.fail()
				return
			}
			since = s.Cursor
			if !s.HasMore {
				cc.mu.Lock()
				cc.syncedAt = at
				cc.mu.Unlock()
				break
			}
		}
	}
	select {
	case <-cc.stored:
	case <-ctx.Done():
	}
}

// on handles the pushed messages and the answers to delivered.
func (cc *catchupClient) on(typ, id string, data []byte, at time.Duration) {
	switch typ {
	case "msg":
		f, err := decode(data)
		if err != nil {
			cc.errs.add("undecodable", err.Error())
			return
		}
		m := f.(*protocol.MsgPush).Msg
		if cc.hold(m.Conv, m.Seq) && cc.complete(cc.have) {
			cc.mu.Lock()
			if cc.receivedAt == 0 {
				cc.receivedAt = at
			}
			cc.mu.Unlock()
		}
		cc.ack()
	case "ok", "error":
		if id == "" || id != cc.inflightID {
			return
		}
		if typ == "error" {
			cc.fail()
			return
		}
		for _, m := range cc.inflight {
			cc.acked[m.Conv] = max(cc.acked[m.Conv], m.Seq)
		}
		cc.inflight, cc.inflightID = nil, ""
		if cc.complete(cc.acked) {
			cc.mu.Lock()
			cc.ackedAt = at
			cc.mu.Unlock()
			close(cc.stored)
			return
		}
		cc.ack()
	}
}

// hold records seq of conv as received; false if it was already held.
func (cc *catchupClient) hold(conv string, seq int64) bool {
	have := cc.have[conv]
	switch {
	case seq <= have || cc.ahead[conv][seq]:
		return false
	case seq == have+1:
		have++
		for cc.ahead[conv][have+1] {
			delete(cc.ahead[conv], have+1)
			have++
		}
		cc.have[conv] = have
	default:
		if cc.ahead[conv] == nil {
			cc.ahead[conv] = map[int64]bool{}
		}
		cc.ahead[conv][seq] = true
	}
	cc.mu.Lock()
	cc.received++
	cc.mu.Unlock()
	return true
}

// complete reports whether upTo reaches every expected seq.
func (cc *catchupClient) complete(upTo map[string]int64) bool {
	for conv, seq := range cc.expect {
		if upTo[conv] < seq {
			return false
		}
	}
	return true
}

// ack sends one delivered frame for every conversation grown since the
// last, unless one is awaiting its answer.
func (cc *catchupClient) ack() {
	if cc.inflightID != "" {
		return
	}
	var marks []protocol.Mark
	for conv, have := range cc.have {
		if have > cc.acked[conv] {
			marks = append(marks, protocol.Mark{Conv: conv, Seq: have})
		}
	}
	if len(marks) == 0 {
		return
	}
	cc.inflight, cc.inflightID = marks, cc.c.id("d")
	if err := cc.c.write(&protocol.Delivered{Ref: protocol.Ref{ID: cc.inflightID}, Marks: marks}); err != nil {
		cc.c.writeFailed(err)
		cc.fail()
	}
}

// fail ends the client without its everything stored.
func (cc *catchupClient) fail() {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if !cc.failed && cc.ackedAt == 0 {
		cc.failed = true
		close(cc.stored)
	}
}

// feedCatchup prepares the offline messages: for each user, -messages
// messages in -convs conversations. It returns each user's expected
// conversations and newest seqs.
func feedCatchup(ctx context.Context, cfg *Config, errs *errorLog, users []string) ([]map[string]int64, error) {
	k := cfg.Convs
	feeders := make([]string, k)
	for i := range feeders {
		feeders[i] = cfg.user(fmt.Sprintf("f%d", i))
	}
	body := strings.Repeat("x", cfg.BodyBytes)
	expect := make([]map[string]int64, len(users))
	for i := range expect {
		expect[i] = map[string]int64{}
	}
	var (
		ws    []who
		owner []int // feeder index of each connection
	)
	perFeeder := 1
	if cfg.CatchupKind == "direct" {
		perFeeder = max(1, cfg.Feeders/k)
	}
	for f := range k {
		for j := range perFeeder {
			ws = append(ws, who{feeders[f], fmt.Sprintf("feed%d", j)})
			owner = append(owner, f)
		}
	}
	conns, _, err := dialAll(ctx, cfg, errs, newDialer(4096), ws)
	if err != nil {
		return nil, err
	}
	defer closeAll(conns)
	items := make([][]feedItem, len(conns))
	groupConv := make([]string, k)
	if cfg.CatchupKind == "group" {
		for f, c := range conns { // one connection per feeder
			create := &protocol.CreateGroup{Title: fmt.Sprintf("catchup %d", f), Members: users, Key: "bench"}
			data, _, err := c.roundTrip(ctx, create)
			var fr protocol.Frame
			if err == nil {
				fr, err = decode(data)
			}
			g, ok := fr.(*protocol.Group)
			if err == nil && !ok {
				err = fmt.Errorf("create_group answered %s", fr.FrameType())
			}
			if err != nil {
				return nil, fmt.Errorf("creating group %d of %d users: %w", f, len(users), err)
			}
			groupConv[f] = g.Conv
			for range share(int64(cfg.Messages), k, f) {
				items[f] = append(items[f], feedItem{g.Conv})
			}
		}
	} else {
		for ci := range conns {
			f, j := owner[ci], ci%perFeeder
			for u := j; u < len(users); u += perFeeder {
				conv, _ := protocol.DirectConv(feeders[f], users[u])
				for range share(int64(cfg.Messages), k, f) {
					items[ci] = append(items[ci], feedItem{conv})
				}
			}
		}
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		last     = map[string]int64{}
		firstErr error
	)
	for ci, c := range conns {
		c.start()
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := feed(ctx, c, items[ci], body, 8)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			for conv, seq := range got {
				last[conv] = max(last[conv], seq)
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		errs.add("feed", firstErr.Error())
		return nil, firstErr
	}
	for u, user := range users {
		for f := range k {
			conv := groupConv[f]
			if cfg.CatchupKind == "direct" {
				conv, _ = protocol.DirectConv(feeders[f], user)
			}
			if seq := last[conv]; seq > 0 {
				expect[u][conv] = seq
			}
		}
	}
	return expect, nil
}

// runCatchup runs the catchup workload.
func runCatchup(ctx context.Context, cfg *Config, errs *errorLog, r *Report, progress func(string, ...any)) error {
	r.Params.set("users", cfg.Users)
	r.Params.set("messages", cfg.Messages)
	r.Params.set("convs", cfg.Convs)
	r.Params.set("conv_kind", cfg.CatchupKind)
	r.Params.set("sync", cfg.CatchupSync)
	r.Params.set("body", cfg.BodyBytes)
	r.Params.set("limit_s", cfg.Duration.Seconds())
	users := make([]string, cfg.Users)
	for i := range users {
		users[i] = cfg.user(fmt.Sprintf("u%d", i))
	}
	progress("feeding %d messages to %d offline users", cfg.Users*cfg.Messages, cfg.Users)
	setupCtx, cancel := context.WithTimeout(ctx, cfg.SetupTimeout)
	fed := now()
	expect, err := feedCatchup(setupCtx, cfg, errs, users)
	cancel()
	if err != nil {
		return err
	}
	var want int64
	for _, e := range expect {
		for _, seq := range e {
			want += seq
		}
	}
	r.Values.set("feed_s", round((now()-fed).Seconds(), 2))
	clients := make([]*catchupClient, len(users))
	for i, u := range users {
		clients[i] = newCatchupClient(u, expect[i], errs)
	}

	progress("%d users reconnecting at once", len(users))
	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	m := newMeter(cfg.PID)
	d := newDialer(4096)
	var wg sync.WaitGroup
	m.begin()
	t0 := now()
	for _, cc := range clients {
		wg.Add(1)
		go func() { defer wg.Done(); cc.run(runCtx, cfg, d, cfg.CatchupSync) }()
	}
	wg.Wait()
	end := now()
	m.end()

	var (
		welcome, received, stored, synced []time.Duration
		got, done                         int64
		last                              time.Duration
	)
	conns := make([]*conn, 0, len(clients))
	for _, cc := range clients {
		cc.mu.Lock()
		got += cc.received
		if cc.c != nil {
			conns = append(conns, cc.c)
			welcome = append(welcome, cc.welcomeAt-t0)
		}
		if cc.receivedAt != 0 {
			received = append(received, cc.receivedAt-t0)
		}
		if cc.syncedAt != 0 {
			synced = append(synced, cc.syncedAt-t0)
		}
		if cc.ackedAt != 0 && (cc.syncedAt != 0 || !cfg.CatchupSync) {
			done++
			doneAt := max(cc.ackedAt, cc.syncedAt)
			stored = append(stored, doneAt-t0)
			last = max(last, doneAt-t0)
		}
		cc.mu.Unlock()
	}
	closeAll(conns)
	win := window{start: t0, end: t0 + last}
	if done < int64(len(clients)) {
		win.end = end
		r.Notes = append(r.Notes, fmt.Sprintf("%d of %d users had not stored everything within %v", int64(len(clients))-done, len(clients), cfg.Duration))
	}
	m.report(r)
	r.WindowS = round(win.seconds(), 3)
	r.Counts.set("users", int64(len(clients)))
	r.Counts.set("users_done", done)
	r.Counts.set("messages_expected", want)
	r.Counts.set("messages_received", got)
	r.Rates.set("stored_msgs_per_s", round(win.perSecond(got), 1))
	if done == int64(len(clients)) {
		r.Values.set("all_stored_s", round(last.Seconds(), 3))
	}
	if cpu, ok := m.serverCPU(); ok && got > 0 {
		r.Values.set("server_cpu_us_per_msg", round(float64(cpu.Microseconds())/float64(got), 1))
	}
	r.Latency.set("welcome", summarize(welcome))
	r.Latency.set("all_received", summarize(received))
	if cfg.CatchupSync {
		r.Latency.set("synced", summarize(synced))
	}
	r.Latency.set("stored", summarize(stored))
	return nil
}
