package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"golang.org/x/time/rate"

	"github.com/imcore/im/server"
	"github.com/imcore/im/server/chat"
	"github.com/imcore/im/server/clientaddr"
	"github.com/imcore/im/server/gateway"
	"github.com/imcore/im/server/ownership"
	"github.com/imcore/im/server/presence"
	"github.com/imcore/im/server/relay"
)

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:7070", "address to listen on")
	dataDir := fs.String("data", defaultDataDir(), "data directory (database, token secret)")
	authMode := fs.String("auth", server.AuthDev, `"dev" (the hello names the user; loopback only) or "token"`)
	allowRemote := fs.Bool("dev-allow-remote", false, "let a dev-auth server listen beyond loopback (anyone reaching it can act as any user)")
	pprofAddr := fs.String("pprof", "", "serve Go's profiler (net/http/pprof) on this address, e.g. 127.0.0.1:6060 (off when empty)")
	cfg := server.Config{Gateway: gateway.DefaultConfig(), Quotas: chat.DefaultQuotas}
	gw := &cfg.Gateway
	fs.Int64Var(&gw.MaxFrame, "max-frame", gw.MaxFrame, "largest frame in bytes; larger closes the connection with 1009")
	fs.Int64Var(&gw.MaxHelloFrame, "max-hello-frame", gw.MaxHelloFrame, "largest frame in bytes before the hello; larger closes with 1009")
	fs.IntVar(&gw.Limits.MaxBody, "max-body", gw.Limits.MaxBody, "largest message body in bytes")
	fs.IntVar(&gw.Limits.MaxGroupSize, "max-group-size", gw.Limits.MaxGroupSize, "most members a group may have, its creator included")
	fs.IntVar(&gw.Limits.MaxTitle, "max-title", gw.Limits.MaxTitle, "longest group title in characters")
	fs.IntVar(&gw.Limits.MaxPageBytes, "max-page-bytes", gw.Limits.MaxPageBytes, "byte budget of one page of history, sync or receipts; has_more says the rest follows")
	fs.IntVar(&gw.QueueLen, "queue", gw.QueueLen, "frames queued per connection; a push that finds no room disconnects the slow client")
	fs.IntVar(&gw.QueueBytes, "queue-bytes", gw.QueueBytes, "bytes queued per connection; likewise")
	rateLimit := fs.Float64("rate", float64(gw.RateLimit), "frames per second one user may send, all its connections together")
	fs.IntVar(&gw.RateBurst, "rate-burst", gw.RateBurst, "frames one user may send in a burst")
	fs.DurationVar(&gw.RateWait, "rate-wait", gw.RateWait, "how long a frame over the rate is held back before it is answered rate_limited")
	fs.IntVar(&gw.RejectBurst, "reject-burst", gw.RejectBurst, "rate_limited answers beyond the rate a connection may get before it is closed for ignoring them")
	preHelloRate := fs.Float64("prehello-rate", float64(gw.PreHelloRate), "failed frames per second before hello one IP address may send (malformed, or a refused hello)")
	fs.IntVar(&gw.PreHelloBurst, "prehello-burst", gw.PreHelloBurst, "failed frames before hello one IP address may send in a burst")
	fs.IntVar(&gw.PreHelloFrames, "prehello-frames", gw.PreHelloFrames, "frames one connection may send before a valid hello, the hello included")
	fs.DurationVar(&gw.HelloTimeout, "hello-timeout", gw.HelloTimeout, "time from the TCP accept to a valid hello, the WebSocket upgrade included")
	fs.DurationVar(&gw.PingInterval, "ping-interval", gw.PingInterval, "how often the server pings each connection")
	fs.DurationVar(&gw.PongWait, "pong-wait", gw.PongWait, "silence after which a connection is dropped")
	fs.DurationVar(&gw.WriteTimeout, "write-timeout", gw.WriteTimeout, "time one batch of writes to a connection may take")
	shutdownGrace := fs.Duration("shutdown-grace", 15*time.Second, "how long a graceful shutdown (SIGINT, SIGTERM) may take")
	fs.IntVar(&gw.MaxConnsPerUser, "max-conns-per-user", gw.MaxConnsPerUser, "connections one user may hold (0: no bound)")
	fs.IntVar(&gw.MaxHandshakes, "max-handshakes", gw.MaxHandshakes, "connections between their upgrade and their hello (0: no bound)")
	fs.IntVar(&gw.MaxHandshakesPerIP, "max-handshakes-per-ip", gw.MaxHandshakesPerIP, "connections of one address between their upgrade and their hello (0: no bound)")
	fs.IntVar(&cfg.MaxConnsPerIP, "max-conns-per-ip", 1000, "TCP connections one IP address may hold (0: no bound)")
	fs.IntVar(&cfg.MaxConns, "max-conns", 0, "TCP connections held at once (0: the file-descriptor limit less a reserve)")
	fs.DurationVar(&cfg.IdleTimeout, "idle-timeout", time.Minute, "closes an HTTP connection idle between requests (not a WebSocket)")
	fs.IntVar(&cfg.Quotas.GroupCreates, "group-creates", cfg.Quotas.GroupCreates, "groups one user may create per hour (0: no bound)")
	fs.IntVar(&cfg.Quotas.GroupChanges, "group-changes", cfg.Quotas.GroupChanges, "group members one user may add or remove per hour, creations included; a rename counts one (0: no bound)")
	cfg.People = chat.DefaultPeopleLimits
	fs.IntVar(&cfg.People.MaxPresenceUsers, "presence-users", cfg.People.MaxPresenceUsers, "most users one presence request may ask for (and watch)")
	fs.IntVar(&cfg.People.MaxBlocked, "max-blocked", cfg.People.MaxBlocked, "most users one user may block")
	fs.IntVar(&cfg.People.MaxName, "max-name", cfg.People.MaxName, "longest display name in characters")
	fs.DurationVar(&cfg.PresenceInterval, "presence-interval", presence.DefaultInterval, "least time between two presence pushes of one watched user to one connection (the last change always follows)")
	fs.DurationVar(&cfg.Quotas.TypingInterval, "typing-interval", cfg.Quotas.TypingInterval, "least time between two typing indicators of a user in a conversation that are relayed (0: all)")
	fs.DurationVar(&cfg.MaxTokenTTL, "max-token-ttl", 30*24*time.Hour, "tokens expiring further ahead are refused (token auth)")
	editWindow := fs.Duration("edit-window", server.DefaultEditWindow, "how long after it is sent a message can be edited or deleted for everyone (0: no bound)")
	proxies := fs.String("trusted-proxies", "", `comma-separated addresses or networks of reverse proxies (e.g. "10.0.0.0/8"): limits per address count the client each forwards for (X-Forwarded-For)`)
	origins := fs.String("allowed-origins", "", `comma-separated web origins (e.g. "https://app.example.com", or "*") allowed to open a WebSocket besides the server's own host`)
	storage := addStoreFlags(fs)
	redisURL := fs.String("redis", "", "Redis URL of the scaled-out deployment (redis://[user:pass@]host:port/db, rediss:// for TLS); -store dynamodb needs it")
	coordination := fs.String("coordination", "owners", `how the nodes of the scaled-out deployment share the work: "owners", the only way (each conversation and user has one owner node, others forward to it; docs/SCALING.md); accepted for the command lines that name it`)
	lease := fs.Duration("lease", ownership.DefaultLeaseTTL, "how long a node's hold on its conversations lasts unless renewed (scaled out): a node that dies or freezes gives them to the others after it, and a request waits on a silent node no longer")
	advertise := fs.String("advertise", "", "host:port the other nodes reach this one at for forwarded requests (empty: the -listen address, which must then not be a wildcard)")
	nodeID := fs.String("node-id", "", "this node's name in presence and in every log line (node=), unique per process (empty: host name, process id and a random suffix; the embedded server then logs no node); a node restarted with the same id takes over its presence")
	fs.StringVar(&cfg.TokenSecretFile, "token-secret-file", "", "file holding the token signing secret every node shares (hex; -auth token); empty: kept in the data directory")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	logFormat := fs.String("log-format", "text", "text or json")
	archiving := addServeArchiving(fs, storage.blobs)
	fs.Usage = flagUsage(fs, "imserver [serve] [flags]")
	if err := parseFlags(fs, args); err != nil {
		if err == flag.ErrHelp {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var err error
	gw.RateLimit = rate.Limit(*rateLimit)
	gw.PreHelloRate = rate.Limit(*preHelloRate)
	gw.AllowedOrigins = splitList(*origins)
	if gw.Proxies, err = clientaddr.ParseProxies(splitList(*proxies)); err != nil {
		return fmt.Errorf("-trusted-proxies: %w", err)
	}
	if err := checkLimits(&cfg); err != nil {
		return err
	}
	if *shutdownGrace <= 0 {
		return fmt.Errorf("-shutdown-grace must be positive")
	}
	if *lease < minLease {
		return fmt.Errorf("-lease must be at least %v (the nodes renew it five times per lease)", minLease)
	}
	switch {
	case *editWindow < 0:
		return fmt.Errorf("-edit-window cannot be negative")
	case *editWindow == 0:
		cfg.EditWindow = -1 // no bound
	default:
		cfg.EditWindow = *editWindow
	}
	logger, err := newLogger(*logLevel, *logFormat)
	if err != nil {
		return err
	}
	if err := storage.check(); err != nil {
		return err
	}
	if err := checkCoordination(*coordination); err != nil {
		return err
	}
	// Every line a node logs names it: the lines of several nodes end up
	// side by side. A node of the scaled-out deployment always has an id
	// (a made-up one when -node-id is empty); the embedded server is the
	// only one of its kind, and names itself only when given -node-id.
	if storage.scaledOut() && *nodeID == "" {
		*nodeID = relay.DefaultNodeID()
	}
	logger = server.WithNode(logger, *nodeID)
	cfg.DataDir, cfg.Auth, cfg.AllowRemoteDev, cfg.Logger, cfg.NodeID = *dataDir, *authMode, *allowRemote, logger, *nodeID
	if storage.scaledOut() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		so := storage.scaleOut(*redisURL, *nodeID)
		so.Advertise, so.LeaseTTL = *advertise, *lease
		cfg.Backend, cfg.Cluster, err = server.OpenScaledOut(ctx, so, logger)
		cancel()
		if err != nil {
			return err
		}
	}
	if err := archiving.configure(context.Background(), &cfg, *dataDir, storage); err != nil {
		return err
	}
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		srv.Shutdown(context.Background())
		return err
	}
	if *pprofAddr != "" {
		if err := servePprof(*pprofAddr, logger); err != nil {
			ln.Close()
			srv.Shutdown(context.Background())
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		srv.Shutdown(context.Background())
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), *shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("stopped")
	return nil
}

