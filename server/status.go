package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/redis/go-redis/v9"

	"github.com/imcore/im/server/blob"
	"github.com/imcore/im/server/ownership"
	"github.com/imcore/im/server/relay"
	"github.com/imcore/im/server/store/dynamostore"
)

// Status is a deployment at a glance: its live nodes and the health of
// the services they share. A node serves it on /status; `imserver status`
// reads it from the services directly.
type Status struct {
	At       time.Time       `json:"at"`
	Nodes    []NodeStatus    `json:"nodes"`
	Services []ServiceStatus `json:"services"`
}

// NodeStatus is one node as it last reported itself.
type NodeStatus struct {
	ID      string    `json:"id"`
	Addr    string    `json:"addr,omitempty"` // where it listens
	Host    string    `json:"host,omitempty"`
	PID     int       `json:"pid,omitempty"`
	Started time.Time `json:"started"`
	Seen    time.Time `json:"seen"` // its last heartbeat (zero: none in Redis)
	// Connections is the WebSocket connections it holds, Devices those
	// past their hello.
	Connections int `json:"connections"`
	Devices     int `json:"devices"`
	// Users is how many users the node's presence lists in Redis (the
	// relay's node:<id>:users); -1 when unknown.
	Users int64 `json:"users"`
	// Live says the node holds its place among the owners: its
	// announcement in Redis, renewed five times a lease, has not expired,
	// so the process is alive and reaches Redis, whatever its heartbeat
	// says.
	Live bool `json:"live"`
	// NotReady is why the node's /readyz answers 503, empty when ready.
	NotReady string `json:"not_ready,omitempty"`
	// Shards is what the node owns, from Cluster.Ownership; null when the
	// node does not report ownership (no build does yet), never made up.
	Shards []int `json:"shards"`
}

// ServiceStatus is one service's health as the reader saw it.
type ServiceStatus struct {
	Name   string        `json:"name"`   // redis, dynamodb, s3, sqlite
	Target string        `json:"target"` // what was asked, without secrets
	OK     bool          `json:"ok"`
	Detail string        `json:"detail"` // the error, or what it answered
	Took   time.Duration `json:"took_ns"`
}

// Healthy reports whether every service answered.
func (s Status) Healthy() bool {
	for _, e := range s.Services {
		if !e.OK {
			return false
		}
	}
	return true
}

