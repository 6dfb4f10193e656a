package faultrun

import (
	"fmt"
	"strings"
	"time"

	"github.com/imcore/im/internal/tcpproxy"
)

// Report is the outcome of a fault run.
type Report struct {
	Config Config
	// ServerFaults are the last warnings and errors the servers logged,
	// kept when the run has violations.
	ServerFaults []string

	// Kills counts SIGKILLs (the server was started Kills+1 times).
	Kills int
	// Pauses counts a cluster run's SIGSTOPs of a node past its lease.
	Pauses int
	// Flushes counts a cluster run's FLUSHALLs of Redis; Outages its
	// outages of DynamoDB, RefusingOutages those that reset connections
	// (the others delayed them), OutageTime their length together.
	Flushes, Outages, RefusingOutages int
	OutageTime                        time.Duration
	// Joins counts the nodes that joined a cluster run, Leaves the members
	// that left it (SIGTERM), LateLeaves those of them that stopped at the
	// end of imserver's shutdown grace with requests still in flight.
	Joins, Leaves, LateLeaves int
	// PushRound counts the messages of a cluster run's push round (one per
	// device, sent once the run converged; see pushRound).
	PushRound int
	// Dynamo is what the proxy in front of DynamoDB did.
	Dynamo tcpproxy.Stats
	// EngineRestarts counts the restarts of a device's engine.
	EngineRestarts int
	// Proxy is what the proxy in front of the servers did.
	Proxy tcpproxy.Stats
	// TargetsMet says whether the kills and cuts reached their targets
	// before MaxChaos.
	TargetsMet bool

	Devices, Conversations int
	// Queued counts the messages handed to clients, Acked those their
	// clients showed acknowledged, WireAcked the distinct messages whose
	// sent answer the proxy saw, WireFrames the sent answers it saw in
	// all (retries answered again included).
	Queued, Acked, WireAcked int
	WireFrames               int64
	// History counts the messages in the server's history, system
	// messages included; Held the messages held in local stores, over
	// every device.
	History, Held int
	// Welcomes counts the welcomes the server wrote through the proxy.
	Welcomes int64
	// Errors are the clients' error events.
	Errors []ErrorCount

	Chaos, Converge, Total time.Duration
	Violations             []Violation
}

// count fills the report's counts from the world.
func (r *Report) count(w *World, proxy tcpproxy.Stats) {
	r.Proxy = proxy
	r.Devices = len(w.Devices)
	r.Conversations = len(w.Members)
	r.Queued = len(w.Ledger.Queued)
	r.Acked = len(w.Ledger.Acked)
	r.WireAcked = len(w.Ledger.Wire)
	r.WireFrames = w.Ledger.WireFrames
	r.Welcomes = w.Ledger.Welcomes
	r.Errors = w.Ledger.Errors
	r.History = 0
	for _, h := range w.History {
		r.History += len(h)
	}
	r.Held = 0
	for _, d := range w.Devices {
		for _, msgs := range d.Messages {
			for _, m := range msgs {
				if m.Seq > 0 {
					r.Held++
				}
			}
		}
	}
}

// Summary is the run in one paragraph.
func (r *Report) Summary() string {
	var b strings.Builder
	p := r.Proxy
	fmt.Fprintf(&b, "Fault run (seed %d): %d SIGKILLs of imserver (target %d) and %d connection cuts (target %d): %d mid-frame, %d inside the upgrade; %d after a byte budget, %d at a random time (%d with a TCP reset); ",
		r.Config.Seed, r.Kills, r.Config.Kills, p.Cuts, r.Config.Cuts, p.MidFrame, p.Handshake, p.BudgetCuts, p.TimedCuts, p.Resets)
	if c := r.Config.Cluster; c != nil {
		d := r.Dynamo
		fmt.Fprintf(&b, "a cluster of %d nodes on DynamoDB and Redis, one node killed at a time: %d FLUSHALLs of Redis (target %d), %d DynamoDB outages (target %d; %d refusing, %d delaying; %v in all) in which the DynamoDB proxy reset %d live and %d new connections and held back %d chunks, the last flush and outage after the last kill; %d nodes joined and %d left with SIGTERM, handing their shards over (target %d each; %d ran out of the shutdown grace), never while a node was down; %d SIGSTOP pauses of a node past its %v lease (target %d); ",
			c.Nodes, r.Flushes, c.Flushes, r.Outages, c.Outages, r.RefusingOutages, r.Outages-r.RefusingOutages, r.OutageTime.Round(100*time.Millisecond), d.ResetLive, d.Refused, d.Delayed, r.Joins, r.Leaves, c.Joins, r.LateLeaves, r.Pauses, c.Lease, c.Pauses)
		if r.PushRound > 0 {
			fmt.Fprintf(&b, "after the convergence a push round of %d messages, one per device, with no chaos; ", r.PushRound)
		} else {
			b.WriteString("no push round (the run did not converge clean); ")
		}
	}
	fmt.Fprintf(&b, "%d restarts of a client on its store; ", r.EngineRestarts)
	fmt.Fprintf(&b, "%d connections through the proxy (%d refused while no server was up), %d welcomed; %d server messages read by the proxy never reached their client whole. ", p.Conns, p.Unreachable, r.Welcomes, p.Withheld)
	fmt.Fprintf(&b, "%d devices of %d users in %d conversations sent %d messages; %d acknowledged by their clients, %d sent answers seen on the wire (%d distinct); history holds %d messages (system ones included), local stores %d. ",
		r.Devices, r.Config.Users, r.Conversations, r.Queued, r.Acked, r.WireFrames, r.WireAcked, r.History, r.Held)
	fmt.Fprintf(&b, "Chaos %v, convergence %v, total %v. ", r.Chaos.Round(100*time.Millisecond), r.Converge.Round(100*time.Millisecond), r.Total.Round(100*time.Millisecond))
	if !r.TargetsMet {
		b.WriteString("Targets NOT met. ")
	}
	fmt.Fprintf(&b, "Violations: %d.", len(r.Violations))
	return b.String()
}

// Targets says how far each target was reached.
func (r *Report) Targets() string {
	c := r.Config
	s := fmt.Sprintf("%d of %d kills, %d of %d cuts", r.Kills, c.Kills, r.Proxy.Cuts, c.Cuts)
	if cc := c.Cluster; cc != nil {
		s += fmt.Sprintf(", %d of %d flushes, %d of %d outages, %d of %d joins, %d of %d leaves, %d of %d pauses", r.Flushes, cc.Flushes, r.Outages, cc.Outages, r.Joins, cc.Joins, r.Leaves, cc.Joins, r.Pauses, cc.Pauses)
	}
	return s
}

// ErrorSummary lists the clients' error events, one line each.
func (r *Report) ErrorSummary() string {
	var lines []string
	for _, e := range r.Errors {
		lines = append(lines, fmt.Sprintf("%s %s ×%d (%s)", e.Device, e.Op, e.N, e.Sample))
	}
	return strings.Join(lines, "\n")
}
