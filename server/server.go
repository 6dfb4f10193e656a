// Package server is the composition root of imserver: it opens the store,
// builds the domain and the gateway, and serves /ws, /healthz, /readyz,
// /status and /metrics, and between nodes /internal/link.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/imcore/im/server/auth"
	"github.com/imcore/im/server/blob"
	"github.com/imcore/im/server/chat"
	"github.com/imcore/im/server/engine"
	"github.com/imcore/im/server/gateway"
	"github.com/imcore/im/server/hub"
	"github.com/imcore/im/server/metrics"
	"github.com/imcore/im/server/netlimit"
	"github.com/imcore/im/server/nodelink"
	"github.com/imcore/im/server/presence"
	"github.com/imcore/im/server/routing"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/server/store/sqlitestore"
)

// Auth modes.
const (
	AuthDev   = "dev"   // the hello names its user; loopback only
	AuthToken = "token" // an HMAC-signed token names the user
)

// DatabaseFile is the name of the embedded database in the data directory.
const DatabaseFile = "im.db"

// Config is everything a server needs to run.
type Config struct {
	DataDir string
	Auth    string // AuthDev or AuthToken
	// AllowRemoteDev lets a dev-auth server listen beyond loopback. Anyone
	// who can reach it can then speak as any user.
	AllowRemoteDev bool
	// Gateway holds the connection limits; gateway.DefaultConfig() when
	// left unset (MaxFrame 0).
	Gateway gateway.Config
	// Quotas bound what one user may make the server do; chat.DefaultQuotas
	// when zero.
	Quotas chat.Quotas
	// People bounds the people frames (presence, blocks, names);
	// chat.DefaultPeopleLimits when zero.
	People chat.PeopleLimits
	// PresenceInterval is the least time between two presence pushes of
	// one watched user to one connection; presence.DefaultInterval when 0.
	PresenceInterval time.Duration
	// MaxConns bounds the TCP connections held at once (0: below the
	// file-descriptor limit); MaxConnsPerIP those from one address (0: no
	// bound).
	MaxConns, MaxConnsPerIP int
	// IdleTimeout closes an HTTP connection idle between requests (not a
	// WebSocket); a minute when zero.
	IdleTimeout time.Duration
	// MaxTokenTTL refuses tokens that expire further ahead (token mode);
	// auth.DefaultMaxTTL when zero.
	MaxTokenTTL time.Duration
	Logger      *slog.Logger
	// Now is the clock for server timestamps; time.Now when nil. Tests use
	// it to move time (mute expiry) or step it back.
	Now func() time.Time
	// Backend, when set, is the storage the server runs on instead of the
	// SQLite database in DataDir (tests run the server on memstore). The
	// server closes it.
	Backend store.Backend
	// MetricsCache is how long a count /metrics reads from the store (the
	// pending rows: a scan) is served again; 10 s when zero.
	MetricsCache time.Duration
	// StoreMaxPages caps the database's size in pages (see
	// sqlitestore.Options.MaxPages); for tests of a full disk.
	StoreMaxPages int
	// NodeID names the embedded server in /status (imserver's -node-id);
	// a node of a cluster is named by Cluster.NodeID.
	NodeID string
	// Cluster, when set, makes the server one node of several sharing
	// Backend (see OpenScaledOut); nil for the embedded server.
	Cluster *Cluster
	// TokenSecretFile, when set, holds the token signing secret every
	// node shares (auth.LoadSecretFile); otherwise it is kept in DataDir.
	TokenSecretFile string
	// Blobs is the cold storage of archived message bodies, which the
	// SQLite database in DataDir reads them back from (and archives to).
	// Without it a read of an archived message fails.
	Blobs blob.Store
	// ArchiveOlderThan, when positive, has the server move the bodies of
	// messages older than it to cold storage at start and every hour
	// (when its backend is a store.Archiver).
	ArchiveOlderThan time.Duration
	// EditWindow bounds how long after it is sent a message can be edited
	// or deleted for everyone: DefaultEditWindow when zero, no bound when
	// negative.
	EditWindow time.Duration
}

// DefaultEditWindow is how long after it is sent a message can be edited
// or deleted for everyone, unless Config.EditWindow says otherwise.
const DefaultEditWindow = 48 * time.Hour

