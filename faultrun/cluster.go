package faultrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/imcore/im/internal/tcpproxy"
	"github.com/imcore/im/server/store/dynamostore"
)

// ClusterConfig turns a run into the scaled-out one: Nodes imserver
// processes on shared DynamoDB tables and a Redis of the run's own, with
// Redis flushed and DynamoDB failing at random moments besides the kills
// and cuts.
type ClusterConfig struct {
	// DynamoDB is the endpoint of a DynamoDB client (dynalite). Required.
	DynamoDB string
	// TablePrefix names the run's tables (and Redis keys); a fresh one per
	// run. Required.
	TablePrefix string
	// Region is the region the nodes name; us-east-1 when empty.
	Region string
	// RedisServer is the redis-server binary; "" looks it up on PATH.
	RedisServer string
	// Nodes is the number of imserver processes; 2 when zero.
	Nodes int

	// Flushes and Outages are targets, like Config.Kills: FLUSHALLs of the
	// run's Redis, and outages of DynamoDB (the nodes reach it through a
	// tcpproxy.Proxy that refuses, or delays every byte, for a while).
	Flushes, Outages int
	// Joins is a target too: that many times a new node joins the cluster
	// and, after a while, a member leaves it (SIGTERM: it hands its shards
	// over); each counts once as a join and once as a leave.
	Joins int
	// Pauses is a target too: that many times a node is stopped by SIGSTOP
	// for longer than its lease (Lease and a random outage's length), then
	// resumed.
	Pauses int
	// Lease is the nodes' -lease; 5 s (imserver's default) when zero.
	Lease time.Duration
	// MinEventGap and MaxEventGap bound the random time before each flush
	// and each outage; 1 s and 5 s when zero.
	MinEventGap, MaxEventGap time.Duration
	// MinOutage and MaxOutage bound an outage's length; 0.5 s and 3 s.
	MinOutage, MaxOutage time.Duration
	// MaxLatency bounds the latency of a delaying outage; 1 s.
	MaxLatency time.Duration
}

func (c *ClusterConfig) defaults() error {
	if c.DynamoDB == "" || c.TablePrefix == "" {
		return errors.New("faultrun: Cluster.DynamoDB and Cluster.TablePrefix are required")
	}
	setDefault(&c.Region, "us-east-1")
	setDefault(&c.Nodes, 2)
	if c.Nodes < 2 {
		return fmt.Errorf("faultrun: a cluster of %d nodes: want 2 or more", c.Nodes)
	}
	setDefault(&c.MinEventGap, time.Second)
	setDefault(&c.MaxEventGap, 5*time.Second)
	setDefault(&c.MinOutage, 500*time.Millisecond)
	setDefault(&c.MaxOutage, 3*time.Second)
	setDefault(&c.MaxLatency, time.Second)
	setDefault(&c.Lease, 5*time.Second)
	c.MaxEventGap = max(c.MaxEventGap, c.MinEventGap)
	c.MaxOutage = max(c.MaxOutage, c.MinOutage)
	return nil
}

// cluster is what a cluster run adds: its Redis, the proxy in front of
// DynamoDB, and the round-robin of the probes over the nodes.
type cluster struct {
	cfg    ClusterConfig
	redis  *RedisServer
	dynamo *tcpproxy.Proxy
	env    []string // the nodes' environment: AWS credentials and region
	probes atomic.Uint64
}

// storeArgs are the store flags of every node and of migrate: DynamoDB
// through the outage proxy.
func (c *cluster) storeArgs() []string {
	return []string{
		"-store", "dynamodb",
		"-dynamodb-endpoint", "http://" + c.dynamo.Addr(),
		"-region", c.cfg.Region,
		"-table-prefix", c.cfg.TablePrefix,
	}
}

// nodeID names node i (from 1); a restart reuses it.
func nodeID(i int) string { return fmt.Sprintf("faultrun-node-%d", i) }

// setupCluster starts the run's Redis and the proxy in front of DynamoDB,
// creates the tables and starts the nodes (r.servers).
func (r *run) setupCluster(ctx context.Context) error {
	c := &cluster{cfg: *r.cfg.Cluster, env: nodeEnv(r.cfg.Cluster.Region)}
	r.cluster = c
	var err error
	if c.redis, err = StartRedis(ctx, c.cfg.RedisServer); err != nil {
		return err
	}
	if c.dynamo, err = tcpproxy.New(hostPort(c.cfg.DynamoDB)); err != nil {
		return err
	}
	if err := r.migrate(ctx); err != nil {
		return err
	}
	for i := 1; i <= c.cfg.Nodes; i++ {
		node, err := r.newClusterNode(i)
		if err != nil {
			return err
		}
		if err := node.Run(); err != nil {
			return fmt.Errorf("start %s: %w", nodeID(i), err)
		}
		r.addNode(node)
	}
	return nil
}

