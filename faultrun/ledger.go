package faultrun

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"

	"github.com/imcore/im/protocol"
)

// MsgKey names one message forever: (conv, msg_id).
type MsgKey struct{ Conv, MsgID string }

func (k MsgKey) String() string { return k.Conv + "/" + k.MsgID }

// Queued is a message a device handed to its client with Send.
type Queued struct {
	Key          MsgKey
	User, Device string
	Body         string
}

// Ledger is the run's record of what was promised: every message handed
// to an client, the seq each client reported it acknowledged with (its
// local store gave it a seq), and every sent answer the server wrote,
// seen on the wire by the proxy whether or not the client got it. It is
// safe for concurrent use.
type Ledger struct {
	mu         sync.Mutex
	queued     map[MsgKey]Queued
	order      []MsgKey
	acked      map[MsgKey]int64   // the seq the sending client reported
	wire       map[MsgKey][]int64 // the distinct seqs of the sent frames seen
	wireFrames int64
	conflicts  []string          // an client reported two seqs for one message
	unacked    map[string]int    // device → queued and not yet acknowledged
	unackedIn  map[devConv]int   // (device, conv) → the same
	errors     map[errKey]int    // client error events
	samples    map[errKey]string // the first message of each
	runErrors  map[string]error  // clients whose Run returned an error
	online     map[string]bool   // device → online now
	onlines    map[string]int    // device → times it came online
	welcomes   int64             // welcome frames seen on the wire
	seqOfSend  map[string]int    // device → messages queued, for bodies
}

type devConv struct{ device, conv string }

type errKey struct{ device, op string }

// NewLedger returns an empty ledger.
func NewLedger() *Ledger {
	return &Ledger{
		queued: make(map[MsgKey]Queued), acked: make(map[MsgKey]int64), wire: make(map[MsgKey][]int64),
		unacked: make(map[string]int), unackedIn: make(map[devConv]int),
		errors: make(map[errKey]int), samples: make(map[errKey]string), runErrors: make(map[string]error),
		online: make(map[string]bool), onlines: make(map[string]int), seqOfSend: make(map[string]int),
	}
}

// nextBody returns the body of device's next message.
func (l *Ledger) nextBody(device string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seqOfSend[device]++
	return fmt.Sprintf("%s #%d", device, l.seqOfSend[device])
}

// Queue records a message handed to device's engine.
func (l *Ledger) Queue(q Queued) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, dup := l.queued[q.Key]; dup {
		l.conflicts = append(l.conflicts, fmt.Sprintf("%s: the engine gave two messages the msg_id %s", q.Device, q.Key))
		return
	}
	l.queued[q.Key] = q
	l.order = append(l.order, q.Key)
	l.unacked[q.Device]++
	l.unackedIn[devConv{q.Device, q.Key.Conv}]++
}

// Unacked returns how many of device's messages wait for their ack, in
// conv ("" for all conversations).
func (l *Ledger) Unacked(device, conv string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if conv == "" {
		return l.unacked[device]
	}
	return l.unackedIn[devConv{device, conv}]
}

// Ack records that device's client reports key stored by the server at
// seq. A second report with another seq is a conflict.
func (l *Ledger) Ack(device string, key MsgKey, seq int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	q, ok := l.queued[key]
	if !ok || q.Device != device {
		return // another device's message: its own client reports it
	}
	if old, ok := l.acked[key]; ok {
		if old != seq {
			l.conflicts = append(l.conflicts, fmt.Sprintf("%s: %s acknowledged with seq %d, later shown with seq %d", device, key, old, seq))
		}
		return
	}
	l.acked[key] = seq
	l.unacked[device]--
	l.unackedIn[devConv{device, key.Conv}]--
}

// AckedCount returns how many messages the clients reported stored.
func (l *Ledger) AckedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

// TapServerMessage looks at one text message the server wrote to a
// client: it records sent answers and counts welcomes. It is the proxy's
// tap.
func (l *Ledger) TapServerMessage(payload []byte) {
	if !bytes.Contains(payload, []byte(`"sent"`)) && !bytes.Contains(payload, []byte(`"welcome"`)) {
		return
	}
	f, _, err := protocol.DecodeServerFrame(payload)
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch f := f.(type) {
	case *protocol.Welcome:
		l.welcomes++
	case *protocol.Sent:
		key := MsgKey{f.Conv, f.MsgID}
		l.wireFrames++
		if !slices.Contains(l.wire[key], f.Seq) {
			l.wire[key] = append(l.wire[key], f.Seq)
		}
	}
}

// noteError counts an client's error event.
func (l *Ledger) noteError(device, op string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := errKey{device, op}
	l.errors[k]++
	if _, ok := l.samples[k]; !ok {
		l.samples[k] = err.Error()
	}
}

// noteRunError records an client whose Run returned an error.
func (l *Ledger) noteRunError(device string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runErrors[device] = err
}

// noteConn records a device's connection state.
func (l *Ledger) noteConn(device string, online bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if online && !l.online[device] {
		l.onlines[device]++
	}
	l.online[device] = online
}

// Onlines returns how many times each device came online so far.
func (l *Ledger) Onlines() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.onlines)
}

// Online reports whether device's client is online.
func (l *Ledger) Online(device string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.online[device]
}

// LedgerView is a copy of the ledger at one moment, for Verify.
type LedgerView struct {
	Queued     []Queued           // in the order they were queued
	Acked      map[MsgKey]int64   // client acknowledgements
	Wire       map[MsgKey][]int64 // sent answers seen on the wire
	WireFrames int64
	Conflicts  []string
	Errors     []ErrorCount      // client error events, by device and op
	RunErrors  map[string]string // clients whose Run returned an error
	Welcomes   int64             // welcome frames seen on the wire
}

// ErrorCount counts one kind of error event of one engine.
type ErrorCount struct {
	Device, Op string
	N          int
	Sample     string // the first one's message
}

// View copies the ledger.
func (l *Ledger) View() LedgerView {
	l.mu.Lock()
	defer l.mu.Unlock()
	v := LedgerView{
		Acked: make(map[MsgKey]int64, len(l.acked)), Wire: make(map[MsgKey][]int64, len(l.wire)),
		WireFrames: l.wireFrames, Conflicts: append([]string(nil), l.conflicts...),
		RunErrors: make(map[string]string),
	}
	for _, k := range l.order {
		v.Queued = append(v.Queued, l.queued[k])
	}
	for k, seq := range l.acked {
		v.Acked[k] = seq
	}
	for k, seqs := range l.wire {
		v.Wire[k] = append([]int64(nil), seqs...)
	}
	for k, n := range l.errors {
		v.Errors = append(v.Errors, ErrorCount{Device: k.device, Op: k.op, N: n, Sample: l.samples[k]})
	}
	sort.Slice(v.Errors, func(i, j int) bool {
		a, b := v.Errors[i], v.Errors[j]
		return a.Device < b.Device || (a.Device == b.Device && a.Op < b.Op)
	})
	for d, err := range l.runErrors {
		v.RunErrors[d] = err.Error()
	}
	v.Welcomes = l.welcomes
	return v
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