// WriteText writes s for a terminal.
func (s Status) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	shards, ready := false, 0
	for _, n := range s.Nodes {
		shards = shards || n.Shards != nil
		if n.NotReady == "" {
			ready++
		}
	}
	fmt.Fprintf(tw, "nodes: %d listed, %d ready (%s)\n", len(s.Nodes), ready, s.At.UTC().Format(time.RFC3339))
	if len(s.Nodes) > 0 {
		fmt.Fprint(tw, "  NODE\tADDRESS\tREADY\tCONNS\tDEVICES\tUSERS\tUP\tHEARTBEAT")
		if shards {
			fmt.Fprint(tw, "\tSHARDS")
		}
		fmt.Fprintln(tw)
	}
	for _, n := range s.Nodes {
		ready := "yes"
		if n.NotReady != "" {
			ready = "no: " + n.NotReady
		}
		users := "?"
		if n.Users >= 0 {
			users = strconv.FormatInt(n.Users, 10)
		}
		up, seen := "?", "none (subscribed to its channel)"
		if !n.Started.IsZero() {
			up = s.At.Sub(n.Started).Round(time.Second).String()
		}
		if !n.Seen.IsZero() {
			seen = s.At.Sub(n.Seen).Round(100*time.Millisecond).String() + " ago"
		}
		id := n.ID
		if id == "" {
			id = "(this server)"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%d\t%s\t%s\t%s", id, orDash(n.Addr), ready, n.Connections, n.Devices, users, up, seen)
		if shards {
			fmt.Fprintf(tw, "\t%s", shardList(n.Shards))
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintln(tw, "services:")
	for _, e := range s.Services {
		state := "ok"
		if !e.OK {
			state = "FAILING"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", e.Name, e.Target, state, e.Took.Round(10*time.Microsecond), e.Detail)
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func shardList(shards []int) string {
	if shards == nil {
		return "not reported"
	}
	parts := make([]string, len(shards))
	for i, s := range shards {
		parts[i] = strconv.Itoa(s)
	}
	return fmt.Sprintf("%d: %s", len(shards), strings.Join(parts, ","))
}

// Ownership is what a node owns among the shards of the deployment
// (Cluster.Ownership; nil, no shards are shown).
type Ownership interface {
	OwnedShards() []int
}

// Heartbeats: each node records itself every heartbeatEvery; an entry not
// renewed for heartbeatTTL is a node gone.
const (
	heartbeatEvery = 2 * time.Second
	heartbeatTTL   = 5 * heartbeatEvery
)

// Inspector reads what an operator sees of a scaled-out deployment, and
// records a node's own heartbeat. Its Redis keys, under the table prefix:
//
//	nodes            sorted set: member node id, score expiry (Unix ms)
//	node:<id>:info   a node's last heartbeat (JSON NodeStatus), expiring
//
// It reads, never writes, what belongs to others: the relay's
// node:<id>:users sets (package relay), and the owners' node set and the
// leases' grace (package ownership).
type Inspector struct {
	rdb      redis.UniversalClient
	redisURL string
	db       *dynamodb.Client
	dynamoAt string
	blobs    blob.Store
	prefix   string
	// relayPrefix is the relay's: the table prefix, or relay.DefaultPrefix
	// when that is empty.
	relayPrefix string
	now         func() time.Time
}

// newInspector returns an Inspector on the deployment's clients.
func newInspector(so ScaleOut, rdb redis.UniversalClient, db *dynamodb.Client, blobs blob.Store) *Inspector {
	at := so.DynamoDBEndpoint
	if at == "" {
		at = "aws " + so.Region
	}
	relayPrefix := so.TablePrefix
	if relayPrefix == "" {
		relayPrefix = relay.DefaultPrefix
	}
	return &Inspector{rdb: rdb, redisURL: redactURL(so.RedisURL), db: db, dynamoAt: at, blobs: blobs,
		prefix: so.TablePrefix, relayPrefix: relayPrefix, now: time.Now}
}

// Inspect connects to the deployment's services to read its status (the
// status command); close lets go of them.
func (so ScaleOut) Inspect(ctx context.Context) (in *Inspector, close func() error, err error) {
	rdb, db, blobs, err := so.openServices(ctx)
	if err != nil {
		return nil, nil, err
	}
	return newInspector(so, rdb, db, blobs), rdb.Close, nil
}

// redactURL drops the password of a URL, for display.
func redactURL(raw string) string {
	i := strings.Index(raw, "://")
	at := strings.LastIndex(raw, "@")
	if i < 0 || at < i {
		return raw
	}
	return raw[:i+3] + "…@" + raw[at+1:]
}

func (in *Inspector) nodesKey() string            { return in.prefix + "nodes" }
func (in *Inspector) infoKey(node string) string  { return in.prefix + "node:" + node + ":info" }
func (in *Inspector) usersKey(node string) string { return in.relayPrefix + "node:" + node + ":users" } // relay's

// Beat records n as live for heartbeatTTL.
func (in *Inspector) Beat(ctx context.Context, n NodeStatus) error {
	b, err := json.Marshal(n)
	if err != nil {
		return err
	}
	now := in.now()
	_, err = in.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, in.infoKey(n.ID), b, heartbeatTTL)
		p.ZAdd(ctx, in.nodesKey(), redis.Z{Score: float64(now.Add(heartbeatTTL).UnixMilli()), Member: n.ID})
		p.ZRemRangeByScore(ctx, in.nodesKey(), "-inf", "("+strconv.FormatInt(now.UnixMilli(), 10))
		return nil
	})
	if err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	return nil
}

// Withdraw removes node's heartbeat: it stopped.
func (in *Inspector) Withdraw(ctx context.Context, node string) error {
	_, err := in.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRem(ctx, in.nodesKey(), node)
		p.Del(ctx, in.infoKey(node))
		return nil
	})
	return err
}

