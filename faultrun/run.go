package faultrun

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/imcore/im/internal/tcpproxy"
)

// DefaultCutPolicy cuts one connection in twenty during the upgrade and
// most of the others after up to 64 KiB in one direction, and none lives
// longer than a second.
var DefaultCutPolicy = tcpproxy.CutPolicy{HandshakeCut: 0.05, BudgetCut: 0.75, MaxBytes: 64 << 10, MaxLife: time.Second}

// Config sets up one fault run. Zero fields take the defaults of the
// short form.
type Config struct {
	// ServerBinary is the imserver binary. Required.
	ServerBinary string
	// Dir holds the server's data directory and every profile. Required.
	Dir string
	// Seed drives every random choice of the harness (the timing of the
	// processes it drives is not reproducible).
	Seed uint64

	// Users is the number of users (2 to 8); the first TwoDeviceUsers of
	// them have a second device. 4 and 2 when zero.
	Users, TwoDeviceUsers int

	// Kills and Cuts are the targets: the chaos phase goes on until the
	// server was killed Kills times and the proxy cut Cuts connections,
	// or MaxChaos has passed (then the targets are not met).
	Kills, Cuts int
	MaxChaos    time.Duration
	// Converge bounds the wait, once the chaos is over, for every client
	// to catch up. 2 minutes when zero.
	Converge time.Duration

	// MinKillGap and MaxKillGap bound the random time the server runs
	// before the next SIGKILL; MaxDowntime the random time it stays down.
	MinKillGap, MaxKillGap, MaxDowntime time.Duration
	// MinRestartGap and MaxRestartGap bound the random time between two
	// restarts of a device's client (on the same store, as when the app
	// is closed and opened again).
	MinRestartGap, MaxRestartGap time.Duration
	// ActEvery is the mean time between two actions of one device;
	// MaxPending how many of a device's messages may wait for their ack
	// before it stops sending new ones.
	ActEvery   time.Duration
	MaxPending int
	// Policy is how the proxy cuts connections (zero: DefaultCutPolicy).
	Policy tcpproxy.CutPolicy

	// Cluster, when set, makes the run the scaled-out one (see
	// ClusterConfig): several nodes behind the proxy, and Redis flushes
	// and DynamoDB outages among the chaos.
	Cluster *ClusterConfig

	// Logf receives progress lines; nil discards them.
	Logf func(format string, args ...any)
	// LogDir, when set, receives each server's whole log, over every
	// start: a file per node (named by its node id), or server.log. A
	// cluster's nodes then log at debug level, and the goroutines of
	// every node are written there when a leave is slow (see slowLeave).
	LogDir string

	// wipeAtKill, for the harness's own test, empties the server's data
	// directory after that kill (a cluster's tables and Redis): a server
	// that loses what it acknowledged.
	wipeAtKill int
}

// userNames are the users of a run, in order.
var userNames = []string{"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi"}