// Server is a running imserver.
type Server struct {
	cfg     Config
	log     *slog.Logger
	unlock  func()
	router  *routing.Router // runs each frame at the owner of its shard
	owners  *ownersState    // a node of several's: nil for a server alone
	be      store.Backend
	hub     *hub.Hub
	devices Devices // hub, or a registry spanning the nodes
	gw      *gateway.Gateway
	metrics *metrics.Metrics
	http    *http.Server
	ready   atomic.Bool
	readyCh chan struct{} // closed once the server first serves
	readyMu sync.Once
	failing atomic.Bool // the store's last commit hit a storage fault

	probedAt atomic.Int64 // unix ns of the last probe write /readyz made
	pending  pendingCache

	started  time.Time
	addr     atomic.Value // string: where Serve listens
	recovery recoveryState
	// stopBeats ends the heartbeat (status.go), beatsDone says it ended;
	// nil when the server records none. shutDown: none may start.
	beatsMu              sync.Mutex
	stopBeats, beatsDone chan struct{}
	shutDown             bool

	// stopArchiving ends the periodic archival (see archive.go).
	stopArchiving func()
}

// pendingCache keeps the pending-row count read for /metrics for a while:
// counting is a scan, and /metrics is anyone's to ask.
type pendingCache struct {
	mu    sync.Mutex
	at    time.Time
	value float64
}

// New locks and opens the data directory and builds a server ready to
// Serve.
func New(cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Gateway.MaxFrame == 0 {
		cfg.Gateway = gateway.DefaultConfig()
	}
	if cfg.People == (chat.PeopleLimits{}) {
		cfg.People = chat.DefaultPeopleLimits
	}
	if cfg.Quotas == (chat.Quotas{}) {
		cfg.Quotas = chat.DefaultQuotas
	}
	if cfg.MetricsCache <= 0 {
		cfg.MetricsCache = 10 * time.Second
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = time.Minute
	}
	if cfg.MaxTokenTTL <= 0 {
		cfg.MaxTokenTTL = auth.DefaultMaxTTL
	}
	if cfg.Auth == "" {
		cfg.Auth = AuthDev
	}
	if cfg.Auth != AuthDev && cfg.Auth != AuthToken {
		return nil, fmt.Errorf("unknown auth mode %q (want %q or %q)", cfg.Auth, AuthDev, AuthToken)
	}
	unlock, err := LockDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, unlock: unlock, hub: hub.New(), metrics: metrics.New(), started: time.Now(), readyCh: make(chan struct{})}
	s.addr.Store("")
	if err := s.build(); err != nil {
		if c, ok := s.devices.(interface{ Close() error }); ok {
			c.Close()
		}
		if s.router != nil {
			s.router.Close()
		} else if s.be != nil {
			s.be.Close()
		}
		if cfg.Cluster != nil && cfg.Cluster.Close != nil {
			cfg.Cluster.Close()
		}
		unlock()
		return nil, err
	}
	s.stopArchiving = s.startArchiving()
	return s, nil
}