// Nodes returns the live nodes: those with a heartbeat not expired, and
// those among the owners' live nodes (a node whose heartbeat Redis lost,
// until its next one), by id.
func (in *Inspector) Nodes(ctx context.Context) ([]NodeStatus, error) {
	now := strconv.FormatInt(in.now().UnixMilli(), 10)
	ids, err := in.rdb.ZRangeByScore(ctx, in.nodesKey(), &redis.ZRangeBy{Min: "(" + now, Max: "+inf"}).Result()
	if err != nil {
		return nil, fmt.Errorf("list the nodes: %w", err)
	}
	owners, err := ownership.NewRegistry(in.rdb, in.prefix, 0).Live(ctx)
	if err != nil {
		return nil, err
	}
	live := map[string]bool{}
	for _, o := range owners {
		live[o.ID] = true
		if !slices.Contains(ids, o.ID) {
			ids = append(ids, o.ID)
		}
	}
	slices.Sort(ids)
	infos := make([]*redis.StringCmd, len(ids))
	users := make([]*redis.IntCmd, len(ids))
	_, err = in.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			infos[i] = p.Get(ctx, in.infoKey(id))
			users[i] = p.SCard(ctx, in.usersKey(id))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read the nodes: %w", err)
	}
	nodes := make([]NodeStatus, 0, len(ids))
	for i, id := range ids {
		n := NodeStatus{ID: id, Users: -1}
		if b, err := infos[i].Bytes(); err == nil {
			if err := json.Unmarshal(b, &n); err != nil || n.ID != id {
				n = NodeStatus{ID: id, Users: -1}
			}
		}
		n.Users = -1
		if c, err := users[i].Result(); err == nil {
			n.Users = c
		}
		n.Live = live[id]
		if !n.Live && n.NotReady == "" {
			// Its heartbeat has not expired, but the process no longer
			// renews its place among the owners: killed, or cut off.
			n.NotReady = "it no longer renews its place among the nodes in Redis: stopped or cut off"
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// Services checks each service the deployment shares, concurrently: Redis
// (PING), DynamoDB (DescribeTable of every table) and the blob store, if
// any (HeadBucket).
func (in *Inspector) Services(ctx context.Context) []ServiceStatus {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	checks := []func() ServiceStatus{in.checkRedis, func() ServiceStatus { return in.checkDynamoDB(ctx) }}
	if c, ok := in.blobs.(interface {
		Check(context.Context) error
		String() string
	}); ok {
		checks = append(checks, func() ServiceStatus {
			start := time.Now()
			err := c.Check(ctx)
			name := "blobs"
			if strings.HasPrefix(c.String(), "s3://") {
				name = "s3"
			}
			return serviceStatus(name, c.String(), start, "bucket answers", err)
		})
	}
	out := make([]ServiceStatus, len(checks))
	var wg sync.WaitGroup
	for i, check := range checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = check()
		}()
	}
	wg.Wait()
	return out
}

func serviceStatus(name, target string, start time.Time, detail string, err error) ServiceStatus {
	e := ServiceStatus{Name: name, Target: target, OK: err == nil, Detail: detail, Took: time.Since(start)}
	if err != nil {
		e.Detail = err.Error()
	}
	return e
}

func (in *Inspector) checkRedis() ServiceStatus {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	err := in.rdb.Ping(ctx).Err()
	detail := "PONG"
	if err == nil {
		if left, gerr := in.LeasesGrace(ctx); gerr == nil && left > 0 {
			detail += fmt.Sprintf("; leases' grace %v more after Redis lost its data", left.Round(time.Millisecond))
		}
	}
	return serviceStatus("redis", in.redisURL, start, detail, err)
}

func (in *Inspector) checkDynamoDB(ctx context.Context) ServiceStatus {
	start := time.Now()
	tables := dynamostore.TableNames(in.prefix)
	for _, table := range tables {
		out, err := in.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil {
			return serviceStatus("dynamodb", in.dynamoAt, start, "", fmt.Errorf("table %s: %w", table, err))
		}
		if status := out.Table.TableStatus; status != "ACTIVE" {
			return serviceStatus("dynamodb", in.dynamoAt, start, "", fmt.Errorf("table %s is %s", table, status))
		}
	}
	return serviceStatus("dynamodb", in.dynamoAt, start, fmt.Sprintf("%d tables %s* active", len(tables), in.prefix), nil)
}

