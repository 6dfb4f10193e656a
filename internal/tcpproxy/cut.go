package tcpproxy

import (
	"math"
	"time"
)

// CutPolicy says how a proxy cuts the connections it carries while chaos
// is on (SetChaos). Each new connection draws a plan: with probability
// HandshakeCut a byte budget counted from its first byte (most such cuts
// fall inside the HTTP upgrade); with probability BudgetCut a byte budget
// counted from the end of the upgrade, log-uniform between 1 and
// MaxBytes; either in one direction chosen at random. A budget cut
// forwards exactly the budget, usually part of a frame, then closes both
// sides. With MaxLife set, every connection also gets a lifetime, uniform
// up to MaxLife, at which it is cut abruptly if its budget has not run
// out (half of these cuts close with a TCP reset). The zero policy never
// cuts.
type CutPolicy struct {
	HandshakeCut float64
	BudgetCut    float64
	MaxBytes     int64
	MaxLife      time.Duration
}

// cutPlan is how one connection will be cut: after budget bytes in
// direction dir (budget < 0: no budget), counted from the first byte or
// from the end of the upgrade, or at life (0: never), whichever comes
// first.
type cutPlan struct {
	dir         int // 0: client to target, 1: target to client
	budget      int64
	fromUpgrade bool
	life        time.Duration
	reset       bool // a timed cut closes with a TCP reset rather than a FIN
}

// noCut is the plan of a connection that is never cut.
var noCut = cutPlan{budget: -1}

// draw picks a plan for a new connection by the policy.
func (p *Proxy) draw() cutPlan {
	p.rngMu.Lock()
	defer p.rngMu.Unlock()
	policy := p.cfg.Cuts
	plan := cutPlan{dir: p.rng.IntN(2), budget: -1}
	switch r := p.rng.Float64(); {
	case r < policy.HandshakeCut:
		plan.budget = 1 + p.rng.Int64N(320)
	case r < policy.HandshakeCut+policy.BudgetCut:
		plan.fromUpgrade = true
		plan.budget = int64(math.Exp(p.rng.Float64() * math.Log(float64(policy.MaxBytes))))
	}
	if policy.MaxLife > 0 {
		plan.life = time.Duration(1 + p.rng.Int64N(int64(policy.MaxLife)))
	}
	plan.reset = p.rng.IntN(2) == 0
	return plan
}