// newClusterNode returns node i (from 1), not started: a fresh loopback
// address and data directory, the store flags, the run's Redis and the
// node id.
func (r *run) newClusterNode(i int) (*Server, error) {
	c := r.cluster
	addr, err := FreeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	dataDir := filepath.Join(r.cfg.Dir, fmt.Sprintf("node-%d", i))
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, err
	}
	diag, pprofAddr, err := r.diagArgs()
	if err != nil {
		return nil, err
	}
	args := append(c.storeArgs(), "-redis", c.redis.URL(), "-node-id", nodeID(i), "-lease", c.cfg.Lease.String())
	node := newNode(r.cfg.ServerBinary, addr, dataDir, nodeID(i), append(args, diag...), c.env)
	node.logPath, node.pprofAddr = r.logPath(nodeID(i)), pprofAddr
	return node, nil
}

// migrate runs imserver migrate: it creates the run's tables.
func (r *run) migrate(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, r.cfg.ServerBinary, append([]string{"migrate"}, r.cluster.storeArgs()...)...)
	cmd.Env = r.cluster.env
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("imserver migrate: %v\n%s", err, out)
	}
	return nil
}

// wipeCluster, for the harness's own test, loses everything the cluster
// stored: it deletes the run's tables, flushes Redis and creates the
// tables again, empty.
func (r *run) wipeCluster(ctx context.Context) error {
	db, err := harnessDynamoDB(ctx, r.cfg.Cluster.DynamoDB, r.cfg.Cluster.Region)
	if err != nil {
		return err
	}
	if err := dropTables(ctx, db, r.cfg.Cluster.TablePrefix); err != nil {
		return err
	}
	if err := r.cluster.redis.FlushAll(ctx); err != nil {
		return err
	}
	return r.migrate(ctx)
}

// harnessDynamoDB is the harness's own client of the DynamoDB client at
// endpoint, with the credentials the nodes get (see nodeEnv) where the
// environment has none.
func harnessDynamoDB(ctx context.Context, endpoint, region string) (*dynamodb.Client, error) {
	opts := []func(*config.LoadOptions) error{config.WithRegion(region)}
	if os.Getenv("AWS_ACCESS_KEY_ID") == "" {
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(fallbackCredential, fallbackCredential, "")))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("AWS configuration: %w", err)
	}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(endpoint) }), nil
}

// fallbackCredential is the access key and secret of the nodes and the
// harness when the environment names none: a local client takes any.
const fallbackCredential = "faultrun"

// dropTables deletes the tables of prefix and waits until they are gone.
func dropTables(ctx context.Context, db *dynamodb.Client, prefix string) error {
	for _, name := range dynamostore.TableNames(prefix) {
		_, err := db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		if err != nil && !strings.Contains(err.Error(), "ResourceNotFound") {
			return fmt.Errorf("delete table %s: %w", name, err)
		}
	}
	for _, name := range dynamostore.TableNames(prefix) {
		err := waitUntil(time.Minute, "table "+name+" deleted", func() (string, error) {
			_, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
			switch {
			case err == nil:
				return name + " still exists", nil
			case strings.Contains(err.Error(), "ResourceNotFound"):
				return "", nil
			default:
				return "", fmt.Errorf("describe table %s: %w", name, err)
			}
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// teardownCluster deletes the run's tables and stops its Redis and the
// DynamoDB proxy (the nodes are stopped already).
func (r *run) teardownCluster() {
	c := r.cluster
	if c.dynamo != nil {
		c.dynamo.Close()
	}
	if c.redis != nil {
		c.redis.Stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if db, err := harnessDynamoDB(ctx, c.cfg.DynamoDB, c.cfg.Region); err == nil {
		if err := dropTables(ctx, db, c.cfg.TablePrefix); err != nil {
			r.cfg.Logf("dropping the run's tables: %v", err)
		}
	}
}

// nodeEnv is this process's environment with the AWS variables the nodes
// need set when they are missing (a local client takes any credentials).
func nodeEnv(region string) []string {
	env := os.Environ()
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": fallbackCredential, "AWS_SECRET_ACCESS_KEY": fallbackCredential, "AWS_REGION": region} {
		if os.Getenv(k) == "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// hostPort returns the host:port of an endpoint URL.
func hostPort(endpoint string) string {
	s := endpoint
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	}
	if i := strings.IndexByte(s, '/'); i >= 0 {
		s = s[:i]
	}
	return s
}

// upAddrs returns the addresses of the servers that are up.
func (r *run) upAddrs() []string {
	var addrs []string
	for _, s := range r.nodes() {
		if s.Up() {
			addrs = append(addrs, s.Addr())
		}
	}
	return addrs
}

// probeAddr returns the address a probe dials: the server, or the next
// node that is up, round-robin.
func (r *run) probeAddr() string {
	addrs := r.upAddrs()
	if r.cluster == nil || len(addrs) == 0 {
		return r.nodes()[0].Addr()
	}
	return addrs[(r.cluster.probes.Add(1)-1)%uint64(len(addrs))]
}
