package faultrun

import (
	"context"
	"fmt"
	"time"

	"github.com/imcore/im/client"
	"github.com/imcore/im/localstore"
)

// convergePoll is the pause between two looks at whether the clients have
// converged.
const convergePoll = 250 * time.Millisecond

// convergeLogEvery is how often the convergence logs what it waits for.
const convergeLogEvery = 5 * time.Second

// converge waits, with the chaos over, until every client has caught up
// and the world verifies, or Converge has passed; it returns the
// violations of the last look (none: converged and verified). Catching
// up is observable: every device online with an empty outbox and no
// unconfirmed read, holding every message of its conversations, and every
// member's delivered boundary at the newest seq. A device that holds a
// conversation's newest messages but not the older ones is scrolled back,
// as its user would.
func (r *run) converge(ctx context.Context) ([]Violation, error) {
	start := time.Now()
	deadline := start.Add(r.cfg.Converge)
	logged, lastLog := false, start
	for {
		waiting, err := r.caughtUp()
		if err != nil {
			return nil, r.serverFault(err)
		}
		if waiting != "" && time.Since(lastLog) >= convergeLogEvery {
			lastLog = time.Now()
			r.cfg.Logf("converging %v: %s", time.Since(start).Round(time.Second), waiting)
		}
		var violations []Violation
		if waiting == "" || !time.Now().Before(deadline) {
			w, err := gather(r.probeAddr(), r.members, r.users, r.devices, r.led)
			if err != nil {
				return nil, r.serverFault(err)
			}
			r.report.count(w, r.proxy.Stats())
			if r.cluster != nil {
				r.report.Dynamo = r.cluster.dynamo.Stats()
			}
			violations = Verify(w)
			for _, err := range r.harnessErrors() {
				violations = append(violations, Violation{Kind: "harness", Detail: err.Error()})
			}
			if waiting == "" && len(violations) == 0 {
				return nil, nil
			}
			if waiting == "" && !logged {
				// Caught up, yet not verified: log what is off, in case it
				// does not settle.
				logged = true
				r.cfg.Logf("caught up, not yet verified: %d violations, first %v", len(violations), violations[0])
			}
		}
		if !time.Now().Before(deadline) {
			if waiting != "" {
				violations = append(violations, Violation{Kind: "converge", Detail: fmt.Sprintf("not caught up %v after the chaos: %s", r.cfg.Converge, waiting)})
			}
			return violations, nil
		}
		if !sleepUntil(ctx, time.Now().Add(convergePoll)) {
			return nil, ctx.Err()
		}
	}
}

// caughtUp says what the clients are still catching up on ("" when
// nothing), scrolling back the devices that lack older messages. What the
// server will not answer is waited for too; its error is for a store the
// harness could not read.
func (r *run) caughtUp() (string, error) {
	if off := r.offline(); off != "" {
		return off, nil
	}
	for _, d := range r.devices {
		waiting := ""
		err := d.use(func(_ *client.Client, st *localstore.Store) error {
			outbox, err := st.Outbox()
			if err != nil {
				return err
			}
			reads, err := st.PendingReads()
			switch {
			case err != nil:
				return err
			case len(outbox) > 0:
				waiting = fmt.Sprintf("%s has %d messages in its outbox", d.Name, len(outbox))
			case len(reads) > 0:
				waiting = fmt.Sprintf("%s has %d read marks unconfirmed", d.Name, len(reads))
			}
			return nil
		})
		if err != nil || waiting != "" {
			return waiting, err
		}
	}
	probes := make(map[string]*probe)
	defer func() {
		for _, p := range probes {
			p.close()
		}
	}()
	waiting := ""
	for _, conv := range sortedKeys(r.members) {
		members := r.members[conv]
		p, ok := probes[members[0]]
		if !ok {
			var err error
			if p, err = dialProbe(r.probeAddr(), members[0]); err != nil {
				return err.Error(), nil
			}
			probes[members[0]] = p
		}
		newest, err := p.newest(conv)
		if err != nil {
			return fmt.Sprintf("history of %s: %v", conv, err), nil
		}
		for _, d := range r.devices {
			if !contains(members, d.User) {
				continue
			}
			err := d.use(func(eng *client.Client, st *localstore.Store) error {
				synced, err := st.SyncedSeq(conv)
				if err != nil || synced >= newest {
					return err
				}
				if waiting == "" {
					waiting = fmt.Sprintf("%s holds %s up to %d of %d", d.Name, conv, synced, newest)
				}
				_, err = scrollBack(eng, st, conv)
				return err
			})
			if err != nil {
				return "", err
			}
		}
		if waiting != "" {
			continue
		}
		receipts, err := p.receipts(conv)
		if err != nil {
			return fmt.Sprintf("receipts of %s: %v", conv, err), nil
		}
		for _, m := range receipts {
			if m.DeliveredSeq < newest {
				return fmt.Sprintf("%s delivered %s up to %d of %d", m.User, conv, m.DeliveredSeq, newest), nil
			}
		}
	}
	return waiting, nil
}

// serverFault adds to err, a failure to read the server's view, the
// log of a server that has exited on its own.
func (r *run) serverFault(err error) error {
	if dead := r.checkAlive(); dead != nil {
		return fmt.Errorf("%w; %w", err, dead)
	}
	return err
}

// harnessErrors returns the harness's own failures.
func (r *run) harnessErrors() []error {
	r.harnessMu.Lock()
	defer r.harnessMu.Unlock()
	return append([]error(nil), r.harnessErrs...)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
