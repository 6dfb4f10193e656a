package faultrun

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
)

// progressEvery is how often the chaos phase logs its progress.
const progressEvery = 15 * time.Second

// chaos drives every device, restarts clients now and then and turns the
// proxy's cuts on, then kills the server (one node at a time, in a
// cluster) at random moments and restarts it on the same address and data
// directory, until the targets are met or MaxChaos has passed. A cluster
// run flushes Redis, has DynamoDB fail and nodes join and leave meanwhile
// (see events and churn). It
// returns with the drivers, client restarts and events stopped, the cuts
// off and every server running.
func (r *run) chaos(ctx context.Context) error {
	start := time.Now()
	deadline := start.Add(r.cfg.MaxChaos)
	driveCtx, stopDriving := context.WithCancel(ctx)
	eventCtx, stopEvents := context.WithDeadline(ctx, deadline)
	var background, events sync.WaitGroup
	background.Add(2)
	go func() {
		defer background.Done()
		driveAll(driveCtx, r.devices, r.cfg.Seed, r.cfg.ActEvery, r.cfg.MaxPending)
	}()
	go func() {
		defer background.Done()
		r.restartServices(driveCtx)
	}()
	if r.cluster != nil {
		events.Add(4)
		go func() {
			defer events.Done()
			r.pauseNodes(eventCtx)
		}()
		go func() {
			defer events.Done()
			r.flushRedis(eventCtx)
		}()
		go func() {
			defer events.Done()
			r.failDynamoDB(eventCtx)
		}()
		go func() {
			defer events.Done()
			r.churn(eventCtx)
		}()
	}
	r.proxy.SetChaos(true)
	defer func() {
		stopEvents()
		events.Wait()
		r.proxy.SetChaos(false)
		stopDriving()
		background.Wait()
		r.report.EngineRestarts = int(r.engineRestarts.Load())
		r.report.Flushes = int(r.flushes.Load())
		r.report.Outages = int(r.outages.Load())
		r.report.Joins = int(r.joins.Load())
		r.report.Pauses = int(r.pauses.Load())
		r.report.Leaves = int(r.leaves.Load())
		r.report.LateLeaves = int(r.lateLeaves.Load())
	}()

	lastLog := start
	// A cluster's chaos also goes on until every device reconnected after
	// the last flush (see pushRound).
	for !r.targetsMet() || (r.cluster != nil && !r.reconnectedSinceFlush()) {
		gap := eventPoll // a cluster's kills done: waiting for the rest
		if r.cluster == nil || !r.killsMet() {
			gap = randBetween(r.rng, r.cfg.MinKillGap, r.cfg.MaxKillGap)
		}
		if !sleepUntil(ctx, minTime(time.Now().Add(gap), deadline)) {
			return ctx.Err()
		}
		if !time.Now().Before(deadline) {
			break
		}
		if err := r.checkAlive(); err != nil {
			return err
		}
		if time.Since(lastLog) >= progressEvery {
			lastLog = time.Now()
			r.cfg.Logf("%s", r.progress(time.Since(start)))
		}
		// A cluster's last flush and outage come after its last kill, so
		// that the convergence shows recovery without a restart.
		if r.cluster != nil && r.killsMet() {
			continue
		}
		if err := r.killOne(ctx); err != nil {
			return err
		}
	}
	r.report.TargetsMet = r.targetsMet()
	r.cfg.Logf("%s", r.progress(time.Since(start)))
	return nil
}

// killOne SIGKILLs a server (a random node of a cluster), leaves it down
// for a random time and restarts it; the kill counts once the server is
// back. While a node is leaving it kills none: the next round will.
func (r *run) killOne(ctx context.Context) error {
	if int(r.kills.Load())+1 == r.cfg.wipeAtKill {
		// The harness's own test: the wipe must have an acknowledged
		// message to lose, however slowly the run goes on a busy machine.
		err := waitUntil(time.Minute, "acknowledged message before the wipe", func() (string, error) {
			if r.led.AckedCount() == 0 {
				return "nothing acknowledged yet", nil
			}
			return "", nil
		})
		if err != nil {
			return err
		}
	}
	s := r.takeForKill(r.rng)
	if s == nil {
		return nil
	}
	defer r.releaseNode(s)
	if err := s.Kill(); err != nil {
		return fmt.Errorf("kill imserver: %w", err)
	}
	kills := int(r.kills.Load()) + 1 // counted once restarted
	if kills == r.cfg.wipeAtKill {
		var err error
		if r.cluster != nil {
			err = r.wipeCluster(ctx)
		} else {
			err = s.wipe()
		}
		if err != nil {
			return fmt.Errorf("wipe at kill %d: %w", kills, err)
		}
	}
	down := time.Now()
	if !sleepUntil(ctx, down.Add(randBetween(r.rng, 0, r.cfg.MaxDowntime))) {
		return ctx.Err()
	}
	restarting := time.Now()
	if err := r.restart(ctx, s); err != nil {
		return fmt.Errorf("restart imserver after kill %d: %w", kills, err)
	}
	if r.cluster != nil {
		r.cfg.Logf("kill %d: %s was down %v, its start took %v", kills, s.Name(), time.Since(down).Round(time.Millisecond), time.Since(restarting).Round(time.Millisecond))
	}
	r.kills.Store(int64(kills))
	r.report.Kills = kills
	return nil
}