// LeasesGrace returns what is left of the leases' grace after Redis lost
// the deployment's data (see package ownership): while it lasts no node
// takes a shard without a holder. 0 when there is none.
func (in *Inspector) LeasesGrace(ctx context.Context) (time.Duration, error) {
	return ownership.GraceLeft(ctx, in.rdb, in.prefix)
}

// Status reads the nodes and the services. A failure to list the nodes
// shows as Redis failing.
func (in *Inspector) Status(ctx context.Context) Status { return in.status(ctx, true) }

// status is Status, with the services checked or not (then only a failure
// to list the nodes shows, as Redis failing).
func (in *Inspector) status(ctx context.Context, services bool) Status {
	s := Status{At: in.now()}
	if services {
		s.Services = in.Services(ctx)
	}
	start := time.Now()
	nodes, err := in.Nodes(ctx)
	if err != nil {
		if !services {
			s.Services = []ServiceStatus{serviceStatus("redis", in.redisURL, start, "", err)}
		}
		for i := range s.Services {
			if s.Services[i].Name == "redis" && s.Services[i].OK {
				s.Services[i].OK, s.Services[i].Detail = false, err.Error()
			}
		}
	}
	s.Nodes = nodes
	return s
}

// self describes this server for its heartbeat and its /status.
func (s *Server) self() NodeStatus {
	n := NodeStatus{
		Addr:        s.addr.Load().(string),
		PID:         os.Getpid(),
		Started:     s.started,
		Seen:        time.Now(),
		Connections: s.Connections(),
		Devices:     s.hub.Count(),
		Users:       -1,
		NotReady:    s.notReady(context.Background()),
	}
	n.Host, _ = os.Hostname()
	n.ID = s.cfg.NodeID
	if c := s.cfg.Cluster; c != nil {
		n.ID = c.NodeID
		if c.Ownership != nil {
			n.Shards = c.Ownership.OwnedShards()
			if n.Shards == nil {
				n.Shards = []int{}
			}
		}
	}
	return n
}

// heartbeat records this node in Redis every heartbeatEvery until stop
// closes, then withdraws it. The first beat is done when Serve starts.
func (s *Server) heartbeat(in *Inspector, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(heartbeatEvery)
	defer tick.Stop()
	failing := false
	for {
		select {
		case <-stop:
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if err := in.Withdraw(ctx, s.cfg.Cluster.NodeID); err != nil {
				s.log.Warn("heartbeat not withdrawn; it expires", "err", err)
			}
			cancel()
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := in.Beat(ctx, s.self())
		cancel()
		if (err != nil) != failing {
			failing = err != nil
			if failing {
				s.log.Warn("heartbeat failed: imserver status may not list this node", "err", err)
			} else {
				s.log.Info("heartbeat recorded again")
			}
		}
	}
}

// Status returns what /status serves: on a node of a cluster every live
// node and the shared services, this node as it is now; on the embedded
// server this one and its database.
func (s *Server) Status(ctx context.Context) Status { return s.statusOf(ctx, true) }

// statusOf is Status, with the services checked or not (/status?services=0:
// a look at the nodes alone, cheap enough to poll).
func (s *Server) statusOf(ctx context.Context, services bool) Status {
	self := s.self()
	if c := s.cfg.Cluster; c != nil && c.Inspector != nil {
		st := c.Inspector.status(ctx, services)
		for i, n := range st.Nodes {
			if n.ID == self.ID {
				self.Users, self.Live = n.Users, n.Live
				st.Nodes[i] = self
			}
		}
		return st
	}
	st := Status{At: time.Now(), Nodes: []NodeStatus{self}}
	if services {
		start := time.Now()
		st.Services = []ServiceStatus{serviceStatus("store", s.storeName(), start, "commits", s.health())}
	}
	return st
}

// storeName names the embedded store for /status.
func (s *Server) storeName() string {
	if s.cfg.Backend != nil {
		return fmt.Sprintf("%T", s.cfg.Backend)
	}
	return "sqlite " + s.cfg.DataDir
}

// status serves Status: as text, or as JSON with ?format=json; with
// ?services=0 it leaves the services unchecked (no DynamoDB call).
func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	st := s.statusOf(r.Context(), r.URL.Query().Get("services") != "0")
	if r.URL.Query().Get("format") == "json" {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(st)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	st.WriteText(w)
}