// build opens the store and wires the domain, the gateway and the HTTP
// surface.
func (s *Server) build() error {
	cfg := s.cfg
	s.be = cfg.Backend
	if s.be == nil {
		db, err := sqlitestore.Open(filepath.Join(cfg.DataDir, DatabaseFile), sqlitestore.Options{
			MaxPages: cfg.StoreMaxPages,
			OnCommit: s.observeCommit,
			Blobs:    cfg.Blobs,
		})
		if err != nil {
			return err
		}
		s.be = db
	}
	// One path: the server runs the Router whatever the deployment. A
	// server alone owns every shard at once (routing.Solo); a node of
	// several takes its shards once it listens (startOwners), and reaches
	// the others over node links.
	engOpts := engine.Options{Now: cfg.Now, Logger: cfg.Logger, EditWindow: editWindow(cfg.EditWindow)}
	var pool *nodelink.Pool
	var linkSecret []byte
	if cfg.Cluster != nil {
		if cfg.Cluster.Owners == nil {
			return errors.New("a node of a cluster needs Cluster.Owners: each conversation and user has one owner node")
		}
		pool, linkSecret = s.buildLinks(cfg.Cluster.Owners)
	}
	router, err := routing.New(context.Background(), routing.Config{Backend: s.be, Engine: engOpts, Pool: pool, Local: s.hub, Logger: cfg.Logger})
	if err != nil {
		return err
	}
	s.router = router
	s.devices = s.hub
	if cfg.Cluster != nil {
		s.owners = &ownersState{router: router, pool: pool}
		cfg.Cluster.Ownership = s.owners
		devices, err := cfg.Cluster.Devices(s.hub, router.SendPushes, s.resync)
		if err != nil {
			return err
		}
		s.devices = devices
		if m, ok := devices.(interface{ RegisterMetrics(*metrics.Metrics) }); ok {
			m.RegisterMetrics(s.metrics)
		}
		for _, c := range cfg.Cluster.Collectors {
			s.metrics.Register(c)
		}
	} else if err := router.ServeAlone(context.Background(), routing.Solo{ID: cfg.NodeID}); err != nil {
		return err
	}
	var authn auth.Authenticator = auth.Dev{}
	if cfg.Auth == AuthToken {
		var secret []byte
		var err error
		if cfg.TokenSecretFile != "" {
			secret, err = auth.LoadSecretFile(cfg.TokenSecretFile)
		} else {
			secret, err = auth.LoadOrCreateSecret(cfg.DataDir)
		}
		if err != nil {
			return err
		}
		tokens := &auth.Tokens{Secret: secret, MaxTTL: cfg.MaxTokenTTL}
		if epochs, ok := backendAs[auth.Epochs](s.be); ok {
			tokens.Epochs = epochs
		}
		authn = tokens
	}
	s.registerRecoveryMetrics()
	if _, ok := backendAs[pendingCounter](s.be); ok {
		s.metrics.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "im_pending_deliveries",
			Help: "Pending-delivery rows: (user, conversation) pairs with messages no device of the user acknowledged.",
		}, s.pendingRows))
	}
	svc := chat.New(router.Engine(), s.devices, cfg.Gateway.Limits, cfg.Logger).WithQuotas(cfg.Quotas)
	svc.SetPeopleLimits(cfg.People)
	router.Serve(svc)
	gwCfg := cfg.Gateway
	gwCfg.MaxPresenceUsers = cfg.People.MaxPresenceUsers
	pc := presence.Config{Viewer: svc, LastSeen: router.Engine(), Interval: cfg.PresenceInterval, Now: cfg.Now, Log: cfg.Logger}
	if reg, ok := s.devices.(watchRegistry); ok && cfg.Cluster != nil {
		pc.Elsewhere = clusterPresence{watchRegistry: reg, router: router, log: cfg.Logger}
	}
	tracker := presence.New(pc)
	router.OnPresence(tracker.Told)
	gwCfg.Presence = tracker
	gwCfg.Metrics = s.metrics
	gwCfg.DevAuth = cfg.Auth == AuthDev
	s.gw = gateway.New(gwCfg, router, s.devices, authn, cfg.Logger)

	mux := http.NewServeMux()
	mux.Handle("GET /ws", s.gw)
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.HandleFunc("GET /status", s.status)
	mux.Handle("GET /metrics", s.metrics.Handler())
	if s.owners != nil {
		links := nodelink.NewServer(s.owners.router, linkSecret, cfg.Logger)
		for _, c := range links.Collectors() {
			s.metrics.Register(c)
		}
		mux.Handle("GET "+linkPath, links)
	}
	s.http = &http.Server{
		Handler: mux,
		// The hello timeout covers the upgrade: headers slower than it
		// are cut off here, and the rest of it counts from the accept.
		ReadHeaderTimeout: cfg.Gateway.HelloTimeout,
		ReadTimeout:       cfg.Gateway.HelloTimeout,
		WriteTimeout:      30 * time.Second, // /metrics and friends; a WebSocket clears it
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    32 << 10, // a WebSocket upgrade needs a few hundred bytes
		ConnContext:       gateway.ConnContext,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
	}
	return nil
}

