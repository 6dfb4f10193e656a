package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/imcore/im/protocol"
)

// runIdle opens -conns authenticated connections, one user each, holds
// them idle for -duration, and asks each for one answer at the end. With
// -pid, the server's RSS before the first and after the hold, per
// connection. Idle connections start no read goroutine: the generator
// keeps only the socket and a small buffer for each.
func runIdle(ctx context.Context, cfg *Config, errs *errorLog, r *Report, progress func(string, ...any)) error {
	r.Params.set("conns", cfg.Conns)
	r.Params.set("hold_s", cfg.Duration.Seconds())
	m := newMeter(cfg.PID)
	before, haveBefore := m.sampler.sample()
	ws := make([]who, cfg.Conns)
	for i := range ws {
		ws[i] = who{cfg.user(fmt.Sprintf("i%d", i)), "bench"}
	}
	progress("opening %d connections", cfg.Conns)
	setupCtx, cancel := context.WithTimeout(ctx, cfg.SetupTimeout)
	t0 := now()
	conns, took, err := dialAll(setupCtx, cfg, errs, newDialer(512), ws)
	cancel()
	if err != nil {
		m.report(r)
		return err
	}
	defer closeAll(conns)
	connectTime := now() - t0
	r.Values.set("connect_all_s", round(connectTime.Seconds(), 3))
	r.Rates.set("connects_per_s", round(float64(len(conns))/connectTime.Seconds(), 1))
	r.Latency.set("connect", summarize(took))

	progress("holding %d idle connections for %v", len(conns), cfg.Duration)
	m.begin()
	hold := time.NewTimer(cfg.Duration)
	select {
	case <-hold.C:
	case <-ctx.Done():
		hold.Stop()
	}
	after, haveAfter := m.sampler.sample()
	m.end()

	alive := aliveCount(ctx, cfg, conns)
	r.Counts.set("conns", int64(len(conns)))
	r.Counts.set("alive", alive)
	if alive < int64(len(conns)) {
		r.Notes = append(r.Notes, fmt.Sprintf("%d connections did not answer after the hold", int64(len(conns))-alive))
	}
	m.report(r)
	if haveBefore && haveAfter {
		r.Values.set("server_rss_before_kib", float64(before.RSSKiB))
		r.Values.set("server_rss_after_kib", float64(after.RSSKiB))
		r.Values.set("server_rss_per_conn_kib", round(float64(after.RSSKiB-before.RSSKiB)/float64(len(conns)), 2))
	} else if cfg.PID == 0 {
		r.Notes = append(r.Notes, "no -pid: the server's RSS per connection was not measured")
	}
	r.WindowS = round(cfg.Duration.Seconds(), 3)
	return nil
}

// aliveCount asks every connection for one answer (a sync of one
// session) and counts those that gave it.
func aliveCount(ctx context.Context, cfg *Config, conns []*conn) int64 {
	ctx, cancel := context.WithTimeout(ctx, cfg.SetupTimeout)
	defer cancel()
	var (
		mu    sync.Mutex
		alive int64
		wg    sync.WaitGroup
		sem   = make(chan struct{}, cfg.Concurrency)
	)
	for _, c := range conns {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if _, _, err := c.roundTrip(ctx, &protocol.Sync{Limit: 1}); err == nil {
				mu.Lock()
				alive++
				mu.Unlock()
			} else {
				c.errs.add("not_alive", err.Error())
			}
		}()
	}
	wg.Wait()
	return alive
}
