package faultrun

import (
	"context"
	"math/rand/v2"
	"time"
)

// eventPoll is how often a cluster event that waits for the last kill
// looks again.
const eventPoll = 100 * time.Millisecond

// flushRedis FLUSHALLs the run's Redis at random moments, until the target
// is met or ctx ends. The last flush waits for the last kill.
func (r *run) flushRedis(ctx context.Context) {
	rng := rand.New(rand.NewPCG(r.cfg.Seed, 0xf1a5))
	c := r.cluster.cfg
	for n := 1; n <= c.Flushes; n++ {
		if !r.awaitEvent(ctx, rng, n == c.Flushes) {
			return
		}
		if err := r.cluster.redis.FlushAll(ctx); err != nil {
			if ctx.Err() == nil {
				r.harnessError(err)
			}
			return
		}
		r.noteFlush()
		r.flushes.Add(1)
		r.cfg.Logf("flush %d of Redis", n)
	}
}

// failDynamoDB has the proxy in front of DynamoDB fail at random moments,
// for a random while each, until the target is met or ctx ends: the
// outages alternate between resetting every connection and holding every
// byte for a random latency. The nodes are not restarted for it. The last outage waits for
// the last kill.
func (r *run) failDynamoDB(ctx context.Context) {
	rng := rand.New(rand.NewPCG(r.cfg.Seed, 0xd1a0))
	c := r.cluster.cfg
	proxy := r.cluster.dynamo
	first := rng.IntN(2) // the kinds alternate, from a random one
	for n := 1; n <= c.Outages; n++ {
		if !r.awaitEvent(ctx, rng, n == c.Outages) {
			return
		}
		length := randBetween(rng, c.MinOutage, c.MaxOutage)
		if (n+first)%2 == 0 {
			proxy.Refuse()
			r.report.RefusingOutages++
			r.cfg.Logf("outage %d of DynamoDB: refusing for %v", n, length.Round(time.Millisecond))
		} else {
			latency := randBetween(rng, 10*time.Millisecond, c.MaxLatency)
			proxy.Delay(latency)
			r.cfg.Logf("outage %d of DynamoDB: a latency of %v for %v", n, latency.Round(time.Millisecond), length.Round(time.Millisecond))
		}
		began := time.Now()
		sleepUntil(ctx, began.Add(length))
		proxy.Recover()
		r.report.OutageTime += time.Since(began)
		r.outages.Add(1)
		if ctx.Err() != nil {
			return
		}
	}
}

// awaitEvent waits a random gap before a cluster event and, for the last
// of its kind, until the kills are done; it reports false when ctx ended
// first.
func (r *run) awaitEvent(ctx context.Context, rng *rand.Rand, last bool) bool {
	c := r.cluster.cfg
	if !sleepUntil(ctx, time.Now().Add(randBetween(rng, c.MinEventGap, c.MaxEventGap))) {
		return false
	}
	for last && !r.killsMet() {
		if !sleepUntil(ctx, time.Now().Add(eventPoll)) {
			return false
		}
	}
	return true
}
