package faultrun

import (
	"context"
	"fmt"

	"github.com/imcore/im/client"
	"github.com/imcore/im/localstore"
)

// pushRound shows, once a cluster run has converged, that pushes work
// across the nodes after the chaos (Redis flushed, DynamoDB back): with
// nothing cutting or killing any more, every device sends one message,
// and the run converges again. A device that did not reconnect meanwhile
// can only have got the others' messages as pushes, from whichever node
// its sender is on; one that reconnected is a violation of kind push (its
// messages may have come by the sync after the welcome). The messages go
// into the ledger like any other, so Verify checks them too.
func (r *run) pushRound(ctx context.Context) ([]Violation, error) {
	before := r.led.Onlines()
	for i, d := range r.devices {
		conv := d.convs[i%len(d.convs)]
		if err := d.use(func(eng *client.Client, _ *localstore.Store) error { return d.send(eng, conv) }); err != nil {
			return nil, err
		}
	}
	r.report.PushRound = len(r.devices)
	violations, err := r.converge(ctx)
	if err != nil {
		return nil, err
	}
	after := r.led.Onlines()
	for _, d := range r.devices {
		if n := after[d.Name] - before[d.Name]; n > 0 {
			violations = append(violations, Violation{Kind: "push", Detail: fmt.Sprintf("%s reconnected %d times during the push round, with no chaos", d.Name, n)})
		}
	}
	return violations, nil
}

// noteFlush records, at a flush of Redis, how many times each device came
// online so far.
func (r *run) noteFlush() {
	onlines := r.led.Onlines()
	r.flushMu.Lock()
	defer r.flushMu.Unlock()
	r.onlinesAtFlush = onlines
}

// reconnectedSinceFlush reports whether every device came online again
// since the last flush of Redis (true before any): each then recorded its
// presence again on the node it reached, which a push round relies on
// rather than on the nodes' periodic refresh.
func (r *run) reconnectedSinceFlush() bool {
	r.flushMu.Lock()
	atFlush := r.onlinesAtFlush
	r.flushMu.Unlock()
	if atFlush == nil {
		return true
	}
	now := r.led.Onlines()
	for _, d := range r.devices {
		if now[d.Name] <= atFlush[d.Name] || !r.led.Online(d.Name) {
			return false
		}
	}
	return true
}