func (c *Config) defaults() error {
	if c.ServerBinary == "" || c.Dir == "" {
		return errors.New("faultrun: ServerBinary and Dir are required")
	}
	setDefault(&c.Users, 4)
	setDefault(&c.TwoDeviceUsers, 2)
	if c.Users < 2 || c.Users > len(userNames) || c.TwoDeviceUsers > c.Users {
		return fmt.Errorf("faultrun: %d users (%d with two devices): want 2 to %d", c.Users, c.TwoDeviceUsers, len(userNames))
	}
	setDefault(&c.Kills, 5)
	setDefault(&c.Cuts, 200)
	setDefault(&c.MaxChaos, 2*time.Minute)
	setDefault(&c.Converge, 2*time.Minute)
	setDefault(&c.MinKillGap, 100*time.Millisecond)
	setDefault(&c.MaxKillGap, 3*time.Second)
	setDefault(&c.MaxDowntime, 500*time.Millisecond)
	setDefault(&c.MinRestartGap, time.Second)
	setDefault(&c.MaxRestartGap, 4*time.Second)
	setDefault(&c.ActEvery, 100*time.Millisecond)
	setDefault(&c.MaxPending, 20)
	if c.Policy == (tcpproxy.CutPolicy{}) {
		c.Policy = DefaultCutPolicy
	}
	c.MaxKillGap = max(c.MaxKillGap, c.MinKillGap)
	c.MaxRestartGap = max(c.MaxRestartGap, c.MinRestartGap)
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	if c.Cluster != nil {
		cc := *c.Cluster
		if err := cc.defaults(); err != nil {
			return err
		}
		c.Cluster = &cc
	}
	return nil
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// setupWait bounds each wait of the setup (the first connections, the
// groups).
const setupWait = 30 * time.Second

// Run runs one fault run: a real imserver on a fixed loopback address
// (or a cluster of them, with Config.Cluster) with a cutting proxy in
// front of it, a client per device
// sending, receiving and reading through the proxy, and a chaos phase of
// SIGKILLs and cuts; then it waits for every client to converge and
// verifies the result. The error is for a run that could not be carried
// out; broken invariants are the report's Violations.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	r := &run{cfg: cfg, led: NewLedger(), rng: rand.New(rand.NewPCG(cfg.Seed, 0xfa17))}
	r.report.Config = cfg
	began := time.Now()
	defer r.teardown()
	if err := r.setup(ctx); err != nil {
		return nil, err
	}
	chaosStart := time.Now()
	if err := r.chaos(ctx); err != nil {
		return nil, err
	}
	r.report.Chaos = time.Since(chaosStart)
	convergeStart := time.Now()
	violations, err := r.converge(ctx)
	if err == nil && r.cluster != nil && len(violations) == 0 {
		violations, err = r.pushRound(ctx)
	}
	if err != nil {
		return nil, err
	}
	violations = append(r.leaveViolations(), violations...)
	r.report.Converge = time.Since(convergeStart)
	r.report.Violations = violations
	r.report.Total = time.Since(began)
	if len(violations) > 0 {
		r.report.ServerFaults = r.serverFaults()
	}
	return &r.report, nil
}

// serverFaults returns the warnings and errors the servers logged, the
// last of them, to read beside the violations.
func (r *run) serverFaults() []string {
	var out []string
	for _, s := range r.everyNode() {
		for _, line := range strings.Split(s.Faults(), "\n") {
			if line != "" {
				out = append(out, s.Addr()+": "+line)
			}
		}
	}
	if len(out) > 40 {
		out = out[len(out)-40:]
	}
	return out
}

// run is the state of one fault run.
type run struct {
	cfg     Config
	led     *Ledger
	rng     *rand.Rand
	nodeSet nodeSet  // the server, or the cluster's nodes
	cluster *cluster // nil: a single embedded server
	proxy   *tcpproxy.Proxy
	devices []*Device
	users   []string
	members map[string][]string // conv → members, sorted
	report  Report

	engineRestarts atomic.Int64
	// kills, flushes, outages, joins and leaves count the chaos's events
	// so far, lateLeaves the leaves that ran out of their grace (the
	// report gets them at its end).
	kills, flushes, outages, joins, leaves, lateLeaves, pauses atomic.Int64

	violationMu sync.Mutex
	leaveFaults []Violation // leaves that did not stop cleanly
	eventErr    error       // a chaos event's failure that fails the run

	flushMu        sync.Mutex
	onlinesAtFlush map[string]int // Ledger.Onlines at the last flush of Redis

	harnessMu   sync.Mutex
	harnessErrs []error
}

// harnessError records a failure of the harness itself (a store that
// could not be read), which fails the run.
func (r *run) harnessError(err error) {
	r.harnessMu.Lock()
	defer r.harnessMu.Unlock()
	if len(r.harnessErrs) < 20 {
		r.harnessErrs = append(r.harnessErrs, err)
	}
}

// waitUntil polls cond until it reports nothing left to wait for ("") or
// timeout passes; the error names what was still awaited.
func waitUntil(timeout time.Duration, what string, cond func() (string, error)) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		waiting, err := cond()
		if err != nil {
			return err
		}
		if waiting == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no %s within %v: %s", what, timeout, waiting)
		}
		<-tick.C
	}
}
