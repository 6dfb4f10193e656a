package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/imcore/im/protocol"
)

// runSync runs the sync workload: one user with -sessions sessions, its
// full sync and its incremental sync after -changes changes.
func runSync(ctx context.Context, cfg *Config, errs *errorLog, r *Report, progress func(string, ...any)) error {
	r.Params.set("sessions", cfg.Sessions)
	r.Params.set("changes", cfg.Changes)
	r.Params.set("full_syncs", cfg.FullSyncs)
	r.Params.set("warmup_s", cfg.Warmup.Seconds())
	r.Params.set("duration_s", cfg.Duration.Seconds())
	r.Params.set("count", cfg.Count)
	user := cfg.user("s")

	progress("starting %d sessions", cfg.Sessions)
	setupCtx, cancel := context.WithTimeout(ctx, cfg.SetupTimeout)
	err := startSessions(setupCtx, cfg, errs, user)
	if err != nil {
		cancel()
		return err
	}
	conns, _, err := dialAll(setupCtx, cfg, errs, newDialer(64<<10), []who{{user, "bench"}, {user, "changer"}})
	cancel()
	if err != nil {
		return err
	}
	defer closeAll(conns)
	reader, changer := conns[0], conns[1]
	reader.start()
	changer.start()

	m := newMeter(cfg.PID)
	m.begin()
	progress("%d full syncs", cfg.FullSyncs)
	var full []time.Duration
	var cursor int64
	for range cfg.FullSyncs {
		took, n, cur, err := syncFrom(ctx, reader, 0)
		if err != nil {
			errs.add("sync", err.Error())
			return err
		}
		if n != cfg.Sessions {
			r.Notes = append(r.Notes, fmt.Sprintf("a full sync returned %d sessions, not %d", n, cfg.Sessions))
		}
		full = append(full, took)
		cursor = cur
	}
	r.Latency.set("full_sync", summarize(full))
	if cfg.FullSyncs == 0 {
		if _, _, cursor, err = syncFrom(ctx, reader, 0); err != nil {
			errs.add("sync", err.Error())
			return err
		}
	}

	progress("incremental syncs for %v (warm-up %v)", cfg.Duration, cfg.Warmup)
	var (
		incr       []time.Duration
		rounds     int64
		mismatched int
	)
	start := now()
	win := window{start: start + cfg.Warmup, end: start + cfg.Warmup + cfg.Duration}
	for round := 0; ; round++ {
		t := now()
		if t >= win.end || (cfg.Count > 0 && rounds >= cfg.Count) || ctx.Err() != nil {
			break
		}
		if err := changeSessions(ctx, changer, user, cfg, round); err != nil {
			errs.add("session_op", err.Error())
			return err
		}
		took, n, cur, err := syncFrom(ctx, reader, cursor)
		if err != nil {
			errs.add("sync", err.Error())
			return err
		}
		cursor = cur
		if n != cfg.Changes {
			mismatched++
		}
		if t >= win.start {
			incr = append(incr, took)
			rounds++
		}
	}
	if end := now(); end < win.end {
		win.end = end
	}
	m.end()
	m.report(r)
	r.WindowS = round(win.seconds(), 3)
	r.Counts.set("rounds", rounds)
	r.Rates.set("incremental_syncs_per_s", round(win.perSecond(rounds), 1))
	r.Latency.set("incremental_sync", summarize(incr))
	if mismatched > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d incremental syncs did not return exactly the %d changed sessions", mismatched, cfg.Changes))
	}
	return nil
}

// syncFrom syncs the user's main list from since to its end, page by page
// (1000 sessions at most each): the time from the first request to the
// last answer, the sessions returned and the new cursor.
func syncFrom(ctx context.Context, c *conn, since int64) (time.Duration, int, int64, error) {
	start, n := now(), 0
	for {
		data, at, err := c.call(ctx, &protocol.Sync{Since: since, Limit: 1000})
		if err != nil {
			return 0, 0, 0, err
		}
		f, err := decode(data)
		if err != nil {
			return 0, 0, 0, err
		}
		s, ok := f.(*protocol.Sessions)
		if !ok {
			return 0, 0, 0, fmt.Errorf("sync answered %s", f.FrameType())
		}
		n += len(s.Sessions)
		since = s.Cursor
		if !s.HasMore {
			return at - start, n, since, nil
		}
	}
}

// changeSessions pins (even rounds) or unpins (odd rounds) -changes
// sessions, a different set each round, and waits for every answer.
func changeSessions(ctx context.Context, c *conn, user string, cfg *Config, round int) error {
	op := "pin"
	if round%2 == 1 {
		op = "unpin"
	}
	first := (round / 2 * cfg.Changes) % cfg.Sessions
	waits := make([]chan answer, cfg.Changes)
	for j := range cfg.Changes {
		peer := cfg.user(fmt.Sprintf("p%d", (first+j)%cfg.Sessions))
		conv, _ := protocol.DirectConv(user, peer)
		f := &protocol.SessionOp{Conv: conv, Op: op}
		waits[j] = c.expect(f, "o")
		if err := c.write(f); err != nil {
			return err
		}
	}
	for _, w := range waits {
		if _, _, err := c.await(ctx, w); err != nil {
			return err
		}
	}
	return nil
}

// startSessions gives user -sessions sessions: it sends one message to
// each of as many peers (who never connect), on up to -feeders
// connections so the server's group commit batches them.
func startSessions(ctx context.Context, cfg *Config, errs *errorLog, user string) error {
	nconns := min(cfg.Feeders, 32, cfg.Sessions)
	ws := make([]who, nconns)
	for i := range ws {
		ws[i] = who{user, fmt.Sprintf("setup%d", i)}
	}
	conns, _, err := dialAll(ctx, cfg, errs, newDialer(4096), ws)
	if err != nil {
		return err
	}
	defer closeAll(conns)
	body := strings.Repeat("x", cfg.BodyBytes)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for i, c := range conns {
		var items []feedItem
		for p := i; p < cfg.Sessions; p += nconns {
			conv, _ := protocol.DirectConv(user, cfg.user(fmt.Sprintf("p%d", p)))
			items = append(items, feedItem{conv})
		}
		c.start()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := feed(ctx, c, items, body, 4); err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		errs.add("feed", firstErr.Error())
	}
	return firstErr
}
