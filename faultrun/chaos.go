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

// chaos drives every device, restarts engines now and then and turns the
// proxy's cuts on, then kills the server at random moments and restarts
// it on the same address and data directory, until the targets are met or
// MaxChaos has passed. It returns with the drivers and engine restarts
// stopped, the cuts off and the server running.
func (r *run) chaos(ctx context.Context) error {
	driveCtx, stopDriving := context.WithCancel(ctx)
	var background sync.WaitGroup
	background.Add(2)
	go func() {
		defer background.Done()
		driveAll(driveCtx, r.devices, r.cfg.Seed, r.cfg.ActEvery, r.cfg.MaxPending)
	}()
	go func() {
		defer background.Done()
		r.restartEngines(driveCtx)
	}()
	r.proxy.SetChaos(true)
	defer func() {
		r.proxy.SetChaos(false)
		stopDriving()
		background.Wait()
		r.report.EngineRestarts = int(r.engineRestarts.Load())
	}()

	start := time.Now()
	deadline := start.Add(r.cfg.MaxChaos)
	lastLog := start
	for !r.targetsMet() {
		if !sleepUntil(ctx, minTime(time.Now().Add(randBetween(r.rng, r.cfg.MinKillGap, r.cfg.MaxKillGap)), deadline)) {
			return ctx.Err()
		}
		if !time.Now().Before(deadline) {
			break
		}
		if !r.server.Alive() {
			return fmt.Errorf("imserver exited on its own\n%s", r.server.Logs())
		}
		if err := r.server.Kill(); err != nil {
			return fmt.Errorf("kill imserver: %w", err)
		}
		r.report.Kills++
		if r.report.Kills == r.cfg.wipeAtKill {
			if err := r.server.wipe(); err != nil {
				return err
			}
		}
		if !sleepUntil(ctx, time.Now().Add(randBetween(r.rng, 0, r.cfg.MaxDowntime))) {
			return ctx.Err()
		}
		if err := r.restart(ctx); err != nil {
			return fmt.Errorf("restart imserver after kill %d: %w", r.report.Kills, err)
		}
		if time.Since(lastLog) >= progressEvery {
			lastLog = time.Now()
			r.cfg.Logf("%s", r.progress(time.Since(start)))
		}
	}
	r.report.TargetsMet = r.targetsMet()
	r.cfg.Logf("%s", r.progress(time.Since(start)))
	return nil
}

// restartEngines restarts a random device's engine (closing and reopening
// its store) at random moments until ctx ends.
func (r *run) restartEngines(ctx context.Context) {
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

// restart starts the server again. Another process may have taken its
// port while it was down (as an ephemeral port); then it tries again for a
// while. Any other failure to start is the server's.
func (r *run) restart(ctx context.Context) error {
	const tries = 25
	for i := 1; ; i++ {
		err := r.server.Run()
		if err == nil || i == tries || !strings.Contains(err.Error(), "address already in use") {
			return err
		}
		r.cfg.Logf("restart %d: the port is taken, trying again", i)
		if !sleepUntil(ctx, time.Now().Add(200*time.Millisecond)) {
			return ctx.Err()
		}
	}
}

// targetsMet reports whether the kills and cuts reached their targets.
func (r *run) targetsMet() bool {
	return r.report.Kills >= r.cfg.Kills && r.proxy.Stats().Cuts >= int64(r.cfg.Cuts)
}

// progress is one line on the chaos so far.
func (r *run) progress(elapsed time.Duration) string {
	s := r.proxy.Stats()
	v := r.led.View()
	return fmt.Sprintf("chaos %v: %d/%d kills, %d/%d cuts (%d mid-frame), %d connections, %d engine restarts, %d messages sent, %d acknowledged",
		elapsed.Round(time.Second), r.report.Kills, r.cfg.Kills, s.Cuts, r.cfg.Cuts, s.MidFrame, s.Conns, r.engineRestarts.Load(), len(v.Queued), len(v.Acked))
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
