package server

import (
	"context"

	"github.com/imcore/im/server/chat"
	"github.com/imcore/im/server/gateway"
	"github.com/imcore/im/server/hub"
	"github.com/prometheus/client_golang/prometheus"
)

// Cluster makes a server one node of several that share its Backend (the
// scaled-out deployment; see OpenScaledOut). Nil for the embedded server.
type Cluster struct {
	// ScaleOut is what the cluster was opened from (OpenScaledOut).
	ScaleOut ScaleOut
	// Collectors are metrics of the cluster's connections (calls to
	// Redis and DynamoDB), served on /metrics.
	Collectors []prometheus.Collector
	// Devices returns the registry that reaches every user's devices on
	// every node, around local, the devices of this node: it sends pushes
	// to another node's devices with send (over the node links). It calls
	// lost with the users of local's devices when pushes to them may have
	// been lost (Redis lost the node's presence), so that they are told to
	// sync.
	Devices func(local *hub.Hub, send func(ctx context.Context, node string, batch []hub.Delivery) error, lost func(users []string)) (Devices, error)
	// Check reports whether the node reaches what it shares (Redis,
	// DynamoDB); /healthz answers 503 while it fails.
	Check func(ctx context.Context) error
	// Close releases the connections to what the nodes share, after the
	// store is closed.
	Close func() error

	// NodeID names this node in presence, in its heartbeat and in
	// /status.
	NodeID string
	// Inspector records this node's heartbeat and reads the deployment's
	// status (/status, /readyz's recovery). Nil: the node records nothing
	// and /status shows only itself.
	Inspector *Inspector
	// Owners gives every conversation and user one owner node
	// (docs/SCALING.md); a cluster needs it.
	Owners *Owners
	// Ownership reports the shards this node owns; set by the server.
	Ownership Ownership
}

// Devices registers the devices of this node and pushes frames to the
// devices of users wherever they are connected: *hub.Hub in one process.
type Devices interface {
	gateway.Registry
	chat.Pusher
}

var _ Devices = (*hub.Hub)(nil)