// Serve accepts connections on ln until Shutdown. A dev-auth server refuses
// a listener beyond loopback unless AllowRemoteDev is set.
func (s *Server) Serve(ln net.Listener) error {
	if s.cfg.Auth == AuthDev && !s.cfg.AllowRemoteDev && !IsLoopback(ln.Addr()) {
		return fmt.Errorf("dev auth trusts the user named in hello, so it only listens on loopback, not %s; use -auth token, or -dev-allow-remote to accept the risk", ln.Addr())
	}
	limited := netlimit.Listen(ln, netlimit.Config{
		MaxConns:  s.cfg.MaxConns,
		MaxPerIP:  s.cfg.MaxConnsPerIP,
		Proxies:   s.cfg.Gateway.Proxies,
		Penalized: s.gw.Penalized,
		OnRefuse:  s.metrics.Refuse,
	})
	s.addr.Store(ln.Addr().String())
	if s.owners != nil {
		// The links are served while the node takes its shards: an
		// owner that takes one may have to ask others.
		errc := make(chan error, 1)
		go func() { errc <- s.http.Serve(gateway.CorkListener(limited)) }()
		if err := s.startOwners(ln); err != nil {
			s.http.Close()
			return err
		}
		s.markReady()
		s.startHeartbeat()
		s.log.Info("listening", "addr", ln.Addr().String(), "auth", s.cfg.Auth, "data", s.cfg.DataDir,
			"max_conns", limited.MaxConns(), "max_conns_per_ip", s.cfg.MaxConnsPerIP, "shards", len(s.owners.OwnedShards()))
		if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
	s.markReady()
	s.startHeartbeat()
	s.log.Info("listening", "addr", ln.Addr().String(), "auth", s.cfg.Auth, "data", s.cfg.DataDir,
		"max_conns", limited.MaxConns(), "max_conns_per_ip", s.cfg.MaxConnsPerIP)
	err := s.http.Serve(gateway.CorkListener(limited))
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// markReady says the server serves (a node of owners once it took its
// shards).
func (s *Server) markReady() {
	s.ready.Store(true)
	s.readyMu.Do(func() { close(s.readyCh) })
}

// Ready is closed once the server serves: at once for most, once a node
// of owners took its first shards.
func (s *Server) Ready() <-chan struct{} { return s.readyCh }

// Shutdown stops accepting, closes every connection with "going away",
// lets requests in flight finish and the last commits reach the disk, and
// releases the data directory.
func (s *Server) Shutdown(ctx context.Context) error {
	s.ready.Store(false)
	s.stopArchiving()
	// An owner hands its shards over first, while its clients are still
	// served (their requests go to the new owners from then on). A node
	// alone has no one to hand them to: it finishes its clients' requests
	// first, then gives its leases back for the next node to start.
	alone := s.owners != nil && s.owners.manager != nil && len(s.owners.manager.Nodes()) <= 1
	var errLeave error
	if !alone {
		errLeave = s.leaveOwners(ctx)
	}
	errHTTP := s.http.Shutdown(ctx)
	errGW := s.gw.Shutdown(ctx)
	if alone {
		errLeave = s.leaveOwners(ctx)
	}
	s.stopHeartbeat()
	var errRelay, errCluster error
	if c, ok := s.devices.(interface{ Close() error }); ok {
		errRelay = c.Close()
	}
	s.closeOwners()
	closed, errStore := closeBy(ctx, s.router.Close)
	if s.cfg.Cluster != nil && s.cfg.Cluster.Close != nil {
		errCluster = s.cfg.Cluster.Close()
	}
	if closed {
		// Still closing, the store keeps the data directory's lock
		// until the process exits.
		s.unlock()
	}
	return errors.Join(errLeave, errHTTP, errGW, errRelay, errStore, errCluster)
}

// closeBy runs closeFn until it returns or ctx ends, whichever is first:
// closing a store writes what it holds behind, and an engine that stopped
// answering (DynamoDB in an outage, each call retried) must not keep a
// node from stopping past its shutdown deadline. What is not written then
// is what a crash leaves: the next owner repairs it from the log.
func closeBy(ctx context.Context, closeFn func() error) (closed bool, err error) {
	done := make(chan error, 1)
	go func() { done <- closeFn() }()
	select {
	case err := <-done:
		return true, err
	case <-ctx.Done():
		return false, fmt.Errorf("closing the store: cut at the shutdown deadline (what it had not written is repaired from the log): %w", ctx.Err())
	}
}

// Store returns the engine of the shards this server owns, for tests and
// tools that inspect it (every shard, on a server alone).
func (s *Server) Store() chat.Engine { return s.router.Engine() }

// Backend returns the storage the server runs on.
func (s *Server) Backend() store.Backend { return s.be }

// What the server uses of a backend when it offers it.
type (
	// healthReporter reports the storage's last fault (nil while it
	// commits) and can probe it with a write.
	healthReporter interface {
		Health() error
		Probe(ctx context.Context) error
	}
	// pendingCounter counts the pending-delivery rows.
	pendingCounter interface {
		PendingCount(ctx context.Context) (int64, error)
	}
)

// resync tells the devices of users on this node to sync: pushes to them
// may have been lost (Cluster.Devices).
func (s *Server) resync(users []string) {
	// Bounded: the relay's loop waits for it, and a shutdown for the
	// loop (a user's owner that does not answer must not hold either).
	ctx, cancel := context.WithTimeout(context.Background(), resyncWait)
	defer cancel()
	s.router.Resync(ctx, users)
}

// resyncWait bounds a resync: devices not told to sync by then sync at
// their next nudge or reconnect.
const resyncWait = 10 * time.Second

// OnlineDevices returns how many devices are connected.
func (s *Server) OnlineDevices() int { return s.hub.Count() }

// observeCommit records a commit of the store in the metrics and logs the
// moments the store starts and stops failing.
func (s *Server) observeCommit(ops int, took time.Duration, err error) {
	s.metrics.ObserveCommit(ops, took, err)
	fault := s.health()
	if was := s.failing.Swap(fault != nil); was != (fault != nil) {
		if fault != nil {
			s.log.Error("the store is failing: /readyz answers 503 until a commit succeeds", "err", fault)
		} else {
			s.log.Info("the store commits again: /readyz answers 200")
		}
	}
}

// pendingRows reads the pending-delivery count for its gauge, at most
// once per MetricsCache.
func (s *Server) pendingRows() float64 {
	c := &s.pending
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < s.cfg.MetricsCache {
		return c.value
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counter, _ := backendAs[pendingCounter](s.be)
	n, err := counter.PendingCount(ctx)
	if err != nil {
		return -1
	}
	c.at, c.value = time.Now(), float64(n)
	return c.value
}

// healthz answers whether the process serves (liveness) and, on a node of
// a cluster, reaches what the nodes share.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	if !s.ready.Load() {
		http.Error(w, "starting or stopping", http.StatusServiceUnavailable)
		return
	}
	if c := s.cfg.Cluster; c != nil && c.Check != nil {
		if err := c.Check(r.Context()); err != nil {
			http.Error(w, "unreachable: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain")
	fmt.Fprintln(w, "ok")
}

// readyz answers whether the server can take traffic: serving, its store
// committing and, on a node of a cluster, reaching Redis (see
// recovery.go).
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if why := s.notReady(r.Context()); why != "" {
		http.Error(w, why, http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	fmt.Fprintln(w, "ready")
}

// notReady says why the server cannot take traffic now, "" when it can.
func (s *Server) notReady(ctx context.Context) string {
	if !s.ready.Load() {
		return "starting or stopping"
	}
	if err := s.storeHealth(); err != nil {
		return "the store is failing: " + err.Error()
	}
	if why := s.recovering(ctx).why; why != "" {
		return why
	}
	return ""
}

// probeEvery bounds how often /readyz makes a probe write.
const probeEvery = time.Second

// storeHealth returns the store's fault, nil when it commits. A failing
// store is probed with a small write (at most once per probeEvery): once a
// load balancer stops sending traffic, nothing else would commit, and a
// store that recovered (space freed on the disk) would stay unready.
func (s *Server) storeHealth() error {
	h, ok := backendAs[healthReporter](s.be)
	if !ok || h.Health() == nil {
		return nil
	}
	now := time.Now().UnixNano()
	if last := s.probedAt.Load(); now-last >= int64(probeEvery) && s.probedAt.CompareAndSwap(last, now) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		h.Probe(ctx)
		cancel()
	}
	return h.Health()
}

// health is the storage's last fault, nil when it commits or cannot say.
func (s *Server) health() error {
	if h, ok := backendAs[healthReporter](s.be); ok {
		return h.Health()
	}
	return nil
}

// IsLoopback reports whether addr is a loopback address.
func IsLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// editWindow is the engine's edit window for Config.EditWindow w.
func editWindow(w time.Duration) time.Duration {
	switch {
	case w == 0:
		return DefaultEditWindow
	case w < 0:
		return 0
	}
	return w
}
