package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/imcore/im/protocol"
)

// runPresence runs the presence workload: -watchers connections, each
// watching -watched users among -flappers users it wrote to (a direct
// chat holding a message: they share a conversation). First every watcher
// asks the presence of its users (the answer's latency); then each
// flapper's connection closes and opens again, over and over, for
// -duration, while the watchers count the pushes. A presence change is a
// flapper's connection coming or going; the server's CPU per change is
// the figure.
func runPresence(ctx context.Context, cfg *Config, errs *errorLog, r *Report, progress func(string, ...any)) error {
	r.Params.set("watchers", cfg.Watchers)
	r.Params.set("watched", cfg.Watched)
	r.Params.set("flappers", cfg.Flappers)
	r.Params.set("duration_s", cfg.Duration.Seconds())
	if cfg.Watchers > 0 && cfg.Watched > cfg.Flappers {
		return fmt.Errorf("-watched %d is more than -flappers %d", cfg.Watched, cfg.Flappers)
	}
	watchers := make([]who, cfg.Watchers)
	for i := range watchers {
		watchers[i] = who{cfg.user(fmt.Sprintf("w%d", i)), "bench"}
	}
	flapper := func(i int) string { return cfg.user(fmt.Sprintf("f%d", i)) }
	watchedBy := func(w int) []string { // watcher w's users: a window of the flappers
		users := make([]string, cfg.Watched)
		for k := range users {
			users[k] = flapper((w*cfg.Flappers/max(cfg.Watchers, 1) + k) % cfg.Flappers)
		}
		return users
	}

	progress("connecting %d watchers, each writing to its %d users", cfg.Watchers, cfg.Watched)
	setupCtx, cancel := context.WithTimeout(ctx, cfg.SetupTimeout)
	conns, _, err := dialAll(setupCtx, cfg, errs, newDialer(16<<10), watchers)
	if err != nil {
		cancel()
		return err
	}
	defer closeAll(conns)
	body := "hello"
	var setup sync.WaitGroup
	var setupErr atomic.Pointer[error]
	for w, c := range conns {
		c.start()
		setup.Go(func() {
			items := make([]feedItem, 0, cfg.Watched)
			for _, u := range watchedBy(w) {
				conv, _ := protocol.DirectConv(c.user, u)
				items = append(items, feedItem{conv: conv})
			}
			if _, err := feed(setupCtx, c, items, body, 16); err != nil {
				setupErr.Store(&err)
			}
		})
	}
	setup.Wait()
	if e := setupErr.Load(); e != nil {
		cancel()
		errs.add("setup", (*e).Error())
		return *e
	}
	// Each flapper takes its messages once (delivered), as a client that
	// is up to date: its reconnects then replay nothing, and the figure is
	// presence's, not the replay's.
	progress("each of %d flappers takes its messages", cfg.Flappers)
	convsOf := map[string][]protocol.Mark{}
	for w, c := range conns {
		for _, u := range watchedBy(w) {
			conv, _ := protocol.DirectConv(c.user, u)
			convsOf[u] = append(convsOf[u], protocol.Mark{Conv: conv, Seq: 1})
		}
	}
	d := newDialer(4 << 10)
	sem := make(chan struct{}, cfg.Concurrency)
	for i := range cfg.Flappers {
		sem <- struct{}{}
		setup.Go(func() {
			defer func() { <-sem }()
			u := flapper(i)
			c, err := dial(setupCtx, d, cfg.serverFor(i), u, "flap", errs)
			if err == nil && len(convsOf[u]) > 0 {
				c.start()
				_, _, err = c.call(setupCtx, &protocol.Delivered{Marks: convsOf[u]})
			}
			if c != nil {
				c.close()
			}
			if err != nil {
				setupErr.Store(&err)
			}
		})
	}
	setup.Wait()
	cancel()
	if e := setupErr.Load(); e != nil {
		errs.add("setup", (*e).Error())
		return *e
	}

	// The watchers count the presence pushes (frames without id).
	var pushes, entries atomic.Int64
	for _, c := range conns {
		c.setHandler(func(typ, id string, data []byte, _ time.Duration) {
			if typ != "presence" || id != "" {
				return
			}
			var p protocol.PresenceReply
			if json.Unmarshal(data, &p) == nil {
				pushes.Add(1)
				entries.Add(int64(len(p.Users)))
			}
		})
	}

	progress("every watcher asks the presence of its %d users", cfg.Watched)
	m := newMeter(cfg.PID)
	asks := make([]time.Duration, len(conns))
	var askWG sync.WaitGroup
	for w, c := range conns {
		askWG.Go(func() {
			sent := now()
			data, at, err := c.call(ctx, &protocol.PresenceRequest{Users: watchedBy(w)})
			if err == nil {
				var f protocol.Frame
				if f, err = decode(data); err == nil {
					if p, ok := f.(*protocol.PresenceReply); !ok || len(p.Users) != cfg.Watched {
						err = fmt.Errorf("presence answered %s", string(data[:min(len(data), 200)]))
					}
				}
			}
			if err != nil {
				errs.add("presence", err.Error())
			}
			asks[w] = at - sent
		})
	}
	askWG.Wait()
	r.Latency.set("presence_answer", summarize(asks))

	progress("%d users flapping for %v", cfg.Flappers, cfg.Duration)
	var changes atomic.Int64
	deadline := time.Now().Add(cfg.Duration)
	flapCtx, stop := context.WithDeadline(ctx, deadline)
	defer stop()
	var flap sync.WaitGroup
	pushesBefore := pushes.Load()
	m.begin()
	start := now()
	for i := range cfg.Flappers {
		flap.Go(func() {
			for flapCtx.Err() == nil {
				sem <- struct{}{}
				c, err := dial(flapCtx, d, cfg.serverFor(i), flapper(i), "flap", errs)
				<-sem
				if err != nil {
					// A dial cut by the end of the window is no error
					// (the socket's deadline may fire before the
					// context says it is done).
					if time.Until(deadline) > 100*time.Millisecond {
						errs.add("dial", err.Error())
					}
					return
				}
				changes.Add(1) // came
				c.close()
				changes.Add(1) // went
			}
		})
	}
	flap.Wait()
	window := now() - start
	m.end()
	// The pushes still due (the last change of each watched user) come
	// within one interval.
	settle := time.NewTimer(3 * time.Second)
	select {
	case <-settle.C:
	case <-ctx.Done():
	}
	m.report(r)
	r.WindowS = round(window.Seconds(), 3)
	n := changes.Load()
	r.Counts.set("presence_changes", n)
	r.Counts.set("pushes", pushes.Load()-pushesBefore)
	r.Counts.set("pushed_entries", entries.Load())
	r.Rates.set("presence_changes_per_s", round(float64(n)/window.Seconds(), 1))
	if cpu, ok := m.serverCPU(); ok && n > 0 {
		r.Values.set("server_cpu_us_per_change", round(float64(cpu.Microseconds())/float64(n), 1))
	}
	return nil
}