// minLease is the shortest -lease: renewed five times per lease, a
// shorter one would be spent on Redis round trips.
const minLease = 500 * time.Millisecond

// checkLimits refuses limits that cannot work.
func checkLimits(cfg *server.Config) error {
	gw := cfg.Gateway
	positive := map[string]int64{
		"-max-body": int64(gw.Limits.MaxBody), "-max-group-size": int64(gw.Limits.MaxGroupSize),
		"-max-title": int64(gw.Limits.MaxTitle), "-max-page-bytes": int64(gw.Limits.MaxPageBytes),
		"-max-frame": gw.MaxFrame, "-max-hello-frame": gw.MaxHelloFrame,
		"-queue": int64(gw.QueueLen), "-queue-bytes": int64(gw.QueueBytes),
		"-rate-burst": int64(gw.RateBurst), "-prehello-frames": int64(gw.PreHelloFrames),
		"-prehello-burst": int64(gw.PreHelloBurst),
		"-hello-timeout":  int64(gw.HelloTimeout), "-max-token-ttl": int64(cfg.MaxTokenTTL),
		"-idle-timeout": int64(cfg.IdleTimeout), "-ping-interval": int64(gw.PingInterval),
		"-pong-wait": int64(gw.PongWait), "-write-timeout": int64(gw.WriteTimeout),
		"-reject-burst":   int64(gw.RejectBurst),
		"-presence-users": int64(cfg.People.MaxPresenceUsers), "-max-blocked": int64(cfg.People.MaxBlocked),
		"-max-name": int64(cfg.People.MaxName), "-presence-interval": int64(cfg.PresenceInterval),
	}
	for name, v := range positive {
		if v < 1 {
			return fmt.Errorf("%s must be positive", name)
		}
	}
	nonNegative := map[string]int64{
		"-max-conns": int64(cfg.MaxConns), "-max-conns-per-ip": int64(cfg.MaxConnsPerIP),
		"-max-conns-per-user": int64(gw.MaxConnsPerUser), "-max-handshakes": int64(gw.MaxHandshakes),
		"-group-creates": int64(cfg.Quotas.GroupCreates), "-group-changes": int64(cfg.Quotas.GroupChanges),
		"-typing-interval": int64(cfg.Quotas.TypingInterval), "-rate-wait": int64(gw.RateWait),
		"-max-handshakes-per-ip": int64(gw.MaxHandshakesPerIP),
	}
	for name, v := range nonNegative {
		if v < 0 {
			return fmt.Errorf("%s cannot be negative", name)
		}
	}
	if gw.RateLimit <= 0 || gw.PreHelloRate <= 0 {
		return fmt.Errorf("-rate and -prehello-rate must be positive")
	}
	return nil
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// servePprof serves Go's profiler on addr, on a mux of its own.
func servePprof(addr string, logger *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("-pprof %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	logger.Info("profiler listening", "addr", ln.Addr().String())
	go func() {
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		if err := srv.Serve(ln); err != nil {
			logger.Error("profiler stopped", "err", err)
		}
	}()
	return nil
}

func newLogger(level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("-log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("-log-format %q: want text or json", format)
}

// checkCoordination accepts -coordination owners, the only way the nodes
// share the work since the Redis lock per operation was removed
// (docs/SCALING.md, step 4); scripts written when there was a choice keep
// running.
func checkCoordination(v string) error {
	switch v {
	case "owners":
		return nil
	case "locks":
		return errors.New(`-coordination locks: the locked path (a Redis lock per operation) was removed; the nodes run with owners (drop the flag, or say -coordination owners)`)
	default:
		return fmt.Errorf(`-coordination %q: want "owners" (the only way left)`, v)
	}
}