// checkAlive fails when a server (or the cluster's Redis) exited on its
// own, or a chaos event failed the run (a node could not join).
func (r *run) checkAlive() error {
	if err := r.eventError(); err != nil {
		return err
	}
	for _, s := range r.nodes() {
		if !s.Alive() {
			return fmt.Errorf("imserver on %s exited on its own\n%s", s.Addr(), s.Logs())
		}
	}
	if r.cluster != nil && !r.cluster.redis.Alive() {
		return fmt.Errorf("redis-server exited on its own\n%s", r.cluster.redis.logs)
	}
	return nil
}

// restartServices restarts a random device's client (closing and reopening
// its store) at random moments until ctx ends.
func (r *run) restartServices(ctx context.Context) {
	rng := rand.New(rand.NewPCG(r.cfg.Seed, 0x7e57a7))
	for sleepUntil(ctx, time.Now().Add(randBetween(rng, r.cfg.MinRestartGap, r.cfg.MaxRestartGap))) {
		d := r.devices[rng.IntN(len(r.devices))]
		if err := d.Restart(); err != nil {
			r.harnessError(err)
			return
		}
		r.engineRestarts.Add(1)
	}
}

// restart starts server s again. Another process may have taken its port
// while it was down (as an ephemeral port); then it tries again for a
// while. So it does when a cluster node could not start, which it may
// not while DynamoDB is out. Any other failure to start is the server's.
func (r *run) restart(ctx context.Context, s *Server) error {
	const tries = 25
	for i := 1; ; i++ {
		err := s.Run()
		if err == nil || i == tries || !(r.cluster != nil || strings.Contains(err.Error(), "address already in use")) {
			return err
		}
		r.cfg.Logf("restart %d of %s failed, trying again: %s (%s)", i, s.Addr(), firstLine(err.Error()), lastLine(s.Logs()))
		if !sleepUntil(ctx, time.Now().Add(200*time.Millisecond)) {
			return ctx.Err()
		}
	}
}

// targetsMet reports whether the kills and cuts (and a cluster's flushes,
// outages, joins and leaves) reached their targets.
func (r *run) targetsMet() bool {
	met := r.killsMet() && r.proxy.Stats().Cuts >= int64(r.cfg.Cuts)
	if c := r.cfg.Cluster; c != nil {
		met = met && r.flushes.Load() >= int64(c.Flushes) && r.outages.Load() >= int64(c.Outages) &&
			r.joins.Load() >= int64(c.Joins) && r.leaves.Load() >= int64(c.Joins) && r.pauses.Load() >= int64(c.Pauses)
	}
	return met
}

// killsMet reports whether the kills reached their target.
func (r *run) killsMet() bool { return r.kills.Load() >= int64(r.cfg.Kills) }

// lastLine returns the last line of s.
func lastLine(s string) string {
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// firstLine returns s up to its first newline.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// progress is one line on the chaos so far.
func (r *run) progress(elapsed time.Duration) string {
	s := r.proxy.Stats()
	v := r.led.View()
	line := fmt.Sprintf("chaos %v: %d/%d kills, %d/%d cuts (%d mid-frame), %d connections, %d engine restarts, %d messages sent, %d acknowledged",
		elapsed.Round(time.Second), r.kills.Load(), r.cfg.Kills, s.Cuts, r.cfg.Cuts, s.MidFrame, s.Conns, r.engineRestarts.Load(), len(v.Queued), len(v.Acked))
	if c := r.cfg.Cluster; c != nil {
		line += fmt.Sprintf(", %d/%d flushes, %d/%d outages, %d/%d joins, %d/%d leaves", r.flushes.Load(), c.Flushes, r.outages.Load(), c.Outages, r.joins.Load(), c.Joins, r.leaves.Load(), c.Joins)
	}
	return line
}

// sleepUntil waits until t or ctx is done; it reports whether ctx is
// still live. It paces the chaos; it never waits for a result.
func sleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// randBetween returns a uniform duration in [lo, hi].
func randBetween(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
