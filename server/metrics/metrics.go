// Package metrics holds imserver's Prometheus collectors on a registry of
// their own (one per server, so tests can run several), served at
// /metrics. Every name starts with im_; the Go runtime's and the process's
// own collectors (go_*, process_*, among them resident memory) come too.
package metrics

import (
	"bytes"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Reasons a connection is closed by the server, as the values of the
// reason label of im_disconnects_total.
const (
	SlowConsumer = "slow_consumer" // its output queue overflowed
	RateLimit    = "rate_limit"    // it kept sending while rate-limited
	PreHello     = "pre_hello"     // too many frames, or failing ones, before its hello
	TokenRevoked = "token_revoked" // its token was revoked while connected
)

// Reasons a connection is refused before it starts, as the values of the
// reason label of im_connections_refused_total. The listener counts its own
// with netlimit's reasons (per_ip, max_conns, penalty).
const (
	PerUser    = "per_user"   // the user holds its maximum of connections
	Handshakes = "handshakes" // too many connections between upgrade and hello
	Origin     = "origin"     // a cross-site upgrade
	Penalty    = "penalty"    // an address behind a proxy failed too often before hello
)

// Scopes of a rate_limited answer, as the values of the scope label of
// im_rate_limited_total.
const (
	ScopeFrames   = "frames"    // the user's frame rate
	ScopeQuota    = "quota"     // a group quota of the user
	ScopePreHello = "pre_hello" // failing frames before hello from the address
)

// frameTypes are the frame types counted by name; any other is "other".
var frameTypes = []string{
	"hello", "send", "history", "delivered", "read", "receipts", "typing", "sync", "session_op", "create_group", "group_op",
	"welcome", "sent", "msg", "messages", "ok", "status", "error", "sessions", "session_sync", "group",
	"bad_frame", "other",
}

// Metrics are the server's collectors.
type Metrics struct {
	reg *prometheus.Registry

	// Connections counts open WebSocket connections, before and after
	// their hello.
	Connections prometheus.Gauge
	// SendLatency observes a send from its frame read to its sent answer
	// queued (durable).
	SendLatency prometheus.Histogram
	// CommitOps and CommitLatency observe each commit of the store's
	// writer: the writes it carried and how long it took.
	CommitOps     prometheus.Histogram
	CommitLatency prometheus.Histogram
	// CommitFailures counts commits that failed as a whole.
	CommitFailures prometheus.Counter
	// QueueBytes is the bytes waiting in every connection's output queue.
	QueueBytes prometheus.Gauge
	// Disconnects counts connections the server closed, by reason.
	Disconnects *prometheus.CounterVec
	// Refused counts connections refused before they started, by reason.
	Refused *prometheus.CounterVec
	// RateLimited counts rate_limited answers, by scope.
	RateLimited *prometheus.CounterVec

	framesIn, framesOut map[string]prometheus.Counter
}

// New returns a fresh set of collectors on their own registry.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	f := promauto(reg)
	m := &Metrics{
		reg:         reg,
		Connections: f.gauge("im_connections", "Open WebSocket connections."),
		SendLatency: f.histogram("im_send_duration_seconds", "From a send frame read to its sent answer queued (the message durable).",
			prometheus.ExponentialBuckets(0.0002, 2, 16)),
		CommitOps: f.histogram("im_commit_batch_ops", "Writes carried by one commit of the store (group commit).",
			prometheus.ExponentialBuckets(1, 2, 10)),
		CommitLatency: f.histogram("im_commit_duration_seconds", "Time of one commit of the store, fsync included.",
			prometheus.ExponentialBuckets(0.0001, 2, 16)),
		CommitFailures: f.counter("im_commit_failures_total", "Commits of the store that failed as a whole."),
		QueueBytes:     f.gauge("im_queue_bytes", "Bytes waiting in the output queues of all connections."),
		Disconnects:    f.counterVec("im_disconnects_total", "Connections closed by the server, by reason.", "reason"),
		Refused:        f.counterVec("im_connections_refused_total", "Connections refused before they started, by reason.", "reason"),
		RateLimited:    f.counterVec("im_rate_limited_total", "Requests answered rate_limited, by scope.", "scope"),
		framesIn:       map[string]prometheus.Counter{},
		framesOut:      map[string]prometheus.Counter{},
	}
	in := f.counterVec("im_frames_in_total", "Frames read from clients, by type (bad_frame: not decodable).", "type")
	out := f.counterVec("im_frames_out_total", "Frames written to clients, by type.", "type")
	for _, t := range frameTypes {
		m.framesIn[t] = in.WithLabelValues(t)
		m.framesOut[t] = out.WithLabelValues(t)
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Register adds a collector of another part of the server (a gauge read
// from the store, say).
func (m *Metrics) Register(c prometheus.Collector) { m.reg.MustRegister(c) }

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// FrameIn counts a frame read, by its type ("bad_frame" for one that did
// not decode).
func (m *Metrics) FrameIn(typ string) { m.count(m.framesIn, typ) }

// FrameOut counts a frame written. Frames are encoded with their type
// first ({"type":"…",…}), so the type is read from the text.
func (m *Metrics) FrameOut(frame []byte) {
	const prefix = `{"type":"`
	typ := "other"
	if rest, ok := bytes.CutPrefix(frame, []byte(prefix)); ok {
		if end := bytes.IndexByte(rest, '"'); end > 0 {
			if c, ok := m.framesOut[string(rest[:end])]; ok {
				c.Inc()
				return
			}
		}
	}
	m.framesOut[typ].Inc()
}

func (m *Metrics) count(set map[string]prometheus.Counter, typ string) {
	c, ok := set[typ]
	if !ok {
		c = set["other"]
	}
	c.Inc()
}

// Disconnect counts a connection the server closed for reason.
func (m *Metrics) Disconnect(reason string) { m.Disconnects.WithLabelValues(reason).Inc() }

// Refuse counts a connection refused for reason.
func (m *Metrics) Refuse(reason string) { m.Refused.WithLabelValues(reason).Inc() }

// Limited counts a rate_limited answer in scope.
func (m *Metrics) Limited(scope string) { m.RateLimited.WithLabelValues(scope).Inc() }

// ObserveCommit records one commit of the store.
func (m *Metrics) ObserveCommit(ops int, took time.Duration, err error) {
	if err != nil {
		m.CommitFailures.Inc()
		return
	}
	m.CommitOps.Observe(float64(ops))
	m.CommitLatency.Observe(took.Seconds())
}

// factory registers what it makes on one registry.
type factory struct{ reg *prometheus.Registry }

func promauto(reg *prometheus.Registry) factory { return factory{reg} }

func (f factory) gauge(name, help string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	f.reg.MustRegister(g)
	return g
}

func (f factory) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	f.reg.MustRegister(c)
	return c
}

func (f factory) counterVec(name, help, label string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{label})
	f.reg.MustRegister(c)
	return c
}

func (f factory) histogram(name, help string, buckets []float64) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
	f.reg.MustRegister(h)
	return h
}
